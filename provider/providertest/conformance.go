package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// Wire tells the conformance suite how to speak one wire: the suite cannot know each wire's JSON, so
// the caller builds adapters, writes the wire's replies and decodes the neutral parts of its requests.
type Wire struct {
	// Name names the wire in test output.
	Name string
	// New builds an adapter that sends to baseURL (an httptest server answering every path) with the
	// API key "test-key".
	New func(baseURL string) provider.Adapter
	// Reply writes the wire's success response (status 200) for msg, an assistant message of text
	// and/or tool_use blocks. The tool_use Names are already wire names, taken from the tools the
	// adapter offered in the request. usage nil means no usage block; stop is a neutral stop reason
	// (provider.StopEndTurn, provider.StopToolUse) to write as the wire's own.
	Reply func(w http.ResponseWriter, msg provider.Message, usage *provider.Usage, stop string)
	// Error writes the wire's error response with an HTTP status, and the Retry-After header when
	// retryAfter is not "".
	Error func(w http.ResponseWriter, status int, retryAfter string)
	// Decode extracts from a request body the adapter sent: the wire names of the offered tools, in
	// order, and the tool_use ids answered by the tool results, in the order sent.
	Decode func(body []byte) (toolNames []string, resultIDs []string, err error)
	// Stream, when set, is how the wire streams: the adapter must then be a
	// provider.StreamAdapter, and Run checks its streamed replies too.
	Stream *StreamWire
}

// TestKey is the API key Wire.New gives its adapters.
const TestKey = "test-key"

const conformanceModel = "test/test-model"

var wireName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Run drives the adapters of w against httptest servers and checks what every wire must do
// (WIRES.md §4, D27, D41, D46): text and tool-call round trips with canonical names, tool results in
// request order, usage reporting, the status → reason table with Retry-After, cancellation and a body
// cut short. With Wire.Stream set it checks the streamed exchange as well (issue 17): the streamed
// reply is the plain one, whether the bytes arrive one at a time (split characters) or between
// keep-alive comments; a tool call is announced before the stream ends; a stream cut short is a
// network failure that a Front sends again, telling the observer; an error event, an error status
// and cancellation are classified as on a plain exchange. Each subtest has its own server.
func Run(t *testing.T, w Wire) {
	t.Helper()
	if w.New == nil || w.Reply == nil || w.Error == nil || w.Decode == nil {
		t.Fatalf("providertest.Run: wire %q: New, Reply, Error and Decode are all required", w.Name)
	}
	c := &conformance{w: w}
	t.Run("TextReply", c.textReply)
	t.Run("ToolCalls", c.toolCalls)
	t.Run("ToolResultsInOrder", c.toolResultsInOrder)
	t.Run("Usage", c.usage)
	t.Run("Statuses", c.statuses)
	t.Run("Cancelled", c.cancelled)
	t.Run("BodyCut", c.bodyCut)
	if w.Stream != nil {
		c.runStream(t)
	}
}

type conformance struct{ w Wire }

// recorder is an httptest server handing each request body to a handler and keeping the bodies.
type recorder struct {
	url    string
	mu     sync.Mutex
	bodies [][]byte
}

func (c *conformance) serve(t *testing.T, h func(w http.ResponseWriter, r *http.Request, body []byte)) *recorder {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		h(w, r, body)
	}))
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return rec
}

func (r *recorder) last(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("the adapter sent no request")
	}
	return r.bodies[len(r.bodies)-1]
}

func (c *conformance) exchange(t *testing.T, ctx context.Context, url string, req provider.Request) (out provider.Outcome) {
	t.Helper()
	a := c.w.New(url)
	if a == nil {
		t.Fatal("Wire.New returned nil")
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Exchange panicked: %v", p)
		}
	}()
	out = a.Exchange(ctx, req)
	if (out.Response == nil) == (out.Err == nil) {
		t.Fatalf("Exchange must return exactly one of Response and Err: %+v", out)
	}
	return out
}

func mustResponse(t *testing.T, out provider.Outcome) *provider.Response {
	t.Helper()
	if out.Err != nil {
		t.Fatalf("Exchange failed: %v (details %v)", out.Err.Message, out.Err.Details)
	}
	return out.Response
}

func (c *conformance) textReply(t *testing.T) {
	srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		c.w.Reply(w, provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock("Hello, world.")}},
			&provider.Usage{InputTokens: 12, OutputTokens: 3, Reported: true}, provider.StopEndTurn)
	})
	resp := mustResponse(t, c.exchange(t, context.Background(), srv.url, provider.Request{
		Model: conformanceModel, System: "Be brief.", Messages: []provider.Message{provider.UserText("Say hello.")},
	}))
	if resp.Message.Role != provider.RoleAssistant {
		t.Errorf("role = %q, want %q", resp.Message.Role, provider.RoleAssistant)
	}
	if got := provider.Text(resp.Message); got != "Hello, world." {
		t.Errorf("text = %q, want %q", got, "Hello, world.")
	}
	for _, b := range resp.Message.Blocks {
		if b.Type != provider.BlockText {
			t.Errorf("unexpected %s block in a text reply", b.Type)
		}
	}
	if resp.StopReason != provider.StopEndTurn {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, provider.StopEndTurn)
	}
	if len(srv.last(t)) == 0 {
		t.Error("empty request body")
	}
}

// conformanceTools use canonical names with ':' and '/' (D41).
var conformanceTools = []provider.ToolDef{
	{Name: "nika:read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "mcp:fs/read_text_file", Description: "Read a text file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "nika:write", Description: "Write a file.", Parameters: json.RawMessage(`{"type":"object"}`)},
}

func (c *conformance) toolCalls(t *testing.T) {
	calls := []provider.Block{
		provider.ToolUseBlock("call_b2", "mcp:fs/read_text_file", json.RawMessage(`{"path":"b.txt","n":1}`)),
		provider.ToolUseBlock("call_a1", "nika:read", json.RawMessage(`{"path":"a.txt"}`)),
		provider.ToolUseBlock("call_c3", "nika:write", json.RawMessage(`{}`)),
	}
	srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		names, _, err := c.w.Decode(body)
		if err != nil || len(names) != len(conformanceTools) {
			http.Error(w, fmt.Sprintf("conformance: decoded tool names %q, err %v", names, err), http.StatusTeapot)
			return
		}
		toWire := map[string]string{}
		for i, td := range conformanceTools {
			toWire[td.Name] = names[i]
		}
		msg := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock("Reading.")}}
		for _, b := range calls {
			b.Name = toWire[b.Name]
			msg.Blocks = append(msg.Blocks, b)
		}
		c.w.Reply(w, msg, &provider.Usage{InputTokens: 40, OutputTokens: 20, Reported: true}, provider.StopToolUse)
	})
	out := c.exchange(t, context.Background(), srv.url, provider.Request{
		Model: conformanceModel, Messages: []provider.Message{provider.UserText("Read both files.")}, Tools: conformanceTools,
	})
	names, _, err := c.w.Decode(srv.last(t))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(names) != len(conformanceTools) {
		t.Fatalf("offered tool names = %q, want %d names", names, len(conformanceTools))
	}
	for i, n := range names {
		if !wireName.MatchString(n) {
			t.Errorf("offered tool %q has wire name %q, not matching %s (D41)", conformanceTools[i].Name, n, wireName)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("offered wire names %q are not distinct", names)
	}
	resp := mustResponse(t, out)
	if got := provider.Text(resp.Message); got != "Reading." {
		t.Errorf("text = %q, want %q", got, "Reading.")
	}
	var got []provider.Block
	for _, b := range resp.Message.Blocks {
		if b.Type == provider.BlockToolUse {
			got = append(got, b)
		}
	}
	if len(got) != len(calls) {
		t.Fatalf("got %d tool calls, want %d: %+v", len(got), len(calls), resp.Message.Blocks)
	}
	for i, want := range calls {
		g := got[i]
		if g.ID != want.ID || g.Name != want.Name {
			t.Errorf("call %d = (id %q, name %q), want (id %q, name %q)", i, g.ID, g.Name, want.ID, want.Name)
		}
		if !sameJSON(g.Input, want.Input) {
			t.Errorf("call %d input = %s, want %s", i, g.Input, want.Input)
		}
	}
	if resp.StopReason != provider.StopToolUse {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, provider.StopToolUse)
	}
}

func (c *conformance) toolResultsInOrder(t *testing.T) {
	srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		c.w.Reply(w, provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock("Done.")}},
			nil, provider.StopEndTurn)
	})
	// The ids are not in sorted order, so an adapter that sorts or maps through a set is caught.
	transcript := []provider.Message{
		provider.UserText("Read both files."),
		{Role: provider.RoleAssistant, Blocks: []provider.Block{
			provider.TextBlock("Reading."),
			provider.ToolUseBlock("call_z9", "mcp:fs/read_text_file", json.RawMessage(`{"path":"b.txt"}`)),
			provider.ToolUseBlock("call_a1", "nika:read", json.RawMessage(`{"path":"a.txt"}`)),
		}},
		{Role: provider.RoleUser, Blocks: []provider.Block{
			provider.ToolResultBlock("call_z9", "contents of b", false),
			provider.ToolResultBlock("call_a1", "no such file", true),
		}},
	}
	out := c.exchange(t, context.Background(), srv.url, provider.Request{
		Model: conformanceModel, Messages: transcript, Tools: conformanceTools,
	})
	mustResponse(t, out)
	_, ids, err := c.w.Decode(srv.last(t))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := []string{"call_z9", "call_a1"}; !slices.Equal(ids, want) {
		t.Errorf("tool results sent for %q, want %q (request order, WIRES.md §4.1)", ids, want)
	}
}

func (c *conformance) usage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage *provider.Usage
	}{
		{"Present", &provider.Usage{InputTokens: 123, OutputTokens: 45, Reported: true}},
		{"Absent", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				c.w.Reply(w, provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock("ok")}},
					tc.usage, provider.StopEndTurn)
			})
			resp := mustResponse(t, c.exchange(t, context.Background(), srv.url, provider.Request{
				Model: conformanceModel, Messages: []provider.Message{provider.UserText("hi")},
			}))
			want := provider.Usage{}
			if tc.usage != nil {
				want = *tc.usage
			}
			if resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
		})
	}
}

func (c *conformance) statuses(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		reason     string
		retryMs    int64
	}{
		{http.StatusUnauthorized, "", provider.ReasonAuthFailed, 0},
		{http.StatusNotFound, "", provider.ReasonModelNotFound, 0},
		{http.StatusTooManyRequests, "2", provider.ReasonRateLimited, 2000},
		{http.StatusInternalServerError, "", provider.ReasonServerError, 0},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				c.w.Error(w, tc.status, tc.retryAfter)
			})
			out := c.exchange(t, context.Background(), srv.url, provider.Request{
				Model: conformanceModel, Messages: []provider.Message{provider.UserText("hi")},
			})
			e := mustFail(t, out, tc.reason)
			if got, ok := detailInt(e.Details["status"]); !ok || got != int64(tc.status) {
				t.Errorf("details.status = %v, want %d", e.Details["status"], tc.status)
			}
			if tc.retryMs != 0 {
				if got, ok := detailInt(e.Details["retry_after_ms"]); !ok || got != tc.retryMs {
					t.Errorf("details.retry_after_ms = %v, want %d (Retry-After %q)", e.Details["retry_after_ms"], tc.retryMs, tc.retryAfter)
				}
			}
			if bytes.Contains([]byte(e.Message), []byte(TestKey)) {
				t.Errorf("the message shows the key: %q", e.Message)
			}
		})
	}
}

func (c *conformance) cancelled(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := c.serve(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-arrived:
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		cancel()
	}()
	out := c.exchange(t, ctx, srv.url, provider.Request{
		Model: conformanceModel, Messages: []provider.Message{provider.UserText("hi")},
	})
	mustFail(t, out, provider.ReasonCancelled)
}

func (c *conformance) bodyCut(t *testing.T) {
	srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		full := httptest.NewRecorder()
		c.w.Reply(full, provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock("a reply long enough to be cut")}},
			&provider.Usage{InputTokens: 1, OutputTokens: 1, Reported: true}, provider.StopEndTurn)
		body := full.Body.Bytes()
		for k, v := range full.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
	})
	out := c.exchange(t, context.Background(), srv.url, provider.Request{
		Model: conformanceModel, Messages: []provider.Message{provider.UserText("hi")},
	})
	mustFail(t, out, provider.ReasonNetwork)
}

// mustFail checks that out is NIKA-INFER-001 with reason, transient iff the reason is (D27).
func mustFail(t *testing.T, out provider.Outcome, reason string) *spec.Error {
	t.Helper()
	if out.Err == nil {
		t.Fatalf("Exchange succeeded (%+v), want reason %s", out.Response, reason)
	}
	e := out.Err
	if e.Code != spec.CodeInferProvider {
		t.Errorf("code = %q, want %s", e.Code, spec.CodeInferProvider)
	}
	if got := provider.ReasonOf(e); got != reason {
		t.Errorf("reason = %q, want %q (message %q)", got, reason, e.Message)
	}
	if e.Transient != provider.Transient(reason) {
		t.Errorf("transient = %v, want %v for reason %s", e.Transient, provider.Transient(reason), reason)
	}
	if m, _ := e.Details["model"].(string); m != conformanceModel {
		t.Errorf("details.model = %v, want %q", e.Details["model"], conformanceModel)
	}
	return e
}

func detailInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), float64(int64(n)) == n
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// sameJSON reports whether a and b are the same JSON once compacted.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
