package planner

import (
	"context"
	"sort"
	"strings"
	"testing"
)

// D22: the report's shape.
func TestReportShape(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "x"] }
  - id: b
    exec: { command: ["fail", "NIKA-EXEC-001"] }
outputs:
  o: ${{ tasks.a.output }}
`
	r := execute(t, context.Background(), src, newScript(), Config{Seed: 3})
	rep := r.res.Report("r-1", "t", 3)
	var keys []string
	for k := range rep {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "outputs,run_id,seed,tasks,usage,workflow,workflow_state" {
		t.Errorf("report keys = %s", got)
	}
	b := rep["tasks"].(map[string]any)["b"].(map[string]any)
	errObj, _ := b["error"].(map[string]any)
	var ek []string
	for k := range errObj {
		ek = append(ek, k)
	}
	sort.Strings(ek)
	if got := strings.Join(ek, ","); got != "attempt,category,code,details,message,task_id,transient" {
		t.Errorf("error keys = %s", got)
	}
	if rep["workflow_state"] != "failure" || rep["outputs"].(map[string]any)["o"] != "x" {
		t.Errorf("report = %v", rep)
	}
}
