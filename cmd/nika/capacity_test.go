package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/provider/providertest"
)

// capacityAgent answers a scripted two-turn agent behind a providertest.Capacity: a request
// without tool results gets a call to nika:hash of the item named in the prompt; one with tool
// results gets the final answer "done <item>".
type capacityAgent struct {
	mu                 sync.Mutex
	toolTurns, answers int
	unknown            []string // prompts with no item, for the failure message
}

var capacityItem = regexp.MustCompile(`\bi[0-9]{3}\b`)

// newCapacityServer is an OpenAI-compatible provider serving limit requests at once (0: any
// number) with latency, and answering 429 with retry-after-ms: 200 (the hint OpenAI's API sends,
// WIRES.md §4.4: one round trip here) to a request that arrives while limit are being served.
func newCapacityServer(limit int, latency time.Duration) (*providertest.Capacity, *capacityAgent) {
	a := &capacityAgent{}
	return &providertest.Capacity{Limit: limit, Latency: latency, Refusal: http.Header{"Retry-After-Ms": {"200"}}, Next: a}, a
}

func (s *capacityAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(b, &req)
	item, results := "", false
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			var text string
			if json.Unmarshal(m.Content, &text) == nil && item == "" {
				item = capacityItem.FindString(text)
			}
		case "tool":
			results = true
		}
	}
	if item == "" {
		s.mu.Lock()
		s.unknown = append(s.unknown, string(b))
		s.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"no item in the prompt","type":"invalid_request_error"}}`)
		return
	}
	s.mu.Lock()
	if results {
		s.answers++
	} else {
		s.toolTurns++
	}
	s.mu.Unlock()
	if !results {
		fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"call_1","type":"function","function":{"name":"nika_hash","arguments":"{\"content\":\"%s\"}"}}]}}],`+
			`"usage":{"prompt_tokens":30,"completion_tokens":10,"total_tokens":40}}`, item)
		return
	}
	fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done %s"}}],`+
		`"usage":{"prompt_tokens":60,"completion_tokens":2,"total_tokens":62}}`, item)
}

// nika run of a for_each over 500 agent iterations, two turns each (1,000 requests), against a
// provider that serves 64 requests at once with 200 ms latency and answers 429 above that: the run
// succeeds, the outputs are in item order, and it takes at most 1.5 times the capacity bound.
//
// The capacity bound is 1,000 requests / (64 / 200 ms) = 3.125 s; 1.5 times that is 4.69 s. The
// wall time is measured from the process start, so the bound adds what the same run costs against
// a server with no limit and no latency, measured just before on the same machine (the binary's
// start, the checker, 500 agents' own work: about 0.4 s on a quiet machine, more under load). BenchmarkCapacity (provider/openai) measures
// the limiter against the harder Retry-After: 1, whose pause of every send the slow start's one
// overshoot costs.
func TestRunForEachAgentUsesProviderCapacity(t *testing.T) {
	const (
		items    = 500
		capacity = 64
		latency  = 200 * time.Millisecond
		requests = 2 * items
	)
	capBound := time.Duration(float64(requests) / capacity * float64(latency))

	names := make([]string, items)
	quoted := make([]string, items)
	want := make([]string, items)
	for i := range items {
		names[i] = fmt.Sprintf("i%03d", i)
		quoted[i] = `"` + names[i] + `"`
		want[i] = "done " + names[i]
	}
	dir := t.TempDir()
	wf := `nika: v1
workflow: capacity
model: openai/gpt-test
tasks:
  - id: each
    for_each: [` + strings.Join(quoted, ", ") + `]
    agent:
      prompt: "Hash item ${{ item }}, then answer."
      tools: ["nika:hash"]
      max_turns: 4
outputs:
  answers: ${{ tasks.each.output }}
`
	if err := os.WriteFile(filepath.Join(dir, "capacity.nika.yaml"), []byte(wf), 0o644); err != nil {
		t.Fatal(err)
	}

	run := func(fake http.Handler) (result, time.Duration) {
		srv := httptest.NewServer(fake)
		defer srv.Close()
		start := time.Now()
		r := runBinaryEnv(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"},
			"run", "capacity.nika.yaml", "--no-trace", "--quiet")
		return r, time.Since(start)
	}
	unlimited, _ := newCapacityServer(0, 0)
	if r, _ := run(unlimited); r.code != 0 {
		t.Fatalf("warm-up run: exit %d\nstderr: %s", r.code, r.stderr)
	}
	_, baseline := run(unlimited)
	bound := capBound*3/2 + baseline

	fake, agent := newCapacityServer(capacity, latency)
	r, took := run(fake)

	c := fake.Counts()
	agent.mu.Lock()
	stats := fmt.Sprintf("server: %d requests, %d answered 429, %d tool turns, %d final answers, at most %d in flight",
		c.Sends, c.Refused, agent.toolTurns, agent.answers, c.MaxInFlight)
	unknown := agent.unknown
	agent.mu.Unlock()
	t.Logf("nika run took %v (bound %v: 1.5 × %v + the unlimited run's %v); %s", took.Round(time.Millisecond), bound, capBound, baseline.Round(time.Millisecond), stats)
	if len(unknown) > 0 {
		t.Errorf("%d requests named no item; the first: %s", len(unknown), unknown[0])
	}
	if r.code != 0 {
		t.Fatalf("exit %d; %s\nstderr: %s", r.code, stats, r.stderr)
	}
	var out struct {
		Answers []string `json:"answers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout is not the outputs JSON: %v\n%s", err, r.stdout)
	}
	if len(out.Answers) != items {
		t.Fatalf("%d answers, want %d:\n%s", len(out.Answers), items, r.stdout)
	}
	for i, a := range out.Answers {
		if a != want[i] {
			t.Errorf("answers[%d] = %q, want %q", i, a, want[i])
		}
	}
	if took > bound {
		t.Errorf("nika run took %v, more than 1.5 × the capacity bound %v + the unlimited run's %v = %v; %s",
			took.Round(time.Millisecond), capBound, baseline.Round(time.Millisecond), bound, stats)
	}
}
