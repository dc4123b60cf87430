package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model chosen by a var (issue 19 item 2) is resolved before the run starts: the value picks
// the provider (a request reaches the OpenAI-compatible server with the model's name), a value
// that is not a model id is exit 2 with NIKA-VAR-006 and a missing key for the provider it names
// is exit 3 naming the variable, both before any task runs.
func TestRunModelChosenByVar(t *testing.T) {
	const flow = `nika: v1
workflow: by-var
vars:
  model: { type: string, default: mock/echo }
model: ${{ vars.model }}
tasks:
  - id: first
    exec: { command: ["sh", "-c", "echo ran > first.txt"] }
  - id: ask
    depends_on: [first]
    infer: { prompt: "Say hi." }
  - id: again
    depends_on: [ask]
    agent: { prompt: "Say bye.", model: "${{ vars.model }}", max_turns: 2 }
outputs:
  ask: ${{ tasks.ask.output }}
  again: ${{ tasks.again.output }}
`
	run := func(t *testing.T, env []string, args ...string) (result, string) {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "flow.nika.yaml"), []byte(flow), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runBinaryEnv(t, dir, env, append([]string{"run", "flow.nika.yaml", "--no-trace"}, args...)...)
		_, err := os.Stat(filepath.Join(dir, "first.txt"))
		return r, map[bool]string{true: "ran", false: "not run"}[err == nil]
	}

	t.Run("default", func(t *testing.T) {
		r, first := run(t, nil)
		if r.code != 0 || r.stdout != `{"again":"Say bye.","ask":"Say hi."}`+"\n" || first != "ran" {
			t.Errorf("exit %d stdout %q (first %s) stderr %s", r.code, r.stdout, first, r.stderr)
		}
	})

	t.Run("openai", func(t *testing.T) {
		f := &fakeWire{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.record(r)
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi from the server"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
		}))
		defer srv.Close()
		r, _ := run(t, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"}, "--var", "model=openai/gpt-by-var")
		if r.code != 0 || r.stdout != `{"again":"hi from the server","ask":"hi from the server"}`+"\n" {
			t.Fatalf("exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
		}
		if len(f.bodies) != 2 || f.bodies[0]["model"] != "gpt-by-var" || f.bodies[1]["model"] != "gpt-by-var" {
			t.Errorf("requests = %v, want two for gpt-by-var", f.bodies)
		}
	})

	t.Run("bad value", func(t *testing.T) {
		r, first := run(t, nil, "--var", "model=gpt-4o")
		if r.code != 2 || !strings.Contains(r.stderr, `error[NIKA-VAR-006] task "ask" takes its model from var "model": bad model id "gpt-4o"`) || first != "not run" || r.stdout != "" {
			t.Errorf("exit %d (first %s) stdout %q stderr %s", r.code, first, r.stdout, r.stderr)
		}
	})

	t.Run("missing key", func(t *testing.T) {
		r, first := run(t, nil, "--var", "model=anthropic/claude-sonnet-4-5")
		if r.code != 3 || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") || first != "not run" {
			t.Errorf("exit %d (first %s) stderr %s", r.code, first, r.stderr)
		}
	})
}

// An on_finally infer step runs on its own model, resolved as a task's is (the step's, then
// --model, then the envelope's, a var-named one included), not on its task's: under an exec task
// it used to fail with a malformed model id "". Its provider's key is checked before the run, and
// the var form in a step's own field is refused statically.
func TestOnFinallyStepModel(t *testing.T) {
	flow := func(envelope, step string) string {
		return `nika: v1
workflow: fin
vars:
  m: { type: string, default: mock/echo }
` + envelope + `
tasks:
  - id: a
    exec: { command: ["sh", "-c", "echo ran > a.txt"] }
    on_finally:
      - infer: { prompt: "note"` + step + ` }
`
	}
	for _, tc := range []struct {
		name, envelope, step string
		args                 []string
		code                 int
		want, not            string // in stderr
	}{
		{"literal envelope", "model: mock/echo", "", nil, 0, "✓ a", "on_finally step 0 failed"},
		{"var envelope", "model: ${{ vars.m }}", "", nil, 0, "✓ a", "on_finally step 0 failed"},
		{"--model", "", "", []string{"--model", "mock/echo"}, 0, "✓ a", "on_finally step 0 failed"},
		{"var envelope, bad value", "model: ${{ vars.m }}", "", []string{"--var", "m=nope"}, 2, `on_finally step 0 of task "a" takes its model from var "m"`, "✓ a"},
		{"step's key checked before the run", "model: mock/echo", ", model: anthropic/claude-sonnet-4-5", nil, 3, "ANTHROPIC_API_KEY", "✓ a"},
		{"var form in a step", "model: mock/echo", `, model: "${{ vars.m }}"`, nil, 2, "error[NIKA-VAR-005]", "✓ a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "fin.nika.yaml"), []byte(flow(tc.envelope, tc.step)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runBinaryEnv(t, dir, nil, append([]string{"run", "fin.nika.yaml", "--no-trace", "--no-progress"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, tc.not) {
				t.Errorf("exit %d, want %d with %q and without %q:\n%s", r.code, tc.code, tc.want, tc.not, r.stderr)
			}
		})
	}
}
