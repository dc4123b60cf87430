package workflow

import (
	"strings"
	"testing"
)

// ResolveModels sets each var-named model from the run's vars, and refuses a value that is not a
// model id (NIKA-VAR-006), a var left unset and a value that is not a string.
func TestResolveModels(t *testing.T) {
	w := compileSrc(t, `nika: v1
workflow: m
vars:
  model: { type: string }
tasks:
  - id: lit
    infer: { prompt: "a", model: mock/echo }
  - id: byvar
    infer: { prompt: "b", model: "${{ vars.model }}" }
`)
	if got := w.Task("byvar"); got.Model != "" || got.ModelVar != "model" {
		t.Fatalf("before: model %q var %q, want the var only", got.Model, got.ModelVar)
	}
	for _, tc := range []struct {
		vars map[string]any
		want string // in the error; "" for none
	}{
		{map[string]any{"model": "openai/gpt-4o"}, ""},
		{map[string]any{"model": "gpt-4o"}, `bad model id "gpt-4o"`},
		{map[string]any{"model": "mock/other"}, "unknown mock model"},
		{map[string]any{"model": nil}, "it is not set"},
		{map[string]any{"model": 3}, "not a string"},
	} {
		err := ResolveModels(w, tc.vars)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.vars, err)
		case tc.want == "" && w.Task("byvar").Model != "openai/gpt-4o":
			t.Errorf("%v: model %q", tc.vars, w.Task("byvar").Model)
		case tc.want != "" && (err == nil || err.Code != "NIKA-VAR-006" || !strings.Contains(err.Message, tc.want)):
			t.Errorf("%v: error %v, want NIKA-VAR-006 with %q", tc.vars, err, tc.want)
		}
	}
	if w.Task("lit").Model != "mock/echo" {
		t.Errorf("a literal model changed: %q", w.Task("lit").Model)
	}
}
