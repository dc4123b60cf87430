package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// `nika run` of a workflow whose task timeout expires while an expensive
// output binding or `${{ }}` expression runs: the task fails with
// NIKA-TIMEOUT-001, the independent task succeeds, and the run exits 1
// (LANGUAGE.md §3.9: the timeout covers the bindings). The user code never
// ends by itself in any time a test could wait, so the run's ending at all
// proves that it was stopped; the 60 s deadline only guards against a hang.
func TestRunTimeoutStopsExpensiveUserCode(t *testing.T) {
	for _, fixture := range []string{"timeout-binding.nika.yaml", "timeout-expression.nika.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(pkgDir, "testdata", "run", fixture), filepath.Join(dir, fixture))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, nikaBin, "run", fixture, "--no-trace", "--report", "report.json")
			cmd.Dir, cmd.Env = dir, testEnv
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("nika run did not end within 60s: the expensive user code blocked it\n%s", out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
				t.Fatalf("nika run: %v, want exit %d\n%s", err, exitFailure, out)
			}
			rep, b := readReport(t, filepath.Join(dir, "report.json"))
			slow, other := rep.Tasks["slow"], rep.Tasks["other"]
			if rep.State != "failure" || slow.Status != "failure" || slow.Error == nil || slow.Error.Code != "NIKA-TIMEOUT-001" ||
				other.Status != "success" {
				t.Errorf("report = %s\nwant state failure, slow failed with NIKA-TIMEOUT-001, other success", b)
			}
		})
	}
}
