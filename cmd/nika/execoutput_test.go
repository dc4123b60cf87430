//go:build linux

package main

// Black-box tests of issue 12 item 5: `exec` keeps at most --max-exec-output bytes of a captured
// stream (NIKA_MAX_EXEC_OUTPUT, default 16 MiB); a task that writes more fails with
// NIKA-EXEC-001, and the engine's memory follows the bound, not the output.

import (
	"fmt"
	"strings"
	"testing"
)

// zerosYAML is a workflow whose one exec task writes n zero bytes to stdout.
func zerosYAML(n int) string {
	return fmt.Sprintf("nika: v1\nworkflow: big\ntasks:\n  - id: big\n    exec: { command: [\"head\", \"-c\", \"%d\", \"/dev/zero\"] }\n", n)
}

// nika serve applies the bound to every run it serves.
func TestServeExecOutputBound(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, "--permits", writePermits(t, dir, "exec: [head]\n"), "--max-exec-output", "1024")
	id := s.submit(zerosYAML(1 << 20))
	state, report := s.finish(id)
	if state != "failure" || !strings.Contains(fmt.Sprint(report), "NIKA-EXEC-001") || !strings.Contains(fmt.Sprint(report), "bound of 1024 bytes") {
		t.Errorf("state %s, report %v", state, report)
	}
	if code := runBinary(t, dir, "serve", "--max-exec-output", "-5"); code.code != exitUsage || !strings.Contains(code.stderr, "--max-exec-output must be ≥ 0") {
		t.Errorf("serve --max-exec-output -5: exit %d %q", code.code, code.stderr)
	}
}
