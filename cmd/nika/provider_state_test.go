package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// watchedYAML is one infer task on an OpenAI-compatible provider (OPENAI_BASE_URL).
const watchedYAML = `nika: v1
workflow: watched
tasks:
  - id: ask
    infer: { prompt: "hello", model: openai/gpt-test }
outputs:
  answer: ${{ tasks.ask.output }}
`

const watchedAnswer = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`

// `nika run --pushgateway` of a run whose provider answered 429 once and then 200: the pushed metrics
// have the provider's four limiter series — the 429 counted as a rate-limited answer, nothing left
// in flight or waiting — while nika_llm_rate_limited_total, requests that ended rate limited, has
// none.
func TestRunPushesProviderLimiterSeries(t *testing.T) {
	var mu sync.Mutex
	sends := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sends++
		first := sends == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
			return
		}
		io.WriteString(w, watchedAnswer)
	}))
	defer srv.Close()
	var body string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = string(b)
		mu.Unlock()
	}))
	defer gw.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "watched.nika.yaml"), watchedYAML)
	r := runBinaryEnv(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"},
		"run", "watched.nika.yaml", "--no-trace", "--quiet", "--pushgateway", gw.URL)
	if r.code != 0 || r.stdout != `{"answer":"hi"}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if sends != 2 {
		t.Errorf("%d sends, want 2 (a 429, then the answer)", sends)
	}
	for _, want := range []string{
		`nika_provider_rate_limited_total{provider="openai"} 1`,
		`nika_provider_requests_in_flight{provider="openai"} 0`,
		`nika_provider_requests_waiting{provider="openai"} 0`,
		`# TYPE nika_provider_rate_limited_total counter`,
		`# TYPE nika_provider_requests_waiting gauge`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the pushed body lacks %q:\n%s", want, body)
		}
	}
	if !regexp.MustCompile(`(?m)^nika_provider_concurrency_limit\{provider="openai"\} [1-9]\d*$`).MatchString(body) {
		t.Errorf("the pushed body lacks the openai concurrency limit:\n%s", body)
	}
	if strings.Contains(body, `nika_llm_rate_limited_total{provider="openai"}`) {
		t.Errorf("the request ended well, yet counts as rate limited:\n%s", body)
	}
}

// `nika serve`'s /metrics has the four limiter series of each provider it built (the ones that need
// no key, here), as one snapshot per provider.
func TestServeMetricsProviderLimiterSeries(t *testing.T) {
	s := startServe(t, t.TempDir())
	code, body := s.do("GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	limits := regexp.MustCompile(`(?m)^nika_provider_concurrency_limit\{provider="([^"]+)"\} [1-9]\d*$`).FindAllStringSubmatch(body, -1)
	if len(limits) == 0 {
		t.Fatalf("/metrics has no provider concurrency limit:\n%s", body)
	}
	for _, m := range limits {
		for _, want := range []string{
			`nika_provider_requests_in_flight{provider="` + m[1] + `"} 0`,
			`nika_provider_requests_waiting{provider="` + m[1] + `"} 0`,
			`nika_provider_rate_limited_total{provider="` + m[1] + `"} 0`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q:\n%s", want, body)
			}
		}
	}
}
