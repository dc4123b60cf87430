package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Black-box tests of the per-provider engine configuration (issue 13 items 2 and 3):
// NIKA_<PROVIDER>_MAX_INFLIGHT, _RPM, _TPM and _STREAM are read by `nika run` before anything runs, and
// the in-flight cap holds on the wire.

// pairServer is a fake OpenAI-compatible server that holds each chat completion until `pair`
// requests are being handled at once (or every one of `total` has arrived), so a client that
// may send more at once does, and records the most it ever handled at the same time and the
// connections it accepted. Each answer is the request's last user message, prefixed "re: ".
type pairServer struct {
	*httptest.Server
	pair, total int

	mu       sync.Mutex
	arrived  int
	inFlight int
	gate     chan struct{} // closed to let the held requests answer
	peak     atomic.Int64  // the most requests handled at once
	conns    atomic.Int64  // connections accepted
}

func newPairServer(t *testing.T, pair, total int) *pairServer {
	t.Helper()
	s := &pairServer{pair: pair, total: total, gate: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.arrived++
		s.inFlight++
		if n := int64(s.inFlight); n > s.peak.Load() {
			s.peak.Store(n)
		}
		gate := s.gate
		if s.inFlight >= s.pair || s.arrived >= s.total {
			close(s.gate)
			s.gate = make(chan struct{})
		}
		s.mu.Unlock()
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		select {
		case <-gate:
		case <-r.Context().Done():
		}
		prompt := ""
		for _, m := range body.Messages {
			if m.Role == "user" {
				prompt = fmt.Sprint(m.Content)
			}
		}

		// Counted out before the answer is written, so a request the client sends once it has
		// this answer is never counted together with this one.
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, "re: "+prompt)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *pairServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived
}

// fanOutYAML is a for_each of n infer iterations on openai.
func fanOutYAML(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i + 1)
	}
	return `nika: v1
workflow: fan-out
tasks:
  - id: ask
    for_each: [` + strings.Join(items, ", ") + `]
    infer:
      model: openai/gpt-4o-mini
      prompt: "item ${{ item }}"
outputs:
  answers: ${{ tasks.ask.output }}
`
}

// A bad engine variable is an environment error before anything runs: exit 3, the variable, its
// value and what is expected on stderr, and no request sent.
func TestRunRefusesABadEngineVariable(t *testing.T) {
	for _, tt := range []struct{ variable, value, want string }{
		{"NIKA_OPENAI_MAX_INFLIGHT", "abc", "requests in flight"},
		{"NIKA_OPENAI_MAX_INFLIGHT", "0", "requests in flight"},
		{"NIKA_OPENAI_RPM", "-1", "requests per minute"},
		{"NIKA_OPENAI_TPM", "1.5e6", "tokens per minute"},
		{"NIKA_OPENAI_STREAM", "maybe", "whether replies from openai are streamed"},
	} {
		t.Run(tt.variable+"="+tt.value, func(t *testing.T) {
			s := newPairServer(t, 1, 1)
			r := runYAML(t, fanOutYAML(2), nil, "OPENAI_BASE_URL="+s.URL+"/v1", "OPENAI_API_KEY=sk-config-test-key",
				tt.variable+"="+tt.value)
			if r.code != 3 {
				t.Fatalf("exit %d, want 3; stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			for _, part := range []string{tt.variable, fmt.Sprintf("%q", tt.value), tt.want, `task "ask"`} {
				if !strings.Contains(r.stderr, part) {
					t.Errorf("stderr %q does not contain %q", r.stderr, part)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing on exit 3", r.stdout)
			}
			if n := s.requests(); n != 0 {
				t.Errorf("the server got %d requests, want none (the environment is checked first)", n)
			}
		})
	}
}

// NIKA_OPENAI_MAX_INFLIGHT=2 caps the requests in flight to openai: a for_each of 24 infer
// iterations, against a server that holds each request until 2 are waiting, never has more than
// 2 at once nor opens more than 2 connections, and every iteration gets its own answer in item
// order. Budgets set alongside are accepted.
func TestRunMaxInFlightCapsTheWire(t *testing.T) {
	const n = 24
	s := newPairServer(t, 2, n)
	r := runYAML(t, fanOutYAML(n), nil, "OPENAI_BASE_URL="+s.URL+"/v1", "OPENAI_API_KEY=sk-config-test-key",
		"NIKA_OPENAI_MAX_INFLIGHT=2", "NIKA_OPENAI_RPM=100000", "NIKA_OPENAI_TPM=100000000")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var out struct{ Answers []string }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if len(out.Answers) != n {
		t.Fatalf("answers %q, want %d", out.Answers, n)
	}
	for i, a := range out.Answers {
		if want := fmt.Sprintf("re: item %d", i+1); a != want {
			t.Errorf("answer %d = %q, want %q", i, a, want)
		}
	}
	if got := s.requests(); got != n {
		t.Errorf("the server got %d requests, want %d", got, n)
	}
	if p := s.peak.Load(); p > 2 || p < 1 {
		t.Errorf("at most %d requests in flight at once with NIKA_OPENAI_MAX_INFLIGHT=2, want 1..2", p)
	}
	// A request is sent only once an earlier one's answer is read, and the client keeps as many
	// idle connections as may be in flight: the two connections serve the whole run. (Without the
	// cap, the first tick alone sends the limiter's initial limit at once, each request on a
	// connection of its own.)
	if c := s.conns.Load(); c > 2 || c < 1 {
		t.Errorf("%d connections for %d requests with NIKA_OPENAI_MAX_INFLIGHT=2, want 1..2 (reused)", c, n)
	}
}
