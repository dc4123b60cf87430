package lsp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// LSP 3.17's lifecycle: requests before initialize fail with
// ServerNotInitialized and notifications are dropped; initialize is answered
// once; after shutdown every request fails with InvalidRequest; exit ends
// the session, cleanly only after shutdown.
func TestLifecycle(t *testing.T) {
	c := start(t, Options{}, nil)
	if e := c.callErr("textDocument/hover", pos(validURI, Position{}), nil); e == nil || e.Code != codeServerNotInitialized {
		t.Errorf("hover before initialize: %v, want %d", e, codeServerNotInitialized)
	}
	c.open(validURI, fixture(t, "valid.nika.yaml")) // dropped: not initialized
	c.initialize()
	if e := c.callErr("initialize", map[string]any{}, nil); e == nil || e.Code != codeInvalidRequest {
		t.Errorf("a second initialize: %v, want %d", e, codeInvalidRequest)
	}
	var h *hover
	c.call("textDocument/hover", pos(validURI, Position{}), &h)
	if h != nil {
		t.Errorf("hover on a document opened before initialize: %+v, want null (it was never opened)", h)
	}
	if e := c.callErr("workspace/symbol", map[string]any{"query": ""}, nil); e == nil || e.Code != codeMethodNotFound {
		t.Errorf("an unknown method: %v, want %d", e, codeMethodNotFound)
	}
	c.notify("$/cancelRequest", map[string]any{"id": 99}) // ignored
	c.notify("$/setTrace", map[string]any{"value": "off"})
	c.call("shutdown", nil, nil)
	if e := c.callErr("textDocument/hover", pos(validURI, Position{}), nil); e == nil || e.Code != codeInvalidRequest {
		t.Errorf("hover after shutdown: %v, want %d", e, codeInvalidRequest)
	}
	c.notify("exit", nil)
	if err := c.exitErr(); err != nil {
		t.Errorf("exit after shutdown: %v, want nil", err)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := start(t, Options{}, nil)
	c.initialize()
	c.notify("exit", nil)
	if err := c.exitErr(); !errors.Is(err, ErrNoShutdown) {
		t.Errorf("exit without shutdown: %v, want ErrNoShutdown", err)
	}
}

func TestEndOfInput(t *testing.T) {
	c := start(t, Options{}, nil)
	c.initialize()
	c.in.Close()
	if err := c.exitErr(); !errors.Is(err, ErrNoShutdown) {
		t.Errorf("end of input before shutdown: %v, want ErrNoShutdown", err)
	}
	c = start(t, Options{}, nil)
	c.initialize()
	c.call("shutdown", nil, nil)
	c.in.Close()
	if err := c.exitErr(); err != nil {
		t.Errorf("end of input after shutdown: %v, want nil", err)
	}
}

// A body that is not JSON is answered with a parse error and the session
// goes on; a header without Content-Length ends it with an error.
func TestBadInput(t *testing.T) {
	var log bytes.Buffer
	c := start(t, Options{Log: &log}, nil)
	c.initialize()
	fmt.Fprintf(c.in, "Content-Length: 5\r\n\r\n{nope")
	m := c.await(func(m rawMessage) bool { return m.Error != nil }, "the parse error")
	if m.Error.Code != codeParseError || string(m.ID) != "null" {
		t.Errorf("answer %+v (id %s), want a parse error with id null", m.Error, m.ID)
	}
	var h *hover
	c.call("textDocument/hover", pos(validURI, Position{}), &h) // still serving
	fmt.Fprintf(c.in, "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n")
	if err := c.exitErr(); err == nil || !errors.Is(err, errFraming) {
		t.Errorf("a header without Content-Length: %v, want a framing error", err)
	}
	if !strings.Contains(log.String(), "not JSON") {
		t.Errorf("log %q, want a line about the body that is not JSON", log.String())
	}
}

func TestReadMessage(t *testing.T) {
	in := "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}" +
		"content-length:3\r\n\r\n[1]"
	r := bufio.NewReader(strings.NewReader(in))
	for _, want := range []string{"{}", "[1]"} {
		b, err := readMessage(r)
		if err != nil || string(b) != want {
			t.Fatalf("readMessage = %q, %v; want %q", b, err, want)
		}
	}
	if _, err := readMessage(r); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
	for _, bad := range []string{
		"Content-Length: x\r\n\r\n",
		"Content-Length: 99999999999\r\n\r\n",
		"Content-Length: 10\r\n\r\n{}",
		"no colon\r\n\r\n",
		"Content-Length: 2\r\n",
	} {
		if _, err := readMessage(bufio.NewReader(strings.NewReader(bad))); !errors.Is(err, errFraming) {
			t.Errorf("readMessage(%q) = %v, want a framing error", bad, err)
		}
	}
}
