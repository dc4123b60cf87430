package lsp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait of the test client, so a server that never
// answers fails the test instead of hanging it. It is a safety net, not a
// timing assertion: nothing here depends on how fast the server is.
const waitLimit = 60 * time.Second

// client is an LSP client over a real stdio-like connection: two io.Pipes,
// the server's Serve on one goroutine, a reader of its output on another.
type client struct {
	t       testing.TB
	in      *io.PipeWriter // what the server reads
	msgs    chan rawMessage
	served  chan error
	nextID  int
	pending []rawMessage // notifications read while waiting for something else
}

type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// start runs a server (configured by setup, which may set test hooks)
// behind pipes and returns its client. At cleanup the client makes sure the
// server ended and its output was read to the end.
func start(t testing.TB, opts Options, setup func(*server)) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := newServer(outW, opts)
	if setup != nil {
		setup(s)
	}
	c := &client{t: t, in: inW, msgs: make(chan rawMessage, 64), served: make(chan error, 1)}
	go func() {
		err := serve(s, inR)
		inR.Close()
		outW.Close()
		c.served <- err
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.msgs)
		r := bufio.NewReader(outR)
		for {
			body, err := readMessage(r)
			if err != nil {
				return
			}
			var m rawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("the server wrote a body that is not JSON: %v: %s", err, body)
				return
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range c.msgs { // drain, so the server's writer can finish
		}
		<-readDone
	})
	return c
}

func (c *client) write(v any) {
	c.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request and waits for its response; it fails the test on an
// error response.
func (c *client) call(method string, params, result any) {
	c.t.Helper()
	if rerr := c.callErr(method, params, result); rerr != nil {
		c.t.Fatalf("%s: error response %v", method, rerr)
	}
}

func (c *client) callErr(method string, params, result any) *rpcError {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	m := c.await(func(m rawMessage) bool { return m.Method == "" && string(m.ID) == fmt.Sprint(id) }, method)
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
	return nil
}

// await returns the first message (pending ones first) that match accepts;
// the others stay pending.
func (c *client) await(match func(rawMessage) bool, what string) rawMessage {
	c.t.Helper()
	for i, m := range c.pending {
		if match(m) {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return m
		}
	}
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("the server closed its output while the test waited for %s", what)
			}
			if match(m) {
				return m
			}
			c.pending = append(c.pending, m)
		case <-deadline.C:
			c.t.Fatalf("no %s from the server", what)
		}
	}
}

// diagnostics waits for the publication of a document version. Older
// versions published meanwhile are dropped (each was current when the
// server queued it); a newer one than asked for fails the test.
func (c *client) diagnostics(uri string, version int32) publishDiagnosticsParams {
	c.t.Helper()
	var p publishDiagnosticsParams
	match := func(m rawMessage) bool {
		var q publishDiagnosticsParams
		if m.Method != "textDocument/publishDiagnostics" || json.Unmarshal(m.Params, &q) != nil || q.URI != uri {
			return false
		}
		switch {
		case q.Version == nil:
			return false
		case *q.Version > version:
			c.t.Errorf("diagnostics of version %d arrived while the test waited for version %d", *q.Version, version)
		case *q.Version == version:
			p = q
			return true
		}
		return false
	}
	kept := c.pending[:0]
	for _, m := range c.pending { // drop older publications of uri
		var q publishDiagnosticsParams
		if m.Method == "textDocument/publishDiagnostics" && json.Unmarshal(m.Params, &q) == nil && q.URI == uri && q.Version != nil && *q.Version < version {
			continue
		}
		kept = append(kept, m)
	}
	c.pending = kept
	c.await(match, fmt.Sprintf("diagnostics of %s version %d", uri, version))
	kept = c.pending[:0]
	for _, m := range c.pending {
		var q publishDiagnosticsParams
		if m.Method == "textDocument/publishDiagnostics" && json.Unmarshal(m.Params, &q) == nil && q.URI == uri && q.Version != nil && *q.Version < version {
			continue
		}
		kept = append(kept, m)
	}
	c.pending = kept
	return p
}

func (c *client) initialize() {
	c.t.Helper()
	var res struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	c.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &res)
	if res.Capabilities["positionEncoding"] != "utf-16" {
		c.t.Errorf("positionEncoding = %v, want utf-16", res.Capabilities["positionEncoding"])
	}
	c.notify("initialized", map[string]any{})
}

func (c *client) open(uri, text string) {
	c.t.Helper()
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
}

func (c *client) change(uri string, version int32, changes ...contentChange) {
	c.t.Helper()
	c.notify("textDocument/didChange", map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": version}, "contentChanges": changes})
}

// shutdown ends the session the way LSP says and requires a clean exit.
func (c *client) shutdown() {
	c.t.Helper()
	var res json.RawMessage
	c.call("shutdown", nil, &res)
	if string(res) != "null" {
		c.t.Errorf("shutdown result %s, want null", res)
	}
	c.notify("exit", nil)
	if err := c.exitErr(); err != nil {
		c.t.Errorf("Serve after shutdown and exit: %v, want nil", err)
	}
}

func (c *client) exitErr() error {
	c.t.Helper()
	select {
	case err := <-c.served:
		return err
	case <-time.After(waitLimit):
		c.t.Fatal("the server did not end")
		return errors.New("unreachable")
	}
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// at is the LSP position of the first occurrence of needle in text (plus
// shift bytes), computed independently of the server: lines split on LF,
// characters counted in UTF-16 units.
func at(t testing.TB, text, needle string, shift int) Position {
	t.Helper()
	i := strings.Index(text, needle)
	if i < 0 {
		t.Fatalf("%q is not in the text", needle)
	}
	return utf16At(text, i+shift)
}

func utf16At(text string, off int) Position {
	line := strings.Count(text[:off], "\n")
	start := strings.LastIndex(text[:off], "\n") + 1
	n := 0
	for _, r := range text[start:off] {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return Position{Line: line, Character: n}
}
