package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/spec"
)

type fixed struct{ text string }

func (f fixed) Complete(_ context.Context, reqs []Request) []Outcome {
	out := make([]Outcome, len(reqs))
	for i := range out {
		out[i] = Outcome{Response: &Response{Message: Message{Role: RoleAssistant, Blocks: []Block{TextBlock(f.text)}}}}
	}
	return out
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	mock := NewMock()
	r.Register("mock", mock)
	if p, err := r.For("mock/echo"); err != nil || p != Provider(mock) {
		t.Fatalf("For(mock/echo) = %v, %v", p, err)
	}
	// The registry routes by prefix; the instance decides about the name.
	if p, err := r.For("mock/other"); err != nil || p != Provider(mock) {
		t.Fatalf("For(mock/other) = %v, %v", p, err)
	}
	// Names may contain '/', ':' and '.'.
	r.Register("openrouter", fixed{"or"})
	if p, err := r.For("openrouter/meta-llama/llama-3.3-70b"); err != nil || p.(fixed).text != "or" {
		t.Fatalf("For(openrouter/…) = %v, %v", p, err)
	}

	p, err := r.For("openai/gpt-4o")
	if p != nil || err == nil || ReasonOf(err) != ReasonModelNotFound || err.Details["provider"] != "openai" ||
		err.Details["model"] != "openai/gpt-4o" || err.Transient {
		t.Errorf("unregistered: %v, %+v", p, err)
	}
	for _, bad := range []string{"", "gpt-4o", "/x", "openai/", "openai/gpt 4o"} {
		p, err := r.For(bad)
		if p != nil || err == nil || ReasonOf(err) != ReasonBadRequest {
			t.Errorf("For(%q) = %v, %+v", bad, p, err)
		}
	}

	r.Register("openai", fixed{"a"})
	r.Register("openai", fixed{"b"}) // replaces
	if p, _ := r.For("openai/gpt-4o"); p.(fixed).text != "b" {
		t.Errorf("Register did not replace")
	}
	r.Register("openai", nil) // removes
	if p, err := r.For("openai/gpt-4o"); p != nil || err == nil {
		t.Errorf("Register(nil) did not remove")
	}

	// Two registries share nothing.
	if _, err := NewRegistry().For("mock/echo"); err == nil {
		t.Error("a new registry is not empty")
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	r.Register("mock", NewMock())
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%8 == 0 {
				r.Register("ollama", fixed{"x"})
				return
			}
			p, err := r.For("mock/echo")
			if err != nil {
				t.Error(err)
				return
			}
			if out := p.Complete(context.Background(), []Request{{Model: MockModel, Messages: []Message{UserText("hi")}}}); Text(out[0].Response.Message) != "hi" {
				t.Errorf("got %+v", out[0])
			}
		}()
	}
	wg.Wait()
}

func TestFailure(t *testing.T) {
	for reason, transient := range map[string]bool{
		ReasonRateLimited: true, ReasonServerError: true, ReasonNetwork: true, ReasonTimeout: true,
		ReasonAuthFailed: false, ReasonModelNotFound: false, ReasonBadRequest: false,
		ReasonContentFilter: false, ReasonCancelled: false, ReasonQuotaExceeded: false,
	} {
		if Transient(reason) != transient {
			t.Errorf("Transient(%s) = %v", reason, !transient)
		}
		e := Failure{Model: "anthropic/claude-x", Status: 429, Reason: reason, RetryAfterMs: 1500}.Err()
		if e.Code != spec.CodeInferProvider || e.Category != "provider_error" || e.Transient != transient || ReasonOf(e) != reason {
			t.Errorf("%s: %+v", reason, e)
		}
	}
	cause := errors.New("dial tcp: refused")
	e := Failure{Model: "ollama/qwen3:8b", Status: 503, Reason: ReasonServerError, RetryAfterMs: 2000,
		Message: "POST /v1/chat/completions returned 503\nretry later", Cause: cause}.Err()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `"details":{"model":"ollama/qwen3:8b","provider":"ollama","reason":"server_error","retry_after_ms":2000,"status":503}`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"transient":true`) {
		t.Errorf("json = %s\nwant details %s", b, want)
	}
	if strings.Contains(e.Message, "\n") || !errors.Is(e, cause) {
		t.Errorf("message %q / cause lost", e.Message)
	}
	e = Failure{Provider: "gemini", Reason: ReasonAuthFailed}.Err()
	b, _ = json.Marshal(e.Details)
	if string(b) != `{"model":"","provider":"gemini","reason":"auth_failed","retry_after_ms":null,"status":null}` || e.Message == "" {
		t.Errorf("details = %s, message %q", b, e.Message)
	}
	if ReasonOf(nil) != "" {
		t.Error("ReasonOf(nil)")
	}
}

func TestSplitModel(t *testing.T) {
	tests := []struct {
		in, prov, name string
		ok             bool
	}{
		{"mock/echo", "mock", "echo", true},
		{"ollama/qwen3:8b", "ollama", "qwen3:8b", true},
		{"openrouter/meta-llama/llama-3.3-70b", "openrouter", "meta-llama/llama-3.3-70b", true},
		{"openai", "openai", "", false},
		{"/x", "", "x", false},
		{"a/b c", "a", "b c", false},
	}
	for _, tt := range tests {
		p, n, ok := SplitModel(tt.in)
		if p != tt.prov || n != tt.name || ok != tt.ok {
			t.Errorf("SplitModel(%q) = %q, %q, %v", tt.in, p, n, ok)
		}
	}
}

func TestText(t *testing.T) {
	m := Message{Role: RoleUser, Blocks: []Block{
		TextBlock("a"), ToolUseBlock("1", "t", json.RawMessage(`{}`)), {Type: "thinking", Text: "hidden"},
		TextBlock("ü"), ToolResultBlock("1", "c", false), TextBlock(""),
	}}
	if got := Text(m); got != "aü" {
		t.Errorf("Text = %q", got)
	}
	if Text(Message{}) != "" {
		t.Error("empty")
	}
}
