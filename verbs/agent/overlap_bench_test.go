package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/workflow"
)

// paced is a scripted OpenAI-compatible server (issue 17's benchmark): the first turn's reply
// completes tool call k at (k+1)·step after the request arrived, 4 calls in all, streamed as SSE
// when asked (call k's arguments and call k+1's first delta together, which is when the wire tells
// that call k is whole), else answered plain once the last call would be written; the next turn is
// a final answer at once. It records when each job's first request arrived.
type paced struct {
	step time.Duration
	mu   sync.Mutex
	t0   time.Time
}

func (s *paced) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Messages) > 1 { // the second turn: the final answer
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
		return
	}
	start := time.Now()
	s.mu.Lock()
	s.t0 = start
	s.mu.Unlock()
	args := func(k int) string { return fmt.Sprintf(`{\"content\":\"%d\"}`, k) }
	if !req.Stream {
		time.Sleep(4 * s.step)
		var calls []string
		for k := range 4 {
			calls = append(calls, fmt.Sprintf(`{"id":"c%d","type":"function","function":{"name":"nika_hash","arguments":"%s"}}`, k, args(k)))
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s]},"finish_reason":"tool_calls"}]}`, strings.Join(calls, ","))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	header := func(k int) string {
		return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","type":"function","function":{"name":"nika_hash","arguments":""}}]}}]}`+"\n\n", k, k)
	}
	io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}`+"\n\n"+header(0))
	fl.Flush()
	for k := range 4 {
		time.Sleep(time.Until(start.Add(time.Duration(k+1) * s.step)))
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"%s"}}]}}]}`+"\n\n", k, args(k))
		if k < 3 {
			io.WriteString(w, header(k+1))
		} else {
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
		}
		fl.Flush()
	}
}

// BenchmarkOverlapPacedTurn is issue 17's acceptance benchmark: 4 tool calls completed at 100,
// 200, 300 and 400 ms of the turn, the first tool taking 1,000 ms and the others 50 ms, through
// the real OpenAI-compatible adapter and Front against a local SSE server. ms-ready is the time
// from the turn's request reaching the server to the last of the four results: about 1,100 ms
// streamed (tool 0 starts at 100 ms), 1,400 ms plain (NIKA_OPENAI_STREAM=0: the tools start once
// the reply is whole, at 400 ms).
func BenchmarkOverlapPacedTurn(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noStream bool
	}{{"streamed", false}, {"plain", true}} {
		b.Run(mode.name, func(b *testing.B) {
			srv := &paced{step: 100 * time.Millisecond}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			prof, _ := openai.Lookup("openai")
			a, err := openai.New(prof, func(k string) (string, bool) {
				return map[string]string{"NIKA_OPENAI_API_KEY": "sk-bench", "NIKA_OPENAI_BASE_URL": hs.URL + "/v1"}[k], true
			}, hs.Client())
			if err != nil {
				b.Fatal(err)
			}
			reg := provider.NewRegistry()
			reg.Register("openai", provider.NewFront("openai", a, provider.FrontConfig{NoStream: mode.noStream}))
			var (
				mu    sync.Mutex
				ready time.Time
				n     int
			)
			v := &Verb{Providers: reg, Builtins: tools.NewBuiltins(), Config: Config{MaxParallelTools: 8}}
			v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
				d := 50 * time.Millisecond
				if c.Index == 0 {
					d = time.Second
				}
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return "", nil, ctx.Err()
				}
				mu.Lock()
				defer mu.Unlock()
				if now := time.Now(); now.After(ready) {
					ready = now
				}
				n++
				return "ok", nil, nil
			}
			var total time.Duration
			for b.Loop() {
				mu.Lock()
				ready, n = time.Time{}, 0
				mu.Unlock()
				job := workflow.Job{Verb: "agent", Model: "openai/gpt-bench", Attempt: 1, Iteration: -1,
					Fields: map[string]any{"prompt": "hash four things", "tools": []any{"**"}}}
				if out := v.Run(context.Background(), job); out.Err != nil || out.Output != "done" {
					b.Fatalf("output %v, err %v", out.Output, out.Err)
				}
				mu.Lock()
				srv.mu.Lock()
				if n != 4 {
					b.Fatalf("%d tool calls ran, want 4", n)
				}
				total += ready.Sub(srv.t0)
				srv.mu.Unlock()
				mu.Unlock()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-ready")
		})
	}
}
