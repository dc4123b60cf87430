package openai

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestProfiles(t *testing.T) {
	want := []string{"openai", "ollama", "lmstudio", "llamacpp", "localai", "vllm", "mistral", "openrouter", "groq", "deepseek", "xai"}
	for _, n := range want {
		p, ok := Lookup(n)
		if !ok || p.Name != n || p.BaseURL == "" || len(p.KeyVars) == 0 || p.KeyVars[0] != "NIKA_"+strings.ToUpper(n)+"_API_KEY" {
			t.Errorf("profile %s = %+v", n, p)
		}
	}
	if _, ok := Lookup("anthropic"); ok {
		t.Error("anthropic is not an OpenAI-compatible profile")
	}

	ollama, _ := Lookup("ollama")
	a, err := New(ollama, env(nil), nil)
	if err != nil || a.BaseURL != "http://localhost:11434/v1" || a.Key != "" {
		t.Errorf("ollama = %+v, %v", a, err)
	}

	openai, _ := Lookup("openai")
	a, err = New(openai, env(map[string]string{"NIKA_OPENAI_API_KEY": "nika-key", "OPENAI_API_KEY": "conv-key", "OPENAI_BASE_URL": "http://x/v1/"}), nil)
	if err != nil || a.Key != "nika-key" || a.BaseURL != "http://x/v1" {
		t.Errorf("openai = %+v, %v", a, err)
	}
	a, err = New(openai, env(map[string]string{"OPENAI_API_KEY": "conv-key", "NIKA_OPENAI_API_KEY": "", "NIKA_OPENAI_BASE_URL": "http://n/v1", "OPENAI_BASE_URL": "http://x/v1"}), nil)
	if err != nil || a.Key != "conv-key" || a.BaseURL != "http://n/v1" {
		t.Errorf("openai fallback = %+v, %v", a, err)
	}
	a, err = New(openai, env(nil), nil)
	if err == nil || a != nil || !strings.Contains(err.Error(), "NIKA_OPENAI_API_KEY") || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	if openai.MaxTokensField != maxCompletionTokens {
		t.Error("openai uses max_completion_tokens")
	}
	m, _ := Lookup("mistral")
	if !m.IDs9 || m.MaxTokensField != maxTokens {
		t.Errorf("mistral = %+v", m)
	}
}

// Every server with quirks is a Chat Completions row of the one provider table (a misspelt
// name would silently lose its quirks).
func TestQuirksAreTableRows(t *testing.T) {
	for name := range quirks {
		if _, ok := Lookup(name); !ok {
			t.Errorf("quirks for %q, which is not a Chat Completions provider of spec.Providers", name)
		}
	}
}
