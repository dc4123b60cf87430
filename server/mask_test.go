package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/spec"
)

// With secrets "task" and "stat" (inside the engine's keys tasks and status, LANGUAGE.md §2.3), the
// report of a served run keeps its D22 keys and the event stream its field names; the user data is
// masked, its keys included. Before, the report's tasks was ••••••s and every status ••••••us.
func TestServedRunMaskingKeepsRecords(t *testing.T) {
	env := map[string]string{"MASK_TOK": "task", "MASK_STA": "stat"}
	_, c := start(t, Options{
		Permits:   &spec.Permits{Tools: []string{"nika:jq"}, ToolsSet: true},
		SecretEnv: []string{"MASK_TOK", "MASK_STA"},
		Engine:    engine.Options{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }},
	})
	id := c.submit(`nika: v1
workflow: masked
secrets:
  TOK: { source: env, key: MASK_TOK }
  STA: { source: env, key: MASK_STA }
tasks:
  - id: user
    invoke:
      tool: nika:jq
      args:
        expression: "{(.k): .v}"
        input: { k: "${{ secrets.TOK }}-key", v: "${{ secrets.STA }}" }
outputs:
  out: ${{ tasks.user.output }}
`, nil)
	var completed int
	for _, e := range c.events(id) {
		if e.Kind == "task_completed" {
			completed++
			if e.Fields["status"] != "success" {
				t.Errorf("task_completed fields = %v, want status success", e.Fields)
			}
		}
	}
	if completed != 1 {
		t.Errorf("%d task_completed events, want 1", completed)
	}
	code, b := c.do("GET", "/v1/runs/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, b)
	}
	var st struct {
		Report struct {
			State string `json:"workflow_state"`
			Tasks map[string]struct {
				Status string         `json:"status"`
				Output map[string]any `json:"output"`
			} `json:"tasks"`
		} `json:"report"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	task := st.Report.Tasks["user"]
	if st.Report.State != "success" || task.Status != "success" || task.Output["••••••-key"] != "••••••" || len(task.Output) != 1 {
		t.Errorf("report = %s", b)
	}
}
