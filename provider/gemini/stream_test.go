package gemini

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

// duplex answers generateContent with plain and streamGenerateContent by stream; it records the
// paths and queries asked for.
func duplex(t *testing.T, plain string, stream func(w http.ResponseWriter, r *http.Request)) (*Adapter, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		asked = append(asked, r.URL.EscapedPath()+"?"+r.URL.RawQuery+" accept="+r.Header.Get("Accept"))
		mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			w.Header().Set("content-type", "application/json; charset=UTF-8")
			io.WriteString(w, plain)
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		stream(w, r)
	}))
	t.Cleanup(srv.Close)
	return &Adapter{BaseURL: srv.URL, Key: secret, Client: srv.Client()}, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// chunks writes each as a "data:" event, flushed; a chunk is its candidate's parts (a JSON
// array), optionally followed by "|" and the rest of the candidate and "|" and the top level.
func chunks(w http.ResponseWriter, cs ...string) {
	for _, c := range cs {
		parts, rest, _ := strings.Cut(c, "|")
		cand, top, _ := strings.Cut(rest, "|")
		body := `{"candidates":[{"content":{"role":"model","parts":` + parts + `},"index":0` + cand + `}]` + top + `}`
		if parts == "" {
			body = `{` + strings.TrimPrefix(top, ",") + `}`
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", body)
		w.(http.Flusher).Flush()
	}
}

func streamReq() provider.Request {
	return provider.Request{Model: "gemini/gemini-2.5-flash", Messages: []provider.Message{provider.UserText("Weather?")},
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
			h.lines = append(h.lines, fmt.Sprintf("call %d %s %s %s %s", c.Index, c.Block.ID, c.Block.Name, c.Block.Input, c.Block.ProviderData))
			h.mu.Unlock()
			h.calls <- c.Index
		},
	}
}

// TestStreamSignaturesAndThoughts: text pieces whose signature comes on a last empty piece,
// thought parts between them, calls with and without ids and signatures, a bare signature part,
// usage growing chunk by chunk: the streamed reply is the plain one.
func TestStreamSignaturesAndThoughts(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first: runs after the server's Close
	plain := `{"candidates":[{"content":{"role":"model","parts":[
		{"text":"Let me think.","thought":true},
		{"text":"Looking — 日本. More text.","thoughtSignature":"textSig"},
		{"functionCall":{"name":"nika_read","args":{"path":"a.txt"}},"thoughtSignature":"callSig"},
		{"functionCall":{"id":"fc2","name":"nika_read","args":{"path":"b.txt","n":12345678901234567890}}},
		{"thoughtSignature":"bareSig"}]},
		"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":40,"thoughtsTokenCount":12,"totalTokenCount":152}}`
	a, asked := duplex(t, plain, func(w http.ResponseWriter, _ *http.Request) {
		chunks(w,
			`[{"text":"Let me ","thought":true}]||,"usageMetadata":{"promptTokenCount":100}`,
			`[{"text":"think.","thought":true}]`,
			`[{"text":"Look"}]`,
			`[{"text":"ing — 日本. "}]`,
			`[{"text":"More "},{"text":"text."}]`,
			`[{"text":"","thoughtSignature":"textSig"}]`,
			`[{"functionCall":{"name":"nika_read","args":{"path":"a.txt"}},"thoughtSignature":"callSig"}]`,
			`[{"functionCall":{"id":"fc2","name":"nika_read","args":{"path":"b.txt","n":12345678901234567890}}}]`,
			`[{"thoughtSignature":"bareSig"}]|,"finishReason":"STOP"|,"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":40,"thoughtsTokenCount":12,"totalTokenCount":152}`)
	})
	want := a.Exchange(context.Background(), streamReq())
	h := newHeard()
	got := a.ExchangeStream(context.Background(), streamReq(), h.observer())
	if want.Err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed %s %v\nwant plain %s %v", dump(got.Response), got.Err, dump(want.Response), want.Err)
	}
	wantHeard := []string{"text Look", "text ing — 日本. ", "text More ", "text text.",
		`call 0 gemini-call-1-0 nika:read {"path":"a.txt"} {"gemini":{"thoughtSignature":"callSig","localId":true}}`,
		`call 1 fc2 nika:read {"path":"b.txt","n":12345678901234567890} `}
	if !slices.Equal(h.lines, wantHeard) {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(h.lines, "\n"), strings.Join(wantHeard, "\n"))
	}
	if q := asked(); len(q) != 2 || q[1] != "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse accept=text/event-stream" {
		t.Errorf("asked %q", q)
	}
}

func dump(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestStreamSignatureFirst: a signature on the first piece of a text (as Gemini 3 sends the
// first part's) stays on the one part the pieces make; a second signature starts a new part.
func TestStreamSignatureFirst(t *testing.T) {
	plain := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello there.","thoughtSignature":"s1"},
		{"text":"Again.","thoughtSignature":"s2"}]},"finishReason":"STOP","index":0}]}`
	a, _ := duplex(t, plain, func(w http.ResponseWriter, _ *http.Request) {
		chunks(w, `[{"text":"Hel","thoughtSignature":"s1"}]`, `[{"text":"lo there."}]`, `[{"text":"Again.","thoughtSignature":"s2"}]|,"finishReason":"STOP"`)
	})
	want := a.Exchange(context.Background(), streamReq())
	if got := a.ExchangeStream(context.Background(), streamReq(), nil); want.Err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("streamed %s\nwant plain %s", dump(got.Response), dump(want.Response))
	}
}

// TestStreamAnnouncesEachCall is the rendezvous: the server stops after the first call's chunk
// and goes on only once it has been announced.
func TestStreamAnnouncesEachCall(t *testing.T) {
	h := newHeard()
	a, _ := duplex(t, "", func(w http.ResponseWriter, r *http.Request) {
		chunks(w, `[{"functionCall":{"id":"a","name":"nika_read","args":{}}}]`)
		select {
		case <-h.calls:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second): // a safety net against a hang, not a timing assertion
			t.Error("the call was not announced before the stream went on")
		}
		chunks(w, `[{"functionCall":{"id":"b","name":"nika_read","args":{}}}]|,"finishReason":"STOP"`)
	})
	o := a.ExchangeStream(context.Background(), streamReq(), h.observer())
	if o.Err != nil || o.Response.StopReason != provider.StopToolUse || len(h.lines) != 2 {
		t.Fatalf("outcome %+v %v, observed %q", o.Response, o.Err, h.lines)
	}
}

// TestStreamLikePlain: blocked prompts, filtered replies and error chunks end as the same
// outcome as the plain reply with the same content.
func TestStreamLikePlain(t *testing.T) {
	for _, tc := range []struct {
		name, plain string
		chunks      []string
		reason      string
	}{
		{"blocked prompt", `{"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"no"}}`,
			[]string{`||,"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"no"}`}, provider.ReasonContentFilter},
		{"filtered reply", `{"candidates":[{"content":{"role":"model","parts":[{"text":" "}]},"finishReason":"SAFETY","finishMessage":"blocked","index":0}]}`,
			[]string{`[{"text":" "}]`, `[]|,"finishReason":"SAFETY","finishMessage":"blocked"`}, provider.ReasonContentFilter},
		{"error chunk", `{"error":{"code":429,"message":"Resource exhausted. Please retry in 2s.","status":"RESOURCE_EXHAUSTED"}}`,
			[]string{`[{"text":"par"}]`, `||,"error":{"code":429,"message":"Resource exhausted. Please retry in 2s.","status":"RESOURCE_EXHAUSTED"}`}, provider.ReasonRateLimited},
		{"max tokens", `{"candidates":[{"content":{"role":"model","parts":[{"text":"cut sh"}]},"finishReason":"MAX_TOKENS","index":0}]}`,
			[]string{`[{"text":"cut "}]`, `[{"text":"sh"}]|,"finishReason":"MAX_TOKENS"`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := duplex(t, tc.plain, func(w http.ResponseWriter, _ *http.Request) { chunks(w, tc.chunks...) })
			want := a.Exchange(context.Background(), streamReq())
			got := a.ExchangeStream(context.Background(), streamReq(), nil)
			if tc.reason != "" && (got.Err == nil || provider.ReasonOf(got.Err) != tc.reason) {
				t.Fatalf("outcome %+v %v, want %s", got.Response, got.Err, tc.reason)
			}
			if got.Err != nil { // the message names the route: the plain one's differs there only
				got.Err.Message = strings.Replace(got.Err.Message, ":streamGenerateContent?…", ":generateContent", 1)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("streamed %+v %v\nwant plain %+v %v", got.Response, got.Err, want.Response, want.Err)
			}
		})
	}
}

func TestStreamCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		tail   string
		reason string
		msg    string
	}{
		{"no finishReason", []string{`[{"text":"Hel"}]`, `[{"text":"lo"}]`}, "", provider.ReasonNetwork, "ended before a finishReason"},
		{"inside a chunk", []string{`[{"text":"Hel"}]`}, `data: {"candidates":[{"conte`, provider.ReasonNetwork, "ended before a finishReason"},
		{"malformed chunk", nil, "data: {oops\n\n", provider.ReasonServerError, "malformed chunk"},
		{"args not an object", []string{`[{"functionCall":{"name":"nika_read","args":[1]}}]|,"finishReason":"STOP"`}, "", provider.ReasonServerError, "functionCall args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeard()
			a, _ := duplex(t, "", func(w http.ResponseWriter, _ *http.Request) {
				chunks(w, tc.chunks...)
				io.WriteString(w, tc.tail)
			})
			o := a.ExchangeStream(context.Background(), streamReq(), h.observer())
			if o.Err == nil || provider.ReasonOf(o.Err) != tc.reason || !strings.Contains(o.Err.Message, tc.msg) {
				t.Fatalf("outcome %+v %v, want %s containing %q", o.Response, o.Err, tc.reason, tc.msg)
			}
			if len(h.calls) != 0 {
				t.Errorf("announced %q", h.lines)
			}
		})
	}
}
