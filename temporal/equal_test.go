package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesEqualLocal: every example workflow that runs offline (the mock provider, sh, the
// read-only builtins) has the same canonical trace on Temporal as in a local run (issue 16 item 3).
// model-by-var runs on the mock model, as its header says to run it offline; agent-mock's
// nika:uuid is random, but its output reaches no canonical event (the trace has the task's
// status, not its output).
func TestExamplesEqualLocal(t *testing.T) {
	skip := map[string]string{
		"agent-auditor.nika.yaml": "a real provider",
	}
	vars := map[string]map[string]string{"model-by-var.nika.yaml": {"model": "mock/echo"}}
	files, err := filepath.Glob("../examples/workflows/*.nika.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".nika.yaml"), func(t *testing.T) {
			if why := skip[name]; why != "" {
				t.Skip(why)
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rc := runCase{name: name, src: string(src), dir: "..", vars: vars[name]}
			want, res := rc.local(t, context.Background())
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
