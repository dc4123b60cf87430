package temporal

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesEqualLocal: every example workflow has the same canonical trace on Temporal as in
// a local run (issue 16 item 3), none skipped. model-by-var runs on the mock model, as its header says to run it offline; agent-mock's
// nika:uuid is random, but its output reaches no canonical event (the trace has the task's
// status, not its output).
func TestExamplesEqualLocal(t *testing.T) {
	vars := map[string]map[string]string{"model-by-var.nika.yaml": {"model": "mock/echo"}}
	// agent-auditor names openai/gpt-4o-mini: the engine builds the real provider, pointed at a
	// scripted Chat Completions endpoint (auditorModel).
	env := map[string]map[string]string{"agent-auditor.nika.yaml": {"OPENAI_API_KEY": "sk-test",
		"NIKA_OPENAI_BASE_URL": auditorModel(t) + "/v1"}}
	files, err := filepath.Glob("../examples/workflows/*.nika.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".nika.yaml"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rc := runCase{name: name, src: string(src), dir: "..", vars: vars[name], env: env[name]}
			want, res := rc.local(t, context.Background())
			if env[name] != nil && res.State != "success" { // the scripted model was asked
				t.Fatalf("the local run ended %s:\n%s", res.State, strings.Join(want, "\n"))
			}
			if kinds(want, "workflow_completed") != 1 {
				t.Fatalf("the local run has no workflow_completed:\n%s", strings.Join(want, "\n"))
			}
			out, _ := rc.onTemporal(t, nil)
			sameLines(t, want, out.Events)
			if out.State != string(res.State) {
				t.Errorf("state %s, local %s", out.State, res.State)
			}
		})
	}
}

// auditorModel serves a scripted model for agent-auditor on the Chat Completions wire and
// returns its URL. It answers from the request alone, so the local run and the Temporal run ask
// the same and get the same: with no tool result yet, a batch of nika:glob and nika:read; then
// nika:done with the typed result, citing the file it read.
func auditorModel(t *testing.T) string {
	const file = "examples/workflows/agent-auditor.nika.yaml"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role string }
			Tools    []struct{ Function struct{ Name string } }
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "not a chat completion", http.StatusBadRequest)
			return
		}
		wire := func(suffix string) string { // the wire name of a nika tool
			for _, tl := range req.Tools {
				if strings.HasSuffix(tl.Function.Name, suffix) {
					return tl.Function.Name
				}
			}
			return suffix
		}
		call := func(id, tool string, args any) map[string]any {
			a, _ := json.Marshal(args)
			return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": wire(tool), "arguments": string(a)}}
		}
		calls := []any{call("c1", "glob", map[string]any{"pattern": file}), call("c2", "read", map[string]any{"path": file})}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				calls = []any{call("c3", "done", map[string]any{"result": map[string]any{
					"answer": "The example's agent task audits the repository.", "files": []string{file}}})}
				break
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
				"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}}},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
