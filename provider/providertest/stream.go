package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// StreamWire tells the conformance suite how one wire streams (Wire.Stream).
type StreamWire struct {
	// Events returns the server-sent events of the streamed reply for msg, usage and stop (as
	// for Wire.Reply: tool_use Names are wire names, usage nil is none), each a whole event with
	// its blank line, in the order the wire's server sends them, the last one closing the stream
	// (the wire's terminal event). Text and tool-call arguments are cut into pieces of at most
	// split bytes (Pieces), so every text and argument of more than split bytes spans several
	// events.
	Events func(msg provider.Message, usage *provider.Usage, stop string, split int) []string
	// ErrorEvent is an event by which the server reports, inside the stream, a failure the wire
	// classifies as reason (a transient one: an overload or a server error).
	ErrorEvent string
	// ErrorReason is the reason ErrorEvent must yield.
	ErrorReason string
}

// SSE formats one server-sent event: its type (none when typ is ""), its data on one line, and
// the blank line that ends it.
func SSE(typ, data string) string {
	if typ == "" {
		return "data: " + data + "\n\n"
	}
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

// Pieces cuts s into pieces of at most n bytes (n < 1: 1), never inside a character; "" is one
// empty piece.
func Pieces(s string, n int) []string {
	n = max(n, 1)
	if s == "" {
		return []string{""}
	}
	var out []string
	for s != "" {
		i := min(n, len(s))
		for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 { // one character longer than n
			_, i = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// runStream is the streaming half of Run, for a wire with Stream set.
func (c *conformance) runStream(t *testing.T) {
	t.Run("StreamEqualsPlain", c.streamEqualsPlain)
	t.Run("StreamAnnouncesCallsEarly", c.streamEarly)
	t.Run("StreamSplitUTF8", c.streamSplitUTF8)
	t.Run("StreamKeepAlive", c.streamKeepAlive)
	t.Run("StreamCut", c.streamCut)
	t.Run("StreamErrorEvent", c.streamErrorEvent)
	t.Run("StreamStatuses", c.streamStatuses)
	t.Run("StreamCancelled", c.streamCancelled)
}

// streamCase is a scripted answer, written both plain and streamed.
type streamCase struct {
	name  string
	msg   provider.Message
	usage *provider.Usage
	stop  string
}

func streamCases() []streamCase {
	calls := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{
		provider.TextBlock("Reading the files — all three."),
		provider.ToolUseBlock("call_b2", "mcp:fs/read_text_file", json.RawMessage(`{"path":"b.txt","n":12345,"deep":{"list":[1,2,{"k":"v"}]}}`)),
		provider.ToolUseBlock("call_a1", "nika:read", json.RawMessage(`{"path":"dir/a file with a long name.txt"}`)),
		provider.ToolUseBlock("call_c3", "nika:write", json.RawMessage(`{}`)),
	}}
	return []streamCase{
		{"Text", textMsg("Hello, world. This reply is long enough to be cut into several pieces."),
			&provider.Usage{InputTokens: 12, OutputTokens: 9, Reported: true}, provider.StopEndTurn},
		{"ToolCalls", calls, &provider.Usage{InputTokens: 40, OutputTokens: 20, Reported: true}, provider.StopToolUse},
		{"Unicode", textMsg("héllo wörld — 日本語のテキスト 🎉🎉 ∑∞"), &provider.Usage{InputTokens: 3, OutputTokens: 4, Reported: true}, provider.StopEndTurn},
		{"NoUsage", textMsg("ok"), nil, provider.StopEndTurn},
		{"MaxTokens", textMsg("cut sho"), &provider.Usage{InputTokens: 5, OutputTokens: 3, Reported: true}, provider.StopMaxTokens},
	}
}

func textMsg(s string) provider.Message {
	return provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock(s)}}
}

// wireMsg maps the canonical tool names of msg to the wire names of the request body.
func (c *conformance) wireMsg(msg provider.Message, body []byte) (provider.Message, error) {
	names, _, err := c.w.Decode(body)
	if err != nil {
		return msg, err
	}
	toWire := map[string]string{}
	for i, td := range conformanceTools {
		if i < len(names) {
			toWire[td.Name] = names[i]
		}
	}
	out := provider.Message{Role: msg.Role}
	for _, b := range msg.Blocks {
		if b.Type == provider.BlockToolUse {
			b.Name = toWire[b.Name]
		}
		out.Blocks = append(out.Blocks, b)
	}
	return out, nil
}

// writeEvents writes a stream's head and then the events, each chunk flushed on its own.
func writeEvents(w http.ResponseWriter, chunks []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, ch := range chunks {
		_, _ = w.Write([]byte(ch))
		if f != nil {
			f.Flush()
		}
	}
}

// hangUp closes the connection under a handler: the client sees the stream cut short.
func hangUp(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
		}
	}
}

func streamRequest(tools bool) provider.Request {
	r := provider.Request{Model: conformanceModel, System: "Be brief.", Messages: []provider.Message{provider.UserText("Go.")}}
	if tools {
		r.Tools = conformanceTools
	}
	return r
}

func (c *conformance) streamAdapter(t *testing.T, url string) provider.StreamAdapter {
	t.Helper()
	sa, ok := c.w.New(url).(provider.StreamAdapter)
	if !ok {
		t.Fatalf("wire %s has Stream set but its adapter is not a provider.StreamAdapter", c.w.Name)
	}
	return sa
}

// heard is what a StreamObserver was told.
type heard struct {
	mu       sync.Mutex
	text     strings.Builder
	calls    map[int][]provider.Block
	restarts []string
	voided   int           // calls announced before a restart voided them
	first    chan struct{} // closed at the first tool call
	once     sync.Once
}

func newHeard() *heard { return &heard{calls: map[int][]provider.Block{}, first: make(chan struct{})} }

func (h *heard) observer() *provider.StreamObserver {
	return &provider.StreamObserver{
		OnText: func(d string) { h.mu.Lock(); h.text.WriteString(d); h.mu.Unlock() },
		OnToolCall: func(sc provider.StreamCall) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.once.Do(func() { close(h.first) })
			h.calls[sc.Index] = append(h.calls[sc.Index], sc.Block)
		},
		OnRestart: func(send int, cause *spec.Error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.restarts = append(h.restarts, fmt.Sprintf("%d %s", send, provider.ReasonOf(cause)))
			h.voided += len(h.calls)
			h.text.Reset()
			clear(h.calls)
		},
	}
}

// check verifies StreamObserver's promises against a successful response: the text deltas add up
// to the text, and each tool_use block was announced once, as it is in the response.
func (h *heard) check(t *testing.T, resp *provider.Response) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if got, want := h.text.String(), provider.Text(resp.Message); got != want {
		t.Errorf("text deltas add up to %q, want %q", got, want)
	}
	k := 0
	for _, b := range resp.Message.Blocks {
		if b.Type != provider.BlockToolUse {
			continue
		}
		if got := h.calls[k]; len(got) != 1 || !reflect.DeepEqual(got[0], b) {
			t.Errorf("tool call %d announced as %+v, want once as %+v", k, got, b)
		}
		k++
	}
	if len(h.calls) != k {
		t.Errorf("%d tool calls announced, the response has %d", len(h.calls), k)
	}
}

// plainAndStreamed answers tc plainly and streamed (chunks makes the streamed body from the
// events), and checks that both outcomes are the same value and the observer's promises.
func (c *conformance) plainAndStreamed(t *testing.T, tc streamCase, chunks func(events []string) []string) {
	t.Helper()
	tools := tc.stop == provider.StopToolUse
	plainSrv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		msg, err := c.wireMsg(tc.msg, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusTeapot)
			return
		}
		c.w.Reply(w, msg, tc.usage, tc.stop)
	})
	streamSrv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		msg, err := c.wireMsg(tc.msg, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusTeapot)
			return
		}
		writeEvents(w, chunks(c.w.Stream.Events(msg, tc.usage, tc.stop, 3)))
	})
	plain := mustResponse(t, c.exchange(t, context.Background(), plainSrv.url, streamRequest(tools)))
	h := newHeard()
	out := c.streamAdapter(t, streamSrv.url).ExchangeStream(context.Background(), streamRequest(tools), h.observer())
	streamed := mustResponse(t, out)
	if !reflect.DeepEqual(streamed, plain) {
		t.Errorf("streamed response\n%s\nwant the plain one\n%s", dump(streamed), dump(plain))
	}
	h.check(t, streamed)
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func (c *conformance) streamEqualsPlain(t *testing.T) {
	for _, tc := range streamCases() {
		t.Run(tc.name, func(t *testing.T) {
			c.plainAndStreamed(t, tc, func(ev []string) []string { return ev })
		})
	}
}

// streamSplitUTF8 writes the stream a byte at a time: every character of more than one byte, and
// every line end, arrives split across reads.
func (c *conformance) streamSplitUTF8(t *testing.T) {
	for _, tc := range streamCases()[1:3] {
		t.Run(tc.name, func(t *testing.T) {
			c.plainAndStreamed(t, tc, func(ev []string) []string {
				var out []string
				for _, b := range []byte(strings.Join(ev, "")) {
					out = append(out, string([]byte{b}))
				}
				return out
			})
		})
	}
}

// streamKeepAlive puts keep-alive comments before, between and after the events.
func (c *conformance) streamKeepAlive(t *testing.T) {
	c.plainAndStreamed(t, streamCases()[1], func(ev []string) []string {
		out := []string{": keep-alive\n\n"}
		for _, e := range ev {
			out = append(out, e, ": keep-alive\n\n", ":\n\n")
		}
		return out
	})
}

// streamEarly holds the stream's last event back until the first tool call has been announced:
// it must be announced while the reply is still being written.
func (c *conformance) streamEarly(t *testing.T) {
	tc := streamCases()[1]
	h := newHeard()
	srv := c.serve(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		msg, err := c.wireMsg(tc.msg, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusTeapot)
			return
		}
		ev := c.w.Stream.Events(msg, tc.usage, tc.stop, 3)
		writeEvents(w, ev[:len(ev)-1])
		select {
		case <-h.first: // the rendezvous: the client announced a call before the stream ended
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second): // a safety net against a hang, not a timing assertion
			t.Error("no tool call was announced before the stream's last event")
		}
		_, _ = w.Write([]byte(ev[len(ev)-1]))
	})
	out := c.streamAdapter(t, srv.url).ExchangeStream(context.Background(), streamRequest(true), h.observer())
	h.check(t, mustResponse(t, out))
}

// streamCut cuts the first send's stream inside the tool calls (and, in another subtest, right
// before its terminal event); through a Front the request is sent again, the observer is told,
// and the outcome is the whole reply.
func (c *conformance) streamCut(t *testing.T) {
	tc := streamCases()[1]
	for _, cut := range []struct {
		name   string
		head   func(ev []string) string
		voided int // calls announced before the cut
	}{
		// Inside the arguments of the second call ("…a long name.txt" arrives as pieces of 3
		// bytes, "lon" one of them), the first call complete.
		{"MidCall", func(ev []string) string { s := strings.Join(ev, ""); return s[:strings.Index(s, "lon")+2] }, 1},
		{"BeforeTerminalEvent", func(ev []string) string { return strings.Join(ev[:len(ev)-1], "") }, 2},
	} {
		t.Run(cut.name, func(t *testing.T) {
			var mu sync.Mutex
			sends := 0
			srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
				msg, err := c.wireMsg(tc.msg, body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusTeapot)
					return
				}
				ev := c.w.Stream.Events(msg, tc.usage, tc.stop, 3)
				mu.Lock()
				sends++
				n := sends
				mu.Unlock()
				if n <= 2 { // the direct exchange's, then the Front's first
					writeEvents(w, []string{cut.head(ev)})
					hangUp(w)
					return
				}
				writeEvents(w, ev)
			})
			direct := c.streamAdapter(t, srv.url).ExchangeStream(context.Background(), streamRequest(true), nil)
			mustFail(t, direct, provider.ReasonNetwork)

			h := newHeard()
			f := provider.NewFront("test", c.w.New(srv.url), provider.FrontConfig{
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
			out := f.CompleteStream(context.Background(), streamRequest(true), h.observer())
			resp := mustResponse(t, out)
			h.check(t, resp)
			if len(h.restarts) != 1 || h.restarts[0] != "2 "+provider.ReasonNetwork {
				t.Errorf("restarts = %q, want [\"2 network\"]", h.restarts)
			}
			if h.voided < cut.voided {
				t.Errorf("%d calls announced before the cut, want at least %d", h.voided, cut.voided)
			}
			if mu.Lock(); sends != 3 {
				t.Errorf("sends = %d, want 3 (one direct, two through the Front)", sends)
			}
			mu.Unlock()
		})
	}
}

// streamErrorEvent sends some of a reply, then the wire's error event.
func (c *conformance) streamErrorEvent(t *testing.T) {
	if c.w.Stream.ErrorEvent == "" {
		t.Skip("the wire has no error event")
	}
	tc := streamCases()[0]
	srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		ev := c.w.Stream.Events(tc.msg, tc.usage, tc.stop, 3)
		writeEvents(w, append(ev[:2:2], c.w.Stream.ErrorEvent))
	})
	out := c.streamAdapter(t, srv.url).ExchangeStream(context.Background(), streamRequest(false), nil)
	mustFail(t, out, c.w.Stream.ErrorReason)
}

// streamStatuses: an error status on a streamed request is classified as on a plain one.
func (c *conformance) streamStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int
		reason string
	}{
		{http.StatusUnauthorized, provider.ReasonAuthFailed},
		{http.StatusTooManyRequests, provider.ReasonRateLimited},
		{http.StatusInternalServerError, provider.ReasonServerError},
	} {
		srv := c.serve(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { c.w.Error(w, tc.status, "3") })
		out := c.streamAdapter(t, srv.url).ExchangeStream(context.Background(), streamRequest(false), nil)
		e := mustFail(t, out, tc.reason)
		if got, ok := detailInt(e.Details["status"]); !ok || got != int64(tc.status) {
			t.Errorf("%d: details.status = %v", tc.status, e.Details["status"])
		}
		if tc.status == http.StatusTooManyRequests {
			if got, ok := detailInt(e.Details["retry_after_ms"]); !ok || got != 3000 {
				t.Errorf("429: details.retry_after_ms = %v, want 3000", e.Details["retry_after_ms"])
			}
		}
	}
}

// streamCancelled cancels the request once the first text has arrived, while the server holds
// the rest back.
func (c *conformance) streamCancelled(t *testing.T) {
	tc := streamCases()[0]
	release := make(chan struct{})
	srv := c.serve(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		ev := c.w.Stream.Events(tc.msg, tc.usage, tc.stop, 3)
		writeEvents(w, ev[:len(ev)/2])
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &provider.StreamObserver{OnText: func(string) { cancel() }}
	out := c.streamAdapter(t, srv.url).ExchangeStream(ctx, streamRequest(false), obs)
	mustFail(t, out, provider.ReasonCancelled)
}
