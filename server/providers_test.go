package server

import (
	"strings"
	"testing"
)

// Each provider's engine configuration comes from its NIKA_<PROVIDER>_… variables: a valid
// NIKA_<PROVIDER>_MAX_INFLIGHT caps that provider's limiter and no other's; a bad one leaves the
// provider out like a missing key, the reason naming the variable and the value.
func TestEnvProvidersEngineConfiguration(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY":           "sk-test-key-1234",
		"NIKA_OPENAI_MAX_INFLIGHT": "2",
		"NIKA_OLLAMA_RPM":          "60",
		"NIKA_VLLM_MAX_INFLIGHT":   "abc",
	}
	p := EnvProviders(func(k string) (string, bool) { v, ok := env[k]; return v, ok })

	f, ok := p.Fronts["openai"]
	if !ok {
		t.Fatalf("openai is not built: %s", p.Unavailable["openai"])
	}
	if l := f.Stats().Limit; l < 1 || l > 2 {
		t.Errorf("openai limit = %d with NIKA_OPENAI_MAX_INFLIGHT=2, want 1..2", l)
	}
	if _, ok := p.Fronts["ollama"]; !ok {
		t.Errorf("ollama with NIKA_OLLAMA_RPM=60 is not built: %s", p.Unavailable["ollama"])
	}

	if _, err := p.Registry.For("vllm/model"); err == nil {
		t.Error("vllm with NIKA_VLLM_MAX_INFLIGHT=abc is in the registry")
	}
	why := p.Unavailable["vllm"]
	for _, part := range []string{"NIKA_VLLM_MAX_INFLIGHT", `"abc"`, "whole number"} {
		if !strings.Contains(why, part) {
			t.Errorf("vllm unavailable because %q, want it to contain %q", why, part)
		}
	}
}
