package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func compile(t *testing.T, src string) *workflow.Workflow {
	t.Helper()
	a := spec.CheckSource("w.nika.yaml", []byte(src), spec.CheckOptions{})
	if len(a.Findings) != 0 {
		for _, f := range a.Findings {
			if f.Severity == spec.SeverityError {
				t.Fatalf("finding: %+v", f)
			}
		}
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// One provider set for the process: the mock, every provider whose key is set or needs none,
// and a reason naming the variable for the others.
func TestAllProviders(t *testing.T) {
	p := AllProviders(envOf(map[string]string{"OPENAI_API_KEY": "sk-test-key-1234"}))
	for _, model := range []string{"mock/echo", "openai/gpt-4o", "ollama/llama3"} {
		if _, err := p.Registry.For(model); err != nil {
			t.Errorf("%s: %v, want a provider", model, err)
		}
	}
	if _, ok := p.Fronts["openai"]; !ok || p.Fronts["mock"] != nil {
		t.Errorf("fronts = %v, want openai (and never the mock)", p.Fronts)
	}
	if _, err := p.Registry.For("anthropic/claude"); err == nil {
		t.Error("anthropic without a key is in the registry")
	}
	if why := p.Unavailable["anthropic"]; !strings.Contains(why, "ANTHROPIC_API_KEY") {
		t.Errorf("anthropic unavailable because %q, want the variable named", why)
	}
	for name, why := range p.Unavailable {
		if strings.Contains(why, "sk-test-key-1234") {
			t.Errorf("%s: the reason leaks a key: %s", name, why)
		}
	}
}

// Each provider's engine configuration comes from its NIKA_<PROVIDER>_… variables: a valid
// NIKA_<PROVIDER>_MAX_INFLIGHT caps that provider's limiter and no other's; a bad one leaves the
// provider out like a missing key, the reason naming the variable and the value.
func TestAllProvidersEngineConfiguration(t *testing.T) {
	p := AllProviders(envOf(map[string]string{
		"OPENAI_API_KEY":           "sk-test-key-1234",
		"NIKA_OPENAI_MAX_INFLIGHT": "2",
		"NIKA_OLLAMA_RPM":          "60",
		"NIKA_VLLM_MAX_INFLIGHT":   "abc",
	}))
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
	if !slices.Equal(p.Invalid, []string{"vllm"}) {
		t.Errorf("invalid = %v, want [vllm] (the providers without a key are not invalid)", p.Invalid)
	}
	why := p.Unavailable["vllm"]
	for _, part := range []string{"NIKA_VLLM_MAX_INFLIGHT", `"abc"`, "whole number"} {
		if !strings.Contains(why, part) {
			t.Errorf("vllm unavailable because %q, want it to contain %q", why, part)
		}
	}
}

// Every task of a run that names the same provider shares one instance, so one limiter sees
// the whole load (AGENT.md §11.2); a second run on the same engine shares it too.
func TestOneProviderInstancePerEngine(t *testing.T) {
	w := compile(t, `nika: v1
workflow: shared
model: openai/gpt-a
tasks:
  - id: one
    infer: { prompt: "a" }
  - id: two
    infer: { prompt: "b", model: openai/gpt-b }
`)
	e, err := New(Options{Env: envOf(map[string]string{"OPENAI_API_KEY": "sk-x"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, perr := e.Prepare(w, nil); perr != nil {
		t.Fatal(perr)
	}
	reg := e.Providers().Registry
	p1, e1 := reg.For("openai/gpt-a")
	p2, e2 := reg.For("openai/gpt-b")
	if e1 != nil || e2 != nil || p1 != p2 {
		t.Errorf("instances %p %p (%v %v): want one shared instance", p1, p2, e1, e2)
	}
	if _, perr := e.Prepare(w, nil); perr != nil {
		t.Fatal(perr)
	}
	if p3, _ := reg.For("openai/gpt-a"); p3 != p1 {
		t.Error("a second run built a second instance")
	}
	if len(e.Providers().Fronts) != 1 {
		t.Errorf("fronts = %v, want openai only: an on-demand set builds what the runs name", e.Providers().Fronts)
	}
}

// Prepare reports the first input that is wrong, in the order of LANGUAGE.md §10: vars, then
// secrets (under a service's rule first), then providers; each with the stage that decides
// the exit code, the secret values never in a message.
func TestPrepareStages(t *testing.T) {
	const src = `nika: v1
workflow: inputs
vars:
  n: { type: integer }
secrets:
  TOK: { source: env, key: PREP_TOKEN }
tasks:
  - id: a
    infer: { prompt: "x", model: openai/gpt-4o }
`
	w := compile(t, src)
	refuse := func(sd *spec.SecretDecl) *spec.Error {
		return spec.NewError("NIKA-SEC-004", "secret "+sd.Name+" refused", nil)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		vars  map[string]string
		allow func(*spec.SecretDecl) *spec.Error
		stage Stage
		want  string
	}{
		{"bad var first", map[string]string{}, map[string]string{"n": "many"}, refuse, StageVars, "n"},
		{"secret refused by the rule before it is read", map[string]string{"PREP_TOKEN": "tok-value-123"}, map[string]string{"n": "1"}, refuse, StageSecrets, "refused"},
		{"missing secret", map[string]string{}, map[string]string{"n": "1"}, nil, StageSecrets, "PREP_TOKEN"},
		{"missing key", map[string]string{"PREP_TOKEN": "tok-value-123"}, map[string]string{"n": "1"}, nil, StageProviders, "OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Options{Env: envOf(tc.env), AllowSecret: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			p, perr := e.Prepare(w, tc.vars)
			if perr == nil {
				t.Fatalf("prepared %s, want a stage %d error", p.ID, tc.stage)
			}
			if perr.Stage != tc.stage || !strings.Contains(perr.Error(), tc.want) {
				t.Errorf("stage %d %q, want stage %d containing %q", perr.Stage, perr.Error(), tc.stage, tc.want)
			}
			if strings.Contains(perr.Error(), "tok-value-123") {
				t.Errorf("the message shows a secret: %s", perr.Error())
			}
		})
	}
	e, err := New(Options{Env: envOf(map[string]string{"PREP_TOKEN": "tok-value-123", "OPENAI_API_KEY": "sk-x"})})
	if err != nil {
		t.Fatal(err)
	}
	p, perr := e.Prepare(w, map[string]string{"n": "7"})
	if perr != nil {
		t.Fatal(perr)
	}
	if !strings.HasPrefix(p.ID, "r-") || fmt.Sprint(p.Inputs.Vars["n"]) != "7" || p.Mask("a tok-value-123 b") == "a tok-value-123 b" {
		t.Errorf("prepared %+v: want an r- id, n = 7 and the secret masked", p)
	}
}
