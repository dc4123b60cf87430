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
