package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/provider"
)

// duplex is a server that answers a plain request with plain and a streamed one ("stream":
// true) by writing the events of stream, each flushed; it counts the streamed requests.
func duplex(t *testing.T, plain string, stream func(w http.ResponseWriter, r *http.Request)) (*Adapter, *[][]byte) {
	t.Helper()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("content-type", "application/json")
			io.WriteString(w, plain)
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		stream(w, r)
	}))
	t.Cleanup(srv.Close)
	return &Adapter{BaseURL: srv.URL, Key: "sk-ant-secret", Client: srv.Client()}, &bodies
}

// sse writes events ("<type> <json>" each), flushing each.
func sse(w http.ResponseWriter, events ...string) {
	for _, e := range events {
		typ, data, _ := strings.Cut(e, " ")
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		w.(http.Flusher).Flush()
	}
}

func blockDelta(i int, delta string) string {
	return fmt.Sprintf(`content_block_delta {"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)
}

func blockStart(i int, block string) string {
	return fmt.Sprintf(`content_block_start {"type":"content_block_start","index":%d,"content_block":%s}`, i, block)
}

func blockStop(i int) string {
	return fmt.Sprintf(`content_block_stop {"type":"content_block_stop","index":%d}`, i)
}

const messageStop = `message_stop {"type":"message_stop"}`

func streamRequest() provider.Request {
	return provider.Request{Model: "anthropic/claude-sonnet-4-5", Messages: []provider.Message{provider.UserText("Weather?")},
		Tools: []provider.ToolDef{{Name: "nika:read", Parameters: json.RawMessage(`{"type":"object"}`)}}}
}

type heard struct {
	mu    sync.Mutex
	lines []string
	calls chan int
}

func newHeard() *heard { return &heard{calls: make(chan int, 8)} }

func (h *heard) observer() *provider.StreamObserver {
	return &provider.StreamObserver{
		OnText: func(d string) { h.mu.Lock(); h.lines = append(h.lines, "text "+d); h.mu.Unlock() },
		OnToolCall: func(c provider.StreamCall) {
			h.mu.Lock()
			h.lines = append(h.lines, fmt.Sprintf("call %d %s %s %s", c.Index, c.Block.ID, c.Block.Name, c.Block.Input))
			h.mu.Unlock()
			h.calls <- c.Index
		},
	}
}

// TestStreamThinkingAndCache: thinking (with its signature) and redacted_thinking blocks, cache
// tokens from message_start and a message_delta whose usage also restates the input: the
// streamed reply is the plain one, replay data included.
func TestStreamThinkingAndCache(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first: runs after the server's Close
	plain := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
		{"type":"thinking","thinking":"Let me think — 日本.","signature":"EqQBCgIYAhIM"},
		{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
		{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_01","name":"nika_read","input":{"path":"a.txt","n":1.50}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":400,"output_tokens":85,"cache_creation_input_tokens":10,"cache_read_input_tokens":1000}}`
	a, bodies := duplex(t, plain, func(w http.ResponseWriter, _ *http.Request) {
		sse(w,
			`message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":390,"output_tokens":1,"cache_creation_input_tokens":10,"cache_read_input_tokens":1000}}}`,
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"Let me think "}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"— 日本."}`),
			blockDelta(0, `{"type":"signature_delta","signature":"EqQBCgIYAhIM"}`),
			blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}`),
			blockStop(1),
			`ping {"type": "ping"}`,
			blockStart(2, `{"type":"text","text":""}`),
			blockDelta(2, `{"type":"text_delta","text":"Check"}`),
			blockDelta(2, `{"type":"text_delta","text":"ing."}`),
			blockStop(2),
			blockStart(3, `{"type":"tool_use","id":"toolu_01","name":"nika_read","input":{}}`),
			blockDelta(3, `{"type":"input_json_delta","partial_json":""}`),
			blockDelta(3, `{"type":"input_json_delta","partial_json":"{\"path\": \"a.t"}`),
			blockDelta(3, `{"type":"input_json_delta","partial_json":"xt\", \"n\": 1.50}"}`),
			blockStop(3),
			`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":400,"output_tokens":85}}`,
			messageStop)
	})
	want := a.Exchange(context.Background(), streamRequest())
	h := newHeard()
	got := a.ExchangeStream(context.Background(), streamRequest(), h.observer())
	if want.Err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed %+v %v\nwant plain %+v %v", got.Response, got.Err, want.Response, want.Err)
	}
	if u := got.Response.Usage; u.InputTokens != 1410 || u.OutputTokens != 85 {
		t.Errorf("usage = %+v", u)
	}
	if l := h.lines; !slices.Equal(l, []string{"text Check", "text ing.", `call 0 toolu_01 nika:read {"path":"a.txt","n":1.50}`}) {
		t.Errorf("observed %q (reasoning is not answer text)", l)
	}
	var body map[string]any
	json.Unmarshal((*bodies)[1], &body)
	if body["stream"] != true {
		t.Errorf("streamed request: stream = %v", body["stream"])
	}
	var plainBody map[string]any
	json.Unmarshal((*bodies)[0], &plainBody)
	if _, ok := plainBody["stream"]; ok {
		t.Error("the plain request carries stream")
	}
}

// TestStreamAnnouncesAtBlockStop is the rendezvous: the server stops after the first tool_use
// block closes and goes on only once it has been announced.
func TestStreamAnnouncesAtBlockStop(t *testing.T) {
	h := newHeard()
	a, _ := duplex(t, "", func(w http.ResponseWriter, r *http.Request) {
		sse(w, `message_start {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
			blockStart(0, `{"type":"tool_use","id":"t0","name":"nika_read","input":{}}`),
			blockDelta(0, `{"type":"input_json_delta","partial_json":"{\"path\":\"a\"}"}`),
			blockStop(0))
		select {
		case <-h.calls:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second): // a safety net against a hang, not a timing assertion
			t.Error("the call was not announced before the stream went on")
		}
		sse(w, blockStart(1, `{"type":"tool_use","id":"t1","name":"nika_read","input":{"path":"b"}}`), blockStop(1),
			`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`, messageStop)
	})
	o := a.ExchangeStream(context.Background(), streamRequest(), h.observer())
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	want := []string{`call 0 t0 nika:read {"path":"a"}`, `call 1 t1 nika:read {"path":"b"}`} // t1: the input of its start block
	if !slices.Equal(h.lines, want) {
		t.Errorf("observed %q, want %q", h.lines, want)
	}
}

func TestStreamFailures(t *testing.T) {
	start := `message_start {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`
	for _, tc := range []struct {
		name   string
		events []string
		reason string
		msg    string
	}{
		{"no message_stop", []string{start, blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"hi"}`), blockStop(0)},
			provider.ReasonNetwork, "ended before message_stop"},
		{"overloaded", []string{start, `error {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			provider.ReasonServerError, "overloaded_error: Overloaded"},
		{"rate limited", []string{`error {"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}`},
			provider.ReasonRateLimited, "rate_limit_error"},
		{"malformed event", []string{start, "content_block_start {nope"}, provider.ReasonServerError, "malformed content_block_start event"},
		{"input not an object", []string{start, blockStart(0, `{"type":"tool_use","id":"t","name":"nika_read","input":{}}`),
			blockDelta(0, `{"type":"input_json_delta","partial_json":"[1,"}`), blockStop(0), messageStop},
			provider.ReasonServerError, "content block 0: not a JSON object"},
		{"tool_use without id", []string{start, blockStart(0, `{"type":"tool_use","name":"nika_read","input":{}}`), blockStop(0), messageStop},
			provider.ReasonServerError, "tool_use without id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeard()
			a, _ := duplex(t, "", func(w http.ResponseWriter, _ *http.Request) { sse(w, tc.events...) })
			o := a.ExchangeStream(context.Background(), streamRequest(), h.observer())
			if o.Err == nil || provider.ReasonOf(o.Err) != tc.reason || !strings.Contains(o.Err.Message, tc.msg) {
				t.Fatalf("outcome = %+v %v, want %s containing %q", o.Response, o.Err, tc.reason, tc.msg)
			}
			if len(h.calls) != 0 {
				t.Errorf("a call that cannot be decoded was announced: %q", h.lines)
			}
		})
	}
}

// TestStreamErrorLikePlain: an error event is classified and worded as the same error in a plain
// 200 body.
func TestStreamErrorLikePlain(t *testing.T) {
	body := `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_9"}`
	a, _ := duplex(t, body, func(w http.ResponseWriter, _ *http.Request) { sse(w, "error "+body) })
	plain := a.Exchange(context.Background(), streamRequest())
	o := a.ExchangeStream(context.Background(), streamRequest(), nil)
	if o.Err == nil || plain.Err == nil || o.Err.Message != plain.Err.Message || !reflect.DeepEqual(o.Err.Details, plain.Err.Details) {
		t.Errorf("streamed %v %v\nplain %v %v", o.Err, o.Err.Details, plain.Err, plain.Err.Details)
	}
}

// TestStreamPlainAnswer: a server that answers a streamed request with JSON is read as plain.
func TestStreamPlainAnswer(t *testing.T) {
	a, _ := serve(t, 200, nil, `{"type":"message","role":"assistant","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn"}`)
	o := a.ExchangeStream(context.Background(), streamRequest(), nil)
	if o.Err != nil || provider.Text(o.Response.Message) != "Hi." || o.Response.StopReason != provider.StopEndTurn {
		t.Errorf("outcome = %+v %v", o.Response, o.Err)
	}
}
