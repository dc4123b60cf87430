package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikahq/nika/engine"
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
	_, c := start(t, Options{Engine: engine.Options{RunDir: runDir}, Permits: &spec.Permits{FSRead: []string{"**"}, Tools: []string{"nika:read"}, ToolsSet: true}})
	// The path is an expression, so only the runtime sees it (a literal one is refused at
	// submission: TestLiteralSubjectsRefusedAtSubmission).
	const yaml = "nika: v1\nworkflow: up\nvars:\n  p: { type: string, default: \"../server-secret.txt\" }\npermits:\n  fs: { read: [\"../**\"] }\n  tools: [\"nika:read\"]\ntasks:\n  - id: steal\n    invoke: { tool: \"nika:read\", args: { path: \"${{ vars.p }}\" } }\n"
	id := c.submit(yaml, nil)
	c.events(id)
	st := c.get(id)
	task := st.Report.Tasks["steal"]
	if st.State != "failure" || task.Error == nil || task.Error.Code != "NIKA-SEC-004" {
		t.Errorf("state %s, task %+v; want failure with NIKA-SEC-004 (the ceiling is the run directory)", st.State, task)
	}
}

// A ceiling of every IPv6 address (`net.http: ["::/0"]`) does not let a
// run past the SSRF floor to 127.0.0.1; a submitted workflow must not get
// there by naming the loopback in its IPv4-mapped form, which the runtime
// reads as 127.0.0.1.
func TestCeilingKeepsTheSSRFFloorForMappedAddresses(t *testing.T) {
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "a loopback-only service")
	}))
	defer local.Close()
	_, c := start(t, Options{Permits: &spec.Permits{NetHTTP: []string{"::/0"}, Tools: []string{"nika:fetch"}, ToolsSet: true}})
	for _, own := range []string{"::ffff:127.0.0.1", "::ffff:127.0.0.0/104"} {
		yaml := "nika: v1\nworkflow: ssrf\nvars:\n  u: { type: string, default: \"" + local.URL + "/\" }\npermits:\n  net: { http: [\"" + own + "\"] }\n  tools: [\"nika:fetch\"]\ntasks:\n  - id: get\n    invoke: { tool: \"nika:fetch\", args: { url: \"${{ vars.u }}\" } }\n"
		id := c.submit(yaml, nil)
		c.events(id)
		st := c.get(id)
		task := st.Report.Tasks["get"]
		if st.State != "failure" || task.Error == nil || task.Error.Code != "NIKA-SEC-004" && task.Error.Code != "NIKA-SEC-005" {
			t.Errorf("own %s: state %s, task %+v; want failure with NIKA-SEC-004 or -005 (the ceiling does not open the loopback)", own, st.State, task)
		}
	}
}

// Literal subjects are checked at submission under the ceiling ∩ the workflow's own permits:
// what the run would refuse is a 400 with the NIKA-SEC-004 finding, whose detail names the
// ceiling.
func TestLiteralSubjectsRefusedAtSubmission(t *testing.T) {
	_, c := start(t, Options{Permits: &spec.Permits{FSRead: []string{"**"}, Tools: []string{"nika:read"}, ToolsSet: true}})
	const yaml = "nika: v1\nworkflow: up\npermits:\n  fs: { read: [\"../**\"] }\n  tools: [\"nika:read\"]\ntasks:\n  - id: steal\n    invoke: { tool: \"nika:read\", args: { path: \"../server-secret.txt\" } }\n"
	code, b := c.do("POST", "/v1/runs", body(yaml, nil))
	if code != http.StatusBadRequest || !strings.Contains(string(b), `"code":"NIKA-SEC-004"`) || !strings.Contains(string(b), "permits ceiling") {
		t.Errorf("POST = %d %s; want 400 with a NIKA-SEC-004 finding naming the ceiling", code, b)
	}
}
