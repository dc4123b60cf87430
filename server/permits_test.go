package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nikahq/nika/spec"
)

// A ceiling of the run directory (`fs.read: ["**"]`) must not let a
// submitted workflow read beside it by declaring `../**` itself: the
// runtime anchors `../**` at the run directory's parent.
func TestCeilingKeepsReadsInsideTheRunDirectory(t *testing.T) {
	base := t.TempDir()
	runDir := filepath.Join(base, "run")
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "server-secret.txt"), []byte("the server's private file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c := start(t, Options{RunDir: runDir, Permits: &spec.Permits{FSRead: []string{"**"}, Tools: []string{"nika:read"}, ToolsSet: true}})
	const yaml = "nika: v1\nworkflow: up\npermits:\n  fs: { read: [\"../**\"] }\n  tools: [\"nika:read\"]\ntasks:\n  - id: steal\n    invoke: { tool: \"nika:read\", args: { path: \"../server-secret.txt\" } }\n"
	id := c.submit(yaml, nil)
	c.events(id)
	st := c.get(id)
	task := st.Report.Tasks["steal"]
	if st.State != "failure" || task.Error == nil || task.Error.Code != "NIKA-SEC-004" {
		t.Errorf("state %s, task %+v; want failure with NIKA-SEC-004 (the ceiling is the run directory)", st.State, task)
	}
}
