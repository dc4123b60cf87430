package openai

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

// sseServer answers each request with handle(w, n, body), n counting requests from 1.
type sseServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newSSEServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int, body []byte)) *sseServer {
	t.Helper()
	s := &sseServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		n := len(s.bodies)
		s.mu.Unlock()
		handle(w, r, n, b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) body(t *testing.T, i int) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(s.bodies[i], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stream writes chunks as server-sent events ("data: …"), flushing each.
func stream(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	f := w.(http.Flusher)
	for _, c := range chunks {
		if !strings.HasPrefix(c, ":") && !strings.HasPrefix(c, "event:") && !strings.HasPrefix(c, "data:") {
			c = "data: " + c + "\n\n"
		}
		io.WriteString(w, c)
		f.Flush()
	}
}

func delta(d string) string {
	return `{"choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}`
}

func finished(reason string) string {
	return `{"choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

const usageChunk = `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`

// events records what an observer hears, as lines.
type events struct {
	mu    sync.Mutex
	lines []string
	calls chan int // each announced index
}

func newEvents() *events { return &events{calls: make(chan int, 16)} }

func (e *events) observer() *provider.StreamObserver {
	return &provider.StreamObserver{
		OnText: func(d string) { e.add("text " + d) },
		OnToolCall: func(c provider.StreamCall) {
			e.add(fmt.Sprintf("call %d %s %s %s", c.Index, c.Block.ID, c.Block.Name, c.Block.Input))
			e.calls <- c.Index
		},
	}
}

func (e *events) add(l string) { e.mu.Lock(); e.lines = append(e.lines, l); e.mu.Unlock() }

func (e *events) got() []string { e.mu.Lock(); defer e.mu.Unlock(); return slices.Clone(e.lines) }

func streamReq() provider.Request {
	return provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText("read")}, Tools: tools}
}

// plainOf answers req with body through the plain Exchange.
func plainOf(t *testing.T, profile string, body string) provider.Outcome {
	t.Helper()
	s := newServer(t, 200, nil, body)
	return adapter(t, profile, s.URL).Exchange(context.Background(), streamReq())
}

// TestStreamInterleavedIndexes: the deltas of two calls alternate, ids and names first, then
// their arguments in pieces; the reply is the plain one and each call is announced once.
func TestStreamInterleavedIndexes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, so it runs after the servers' Close
	plain := plainOf(t, "openai", `{"choices":[{"message":{"role":"assistant","content":"Two.","tool_calls":[
	 {"id":"call_a","type":"function","function":{"name":"nika_read","arguments":"{\"path\":\"a.txt\"}"}},
	 {"id":"call_b","type":"function","function":{"name":"mcp_fs_read_text_file","arguments":"{\"path\":\"b.txt\",\"n\":2}"}}]},
	 "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`)
	s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		stream(w,
			delta(`{"role":"assistant","content":"Tw"}`),
			delta(`{"content":"o."}`),
			delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"nika_read","arguments":""}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"mcp_fs_read_text_file","arguments":""}}]}`),
			delta(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"pa"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\""}}]}`),
			delta(`{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"b.txt\","}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":":\"a.txt\"}"}}]}`),
			delta(`{"tool_calls":[{"index":1,"function":{"arguments":"\"n\":2}"}}]}`),
			finished("tool_calls"), usageChunk, "[DONE]")
	})
	ev := newEvents()
	o := adapter(t, "openai", s.URL).ExchangeStream(context.Background(), streamReq(), ev.observer())
	if !reflect.DeepEqual(o, plain) {
		t.Fatalf("streamed %+v\nwant plain %+v", o.Response, plain.Response)
	}
	want := []string{
		"text Tw", "text o.",
		`call 0 call_a nika:read {"path":"a.txt"}`, // complete when call 1's last fragment came
		`call 1 call_b mcp:fs/read_text_file {"path":"b.txt","n":2}`,
	}
	if got := ev.got(); !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
	if b := s.body(t, 0); b["stream"] != true || !reflect.DeepEqual(b["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("request stream = %v, stream_options = %v", b["stream"], b["stream_options"])
	}
}

// TestStreamAnnouncesCallBeforeNextArguments is the rendezvous: the server stops after the first
// delta of call 1 and goes on only once call 0 has been announced.
func TestStreamAnnouncesCallBeforeNextArguments(t *testing.T) {
	ev := newEvents()
	s := newSSEServer(t, func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		stream(w,
			delta(`{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"nika_read","arguments":"{\"path\":"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"nika_read","arguments":""}}]}`))
		select {
		case i := <-ev.calls:
			if i != 0 {
				t.Errorf("first announcement is call %d, want 0", i)
			}
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second): // a safety net against a hang, not a timing assertion
			t.Error("the call was not announced before the stream went on")
		}
		stream(w, delta(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"path\":\"b\"}"}}]}`), finished("tool_calls"), "[DONE]")
	})
	o := adapter(t, "openai", s.URL).ExchangeStream(context.Background(), streamReq(), ev.observer())
	if o.Err != nil || len(o.Response.Message.Blocks) != 2 {
		t.Fatalf("outcome = %+v", o)
	}
}

// TestStreamTolerantDeltas: deltas without an index, ids and names repeated on every delta (as
// some servers send them), usage on the finish chunk, SSE comments and unknown events.
func TestStreamTolerantDeltas(t *testing.T) {
	plain := plainOf(t, "ollama", `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[
	 {"id":"call_x","function":{"name":"nika_read","arguments":"{\"path\":\"x\"}"}},
	 {"id":"call_y","function":{"name":"nika_read","arguments":"{}"}}]},
	 "finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`)
	s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		stream(w,
			": OPENROUTER PROCESSING\n\n",
			delta(`{"role":"assistant","content":""}`),
			delta(`{"tool_calls":[{"id":"call_x","function":{"name":"nika_read","arguments":"{\"path\":"}}]}`),
			"event: ping\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"not text\"}}]}\n\n",
			delta(`{"tool_calls":[{"id":"call_x","function":{"name":"nika_read","arguments":"\"x\"}"}}]}`),
			delta(`{"tool_calls":[{"id":"call_y","function":{"name":"nika_read","arguments":"{}"}}]}`),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`,
			`{"choices":[{"index":1,"delta":{"content":"another choice"}}]}`,
			"[DONE]")
	})
	ev := newEvents()
	o := adapter(t, "ollama", s.URL).ExchangeStream(context.Background(), streamReq(), ev.observer())
	if !reflect.DeepEqual(o, plain) {
		t.Fatalf("streamed %+v %v\nwant plain %+v", o.Response, o.Err, plain.Response)
	}
	if got := ev.got(); len(got) != 2 || got[0] != `call 0 call_x nika:read {"path":"x"}` {
		t.Errorf("observed %q", got)
	}
}

// TestStreamReasoningAndRefusal: DeepSeek's reasoning_content and a refusal stream into the
// values the plain reply has.
func TestStreamReasoningAndRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, profile, plain string
		chunks               []string
	}{
		{"reasoning", "deepseek",
			`{"choices":[{"message":{"content":null,"reasoning_content":"Think first.","tool_calls":[{"id":"c1","function":{"name":"nika_read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			[]string{delta(`{"reasoning_content":"Think "}`), delta(`{"reasoning_content":"first.","content":null}`),
				delta(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"nika_read","arguments":"{}"}}]}`), finished("tool_calls"), "[DONE]"}},
		{"refusal with text", "openai",
			`{"choices":[{"message":{"content":"I can't","refusal":"No."},"finish_reason":"stop"}]}`,
			[]string{delta(`{"content":"I can't","refusal":"N"}`), delta(`{"refusal":"o."}`), finished("stop"), "[DONE]"}},
		{"refusal alone", "openai",
			`{"choices":[{"message":{"content":null,"refusal":"No way."},"finish_reason":"stop"}]}`,
			[]string{delta(`{"refusal":"No "}`), delta(`{"refusal":"way."}`), finished("stop"), "[DONE]"}},
		{"insufficient resources", "deepseek",
			`{"choices":[{"message":{"content":"par"},"finish_reason":"insufficient_system_resource"}]}`,
			[]string{delta(`{"content":"par"}`), finished("insufficient_system_resource"), "[DONE]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := plainOf(t, tc.profile, tc.plain)
			s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) { stream(w, tc.chunks...) })
			o := adapter(t, tc.profile, s.URL).ExchangeStream(context.Background(), streamReq(), nil)
			if !reflect.DeepEqual(o, plain) {
				t.Errorf("streamed %+v %+v\nwant plain %+v %+v", o.Response, o.Err, plain.Response, plain.Err)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		reason string
		msg    string
	}{
		{"no [DONE]", []string{delta(`{"content":"hi"}`), finished("stop"), usageChunk}, provider.ReasonNetwork, "ended before [DONE]"},
		{"cut inside an event", []string{delta(`{"content":"hi"}`), "data: {\"choi"}, provider.ReasonNetwork, "ended before [DONE]"},
		{"malformed chunk", []string{"{not json", "[DONE]"}, provider.ReasonServerError, "malformed JSON chunk"},
		{"no choices", []string{usageChunk, "[DONE]"}, provider.ReasonServerError, "no choices"},
		{"error chunk", []string{delta(`{"content":"hi"}`), `{"error":{"message":"Rate limit exceeded","code":429}}`}, provider.ReasonRateLimited, "(error 429)"},
		{"error event", []string{"event: error\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":503}}\n\n"}, provider.ReasonServerError, "overloaded"},
		{"a call changed after it was complete", []string{
			delta(`{"tool_calls":[{"index":0,"id":"c0","function":{"name":"nika_read","arguments":"{}"}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"c1","function":{"name":"nika_read","arguments":"{}"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`),
			finished("tool_calls"), "[DONE]"}, provider.ReasonServerError, "changed tool call 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) { stream(w, tc.chunks...) })
			o := adapter(t, "openai", s.URL).ExchangeStream(context.Background(), streamReq(), nil)
			if o.Err == nil || provider.ReasonOf(o.Err) != tc.reason || !strings.Contains(o.Err.Message, tc.msg) {
				t.Fatalf("outcome = %+v %v, want %s containing %q", o.Response, o.Err, tc.reason, tc.msg)
			}
			if o.Err.Transient != provider.Transient(tc.reason) || o.Err.Details["status"] != 200 {
				t.Errorf("transient = %v, status = %v", o.Err.Transient, o.Err.Details["status"])
			}
		})
	}
}

// TestStreamErrorLikePlain: an error chunk is classified, and worded, as the same body in a plain
// 200 reply.
func TestStreamErrorLikePlain(t *testing.T) {
	body := `{"error":{"message":"Upstream overloaded","code":502}}`
	s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, req []byte) {
		if !strings.Contains(string(req), `"stream":true`) {
			io.WriteString(w, body)
			return
		}
		stream(w, delta(`{"content":"a"}`), body)
	})
	plain := adapter(t, "openrouter", s.URL).Exchange(context.Background(), streamReq())
	o := adapter(t, "openrouter", s.URL).ExchangeStream(context.Background(), streamReq(), nil)
	if o.Err == nil || plain.Err == nil || o.Err.Message != plain.Err.Message || !reflect.DeepEqual(o.Err.Details, plain.Err.Details) {
		t.Errorf("streamed %v %v\nplain %v %v", o.Err, o.Err.Details, plain.Err, plain.Err.Details)
	}
}

// TestStreamRefusedFallsBack: a server that answers the streamed form with a 400 naming stream
// gets the plain request at once, and only plain requests afterwards.
func TestStreamRefusedFallsBack(t *testing.T) {
	for _, refusal := range []string{
		`{"error":{"message":"stream is not supported for this model","type":"invalid_request_error"}}`,
		`{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted"}]},"type":"invalid_request_error"}`,
	} {
		s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, body []byte) {
			if strings.Contains(string(body), `"stream":true`) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, refusal)
				return
			}
			io.WriteString(w, textReply)
		})
		a := adapter(t, "vllm", s.URL)
		ev := newEvents()
		for range 2 {
			if o := a.ExchangeStream(context.Background(), streamReq(), ev.observer()); o.Err != nil || provider.Text(o.Response.Message) != "Hello there." {
				t.Fatalf("outcome = %+v", o)
			}
		}
		if s.body(t, 0)["stream"] != true || s.body(t, 1)["stream"] != nil || len(s.bodies) != 3 || s.body(t, 2)["stream"] != nil {
			t.Errorf("%d requests; want a streamed one refused, then plain ones", len(s.bodies))
		}
	}
	// An unrelated 400 (upstream, not stream) is the failure it is.
	s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"upstream rejected the prompt","type":"invalid_request_error"}}`)
	})
	if o := adapter(t, "vllm", s.URL).ExchangeStream(context.Background(), streamReq(), nil); provider.ReasonOf(o.Err) != provider.ReasonBadRequest || len(s.bodies) != 1 {
		t.Errorf("outcome = %+v after %d requests, want bad_request after 1", o.Err, len(s.bodies))
	}
}

// TestStreamPlainAnswer: a server that ignores "stream" and answers JSON is read as a plain reply.
func TestStreamPlainAnswer(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	plain := adapter(t, "openai", s.URL).Exchange(context.Background(), streamReq())
	o := adapter(t, "openai", s.URL).ExchangeStream(context.Background(), streamReq(), nil)
	if !reflect.DeepEqual(o, plain) {
		t.Errorf("outcome = %+v, want %+v", o, plain)
	}
}

// TestStreamRequestBodies: the streamed request is the plain one plus stream and, where the
// profile allows it, stream_options; a NoStream profile sends the plain request.
func TestStreamRequestBodies(t *testing.T) {
	s := newSSEServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		stream(w, delta(`{"content":"ok"}`), finished("stop"), "[DONE]")
	})
	temp := 0.2
	r := provider.Request{Model: "openai/gpt-4o-mini", System: "Answer briefly.", Messages: []provider.Message{provider.UserText("Hi")},
		Temperature: &temp, MaxTokens: 100}
	mustOK(t, adapter(t, "openai", s.URL).ExchangeStream(context.Background(), r, nil))
	golden(t, "stream", s.bodies[0])

	mustOK(t, adapter(t, "mistral", s.URL).ExchangeStream(context.Background(), r, nil))
	if b := s.body(t, 1); b["stream"] != true || b["stream_options"] != nil {
		t.Errorf("mistral: stream = %v, stream_options = %v; want true and none (it refuses unknown fields)", b["stream"], b["stream_options"])
	}

	plain := newServer(t, 200, nil, textReply)
	a := adapter(t, "openai", plain.URL)
	a.Profile.NoStream = true
	mustOK(t, a.ExchangeStream(context.Background(), r, nil))
	if strings.Contains(string(plain.lastBody(t)), "stream") {
		t.Errorf("NoStream: body %s asks for a stream", plain.lastBody(t))
	}
}
