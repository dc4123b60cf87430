package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// echoDir holds the test build of testdata/echoserver (subprocess_test.go), removed by TestMain.
var echoDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if echoDir != "" {
		os.RemoveAll(echoDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// memServer is an in-memory MCP server behind a Dial: every start connects a fresh session of
// the same sdk.Server, and counts.
type memServer struct {
	srv    *sdk.Server
	starts atomic.Int32
	calls  atomic.Int32 // calls of the "echo" tool that reached the server
	// hold, when non-nil, blocks every Dial until it is closed.
	hold chan struct{}
	// fail, when set, makes Dial fail.
	fail error

	mu    sync.Mutex
	conns []sdk.Connection // the server ends of the sessions
}

func (m *memServer) dial(ctx context.Context, name string, _ Server) (sdk.Transport, error) {
	m.starts.Add(1)
	if m.hold != nil {
		select {
		case <-m.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.fail != nil {
		return nil, m.fail
	}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, &cutTransport{inner: st, m: m}, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// cut drops the server end of every session at once, with no goodbye: the server "dies".
func (m *memServer) cut() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conns {
		c.Close()
	}
	m.conns = nil
}

// cutTransport records the server end of a session so that cut can drop it.
type cutTransport struct {
	inner sdk.Transport
	m     *memServer
}

func (t *cutTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err == nil {
		t.m.mu.Lock()
		t.m.conns = append(t.m.conns, c)
		t.m.mu.Unlock()
	}
	return c, err
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// newMemServer builds the test server. pageSize > 0 paginates tools/list.
func newMemServer(t *testing.T, pageSize int) *memServer {
	t.Helper()
	m := &memServer{}
	m.srv = sdk.NewServer(&sdk.Implementation{Name: "mem", Version: "v1"}, &sdk.ServerOptions{PageSize: pageSize})
	add := func(name string, schema json.RawMessage, h sdk.ToolHandler) {
		m.srv.AddTool(&sdk.Tool{Name: name, Description: "the " + name + " tool", InputSchema: schema}, h)
	}
	add("echo", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["text"]}`),
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			m.calls.Add(1)
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text(in.Text), nil
		})
	add("structured", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ignored"}},
			StructuredContent: map[string]any{"n": 3, "ratio": 2.5, "tags": []any{"a", "b"}}}, nil
	})
	add("multi", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "first"}, &sdk.TextContent{Text: "second"}}}, nil
	})
	add("mixed", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a chart"},
			&sdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}}}, nil
	})
	add("empty", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{}}, nil
	})
	add("fail", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full\nfree some space"}}}, nil
	})
	add("refuse", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, errors.New("refused by policy")
	})
	add("block", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		<-ctx.Done()
		return text("woke"), nil
	})
	add("die", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		m.cut() // the server goes away mid-call, before it answers
		return nil, errors.New("unreachable: the connection is gone")
	})
	add("bad.name", objectSchema, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("unreachable"), nil
	})
	return m
}

func memRegistry(names ...string) *Registry {
	r := &Registry{path: "test-registry.json", servers: map[string]Server{}, invalid: map[string]string{}}
	for _, n := range names {
		r.servers[n] = Server{Command: "in-memory"}
	}
	return r
}

func newMemClient(t *testing.T, m *memServer, reg *Registry) *Client {
	t.Helper()
	c := NewClient(reg, Options{Dial: m.dial})
	t.Cleanup(func() { c.Close() })
	return c
}

// asError asserts err is a *spec.Error with the code, and returns it.
func asError(t *testing.T, err error, code string) *spec.Error {
	t.Helper()
	var se *spec.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a *spec.Error %s", err, err, code)
	}
	if se.Code != code {
		t.Fatalf("code = %s (%s), want %s", se.Code, se.Message, code)
	}
	return se
}

func TestOutputRule(t *testing.T) {
	m := newMemServer(t, 0)
	c := newMemClient(t, m, memRegistry("mem"))
	ctx := context.Background()
	cases := []struct {
		tool string
		args map[string]any
		want any
	}{
		{"echo", map[string]any{"text": "hi"}, "hi"},
		{"structured", nil, map[string]any{"n": 3, "ratio": 2.5, "tags": []any{"a", "b"}}},
		{"multi", nil, "first\nsecond"},
		{"mixed", nil, []any{
			map[string]any{"type": "text", "text": "a chart"},
			map[string]any{"type": "image", "data": "UE5H", "mimeType": "image/png"},
		}},
		{"empty", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			got, err := c.Call(ctx, "mcp:mem/"+tc.tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("output = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	m := newMemServer(t, 0)
	reg := memRegistry("mem", "down")
	reg.invalid["nocmd"] = "its entry has no `command`"
	down := &memServer{fail: errors.New("connection refused")}
	c := NewClient(reg, Options{Dial: func(ctx context.Context, name string, s Server) (sdk.Transport, error) {
		if name == "down" {
			return down.dial(ctx, name, s)
		}
		return m.dial(ctx, name, s)
	}})
	defer c.Close()
	ctx := context.Background()
	cases := []struct {
		name      string
		tool      string
		args      map[string]any
		code      string
		transient bool
		message   string // a substring
		details   map[string]any
	}{
		{name: "unregistered server", tool: "mcp:github/search", code: CodeUnknown,
			message: `MCP server "github" is not registered in test-registry.json — register it there, or use one of: down, mem, nocmd`,
			details: map[string]any{"tool": "mcp:github/search", "server": "github"}},
		{name: "unlisted tool", tool: "mcp:mem/ech", code: CodeUnknown,
			message: `MCP server "mem" lists no tool "ech" — use one it lists: block, die, echo, empty, fail, mixed, multi, refuse, structured`},
		{name: "a listed name that nika cannot name", tool: "mcp:mem/bad.name", code: CodeUnknown, message: `lists no tool "bad.name"`},
		{name: "malformed name", tool: "mcp:mem", code: CodeUnknown, message: "an MCP tool is named mcp:<server>/<tool>"},
		{name: "missing required argument", tool: "mcp:mem/echo", args: map[string]any{}, code: CodeArgs,
			message: "invalid arguments for mcp:mem/echo: missing property 'text'",
			details: map[string]any{"tool": "mcp:mem/echo", "violations": []any{map[string]any{"path": "", "message": "missing property 'text'"}}}},
		{name: "argument of the wrong type", tool: "mcp:mem/echo", args: map[string]any{"text": 5, "n": -1}, code: CodeArgs,
			message: "invalid arguments for mcp:mem/echo: at /n:"},
		{name: "isError result", tool: "mcp:mem/fail", code: CodeToolError, message: "disk full free some space",
			details: map[string]any{"tool": "mcp:mem/fail", "text": "disk full\nfree some space"}},
		{name: "JSON-RPC error answer", tool: "mcp:mem/refuse", code: CodeToolError, message: "mcp:mem/refuse failed: refused by policy"},
		{name: "server not configured", tool: "mcp:nocmd/x", code: CodeUnavailable, transient: false,
			message: "MCP server \"nocmd\" is not configured: its entry has no `command` — fix its entry in test-registry.json"},
		{name: "server cannot start", tool: "mcp:down/x", code: CodeUnavailable, transient: true,
			message: `MCP server "down" could not start: connection refused`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Call(ctx, tc.tool, tc.args)
			se := asError(t, err, tc.code)
			if se.Transient != tc.transient {
				t.Errorf("transient = %v, want %v", se.Transient, tc.transient)
			}
			if !strings.Contains(se.Message, tc.message) {
				t.Errorf("message = %q, want it to contain %q", se.Message, tc.message)
			}
			for k, v := range tc.details {
				if !reflect.DeepEqual(se.Details[k], v) {
					t.Errorf("details[%s] = %#v, want %#v", k, se.Details[k], v)
				}
			}
		})
	}
	if n := m.calls.Load(); n != 0 {
		t.Errorf("the echo tool ran %d times; arguments failing the schema must never reach the server", n)
	}
	if _, err := c.Call(ctx, "mcp:mem/echo", map[string]any{"text": "ok", "n": 2}); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	if n := m.calls.Load(); n != 1 {
		t.Errorf("echo ran %d times, want 1", n)
	}
}

func TestListAllPagesSorted(t *testing.T) {
	for _, page := range []int{0, 1, 2, 4} {
		t.Run(fmt.Sprintf("page size %d", page), func(t *testing.T) {
			m := newMemServer(t, page)
			c := newMemClient(t, m, memRegistry("mem"))
			defs, err := c.List(context.Background(), "mem")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range defs {
				names = append(names, d.Name)
			}
			want := []string{"mcp:mem/block", "mcp:mem/die", "mcp:mem/echo", "mcp:mem/empty", "mcp:mem/fail", "mcp:mem/mixed", "mcp:mem/multi", "mcp:mem/refuse", "mcp:mem/structured"}
			if !reflect.DeepEqual(names, want) {
				t.Errorf("names = %v, want %v", names, want)
			}
			echo := defs[2]
			if echo.Description != "the echo tool" || !json.Valid(echo.Params) || !strings.Contains(string(echo.Params), `"required":["text"]`) {
				t.Errorf("echo def = %+v (params %s)", echo, echo.Params)
			}
			// The list is kept for the session: a second List starts nothing and lists the same.
			again, err := c.List(context.Background(), "mem")
			if err != nil || !reflect.DeepEqual(again, defs) {
				t.Errorf("second List = %v, %v", again, err)
			}
			if n := m.starts.Load(); n != 1 {
				t.Errorf("starts = %d, want 1", n)
			}
		})
	}
}

func TestServersSortedAndLazy(t *testing.T) {
	m := newMemServer(t, 0)
	reg := memRegistry("zeta", "alpha", "mem")
	reg.invalid["broken"] = "x"
	c := newMemClient(t, m, reg)
	if got := c.Servers(); !reflect.DeepEqual(got, []string{"alpha", "broken", "mem", "zeta"}) {
		t.Errorf("Servers() = %v", got)
	}
	if n := m.starts.Load(); n != 0 {
		t.Errorf("Servers started %d servers; it must start none", n)
	}
}

// Concurrent first calls start the server once: the start is held until every caller has
// entered Call, so callers that do not share the start would each start their own.
func TestConcurrentFirstCallsStartOnce(t *testing.T) {
	const n = 8
	m := newMemServer(t, 0)
	m.hold = make(chan struct{})
	c := newMemClient(t, m, memRegistry("mem"))
	var entered sync.WaitGroup
	entered.Add(n)
	go func() {
		entered.Wait()
		close(m.hold)
	}()
	var done sync.WaitGroup
	errs := make([]error, n)
	outs := make([]any, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			entered.Done()
			outs[i], errs[i] = c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": fmt.Sprint(i)})
		}()
	}
	done.Wait()
	for i := range n {
		if errs[i] != nil || outs[i] != fmt.Sprint(i) {
			t.Errorf("call %d: %v, %v", i, outs[i], errs[i])
		}
	}
	if got := m.starts.Load(); got != 1 {
		t.Errorf("the server was started %d times, want 1", got)
	}
}

// A call whose context ends while the server starts is cancelled; a waiting call then starts
// the server itself instead of inheriting the cancellation.
func TestCancelledStartLeavesNextCallFree(t *testing.T) {
	m := newMemServer(t, 0)
	m.hold = make(chan struct{})
	c := newMemClient(t, m, memRegistry("mem"))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	dial := m.dial
	c.opts.Dial = func(dctx context.Context, name string, s Server) (sdk.Transport, error) {
		if m.starts.Load() == 0 {
			close(started)
		}
		return dial(dctx, name, s)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "mcp:mem/echo", map[string]any{"text": "x"})
		errc <- err
	}()
	<-started
	cancel()
	asError(t, <-errc, codeCancelled)
	close(m.hold)
	out, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "y"})
	if err != nil || out != "y" {
		t.Fatalf("next call: %v, %v", out, err)
	}
	if got := m.starts.Load(); got != 2 {
		t.Errorf("starts = %d, want 2 (the cancelled one, then a fresh one)", got)
	}
}

func TestCallCancelled(t *testing.T) {
	m := newMemServer(t, 0)
	c := newMemClient(t, m, memRegistry("mem"))
	ctx, cancel := context.WithCancelCause(context.Background())
	// List first so the cancellation lands in tools/call.
	if _, err := c.List(ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("task deadline")
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "mcp:mem/block", nil)
		errc <- err
	}()
	cancel(cause)
	se := asError(t, <-errc, codeCancelled)
	if !errors.Is(se, cause) || !errors.Is(se, context.Canceled) {
		t.Errorf("the error does not wrap the cause and context.Canceled: %v", se)
	}
	// The session survives a cancelled call.
	if out, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "still here"}); err != nil || out != "still here" {
		t.Errorf("after a cancelled call: %v, %v", out, err)
	}
	if n := m.starts.Load(); n != 1 {
		t.Errorf("starts = %d, want 1", n)
	}
	// A call on a done context does nothing.
	if _, err := c.Call(ctx, "mcp:mem/echo", map[string]any{"text": "x"}); err == nil {
		t.Error("a call on a done context succeeded")
	} else {
		asError(t, err, codeCancelled)
	}
}

// A server that goes away mid-call is NIKA-MCP-001, transient; the next call starts it again.
func TestDeadServerIsTransientAndRestarts(t *testing.T) {
	m := newMemServer(t, 0)
	c := newMemClient(t, m, memRegistry("mem"))
	_, err := c.Call(context.Background(), "mcp:mem/die", nil)
	se := asError(t, err, CodeUnavailable)
	if !se.Transient {
		t.Errorf("a dead server must be transient: %+v", se)
	}
	if !strings.Contains(se.Message, `MCP server "mem" stopped answering while running mcp:mem/die`) {
		t.Errorf("message = %q", se.Message)
	}
	out, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "back"})
	if err != nil || out != "back" {
		t.Fatalf("after the death: %v, %v", out, err)
	}
	if n := m.starts.Load(); n != 2 {
		t.Errorf("starts = %d, want 2", n)
	}
}

func TestClosedClient(t *testing.T) {
	m := newMemServer(t, 0)
	c := NewClient(memRegistry("mem"), Options{Dial: m.dial})
	if _, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "x"})
	se := asError(t, err, CodeUnavailable)
	if se.Transient {
		t.Error("a call after Close must not be transient")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A failed start is NIKA-MCP-001 (transient) for its call; a later call starts the server again.
func TestFailedStartIsTriedAgainLater(t *testing.T) {
	m := newMemServer(t, 0)
	m.fail = errors.New("no route")
	c := newMemClient(t, m, memRegistry("mem"))
	_, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "x"})
	se := asError(t, err, CodeUnavailable)
	if !se.Transient || se.Details["tool"] != "mcp:mem/echo" || se.Details["server"] != "mem" {
		t.Errorf("error = %+v", se)
	}
	// A later call tries again.
	m.fail = nil
	if out, err := c.Call(context.Background(), "mcp:mem/echo", map[string]any{"text": "y"}); err != nil || out != "y" {
		t.Errorf("retry: %v, %v", out, err)
	}
	if n := m.starts.Load(); n != 2 {
		t.Errorf("starts = %d, want 2", n)
	}
}

func TestEnviron(t *testing.T) {
	c := NewClient(nil, Options{Getenv: func(k string) (string, bool) {
		m := map[string]string{"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-secret", "TZ": "UTC"}
		v, ok := m[k]
		return v, ok
	}})
	defer c.Close()
	got := c.environ(map[string]string{"TZ": "Europe/Paris", "TOKEN": "t"})
	sort.Strings(got)
	want := []string{"HOME=/h", "PATH=/bin", "TOKEN=t", "TZ=Europe/Paris"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environ = %v, want %v", got, want)
	}
}
