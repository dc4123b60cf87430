//go:build linux

package main

// Black-box tests of the exec output bound under `nika run` (issue 12 item 5; see
// execoutput_test.go).

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A task writing 128 MiB under a 1 MiB bound fails with NIKA-EXEC-001 naming the bound, and
// `nika run` never holds the output: its peak resident memory (getrusage of the reaped
// process) stays far below the 128 MiB it read.
func TestRunExecOutputBound(t *testing.T) {
	const written = 128 << 20
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "big.nika.yaml"), zerosYAML(written))
	report := filepath.Join(dir, "report.json")
	// The peak is the lower of two runs: a nika that held the output would peak above the bound in
	// both, while the process tree's ru_maxrss once read 122 MiB in CI where it is 25 MiB here.
	var lowest int64 = -1
	for range 2 {
		cmd := exec.Command(nikaBin, "run", "big.nika.yaml", "--no-trace", "--no-progress", "--report", report, "--max-exec-output", "1048576")
		cmd.Dir = dir
		cmd.Env = testEnv
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("nika run: %v, want exit 1; stderr:\n%s", err, errb.String())
		}
		for _, want := range []string{"NIKA-EXEC-001", "134217728 bytes (128 MiB) to stdout, more than the exec output bound of 1048576 bytes (1 MiB)"} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, errb.String())
			}
		}
		rep, raw := readReport(t, report)
		if tk := rep.Tasks["big"]; tk.Status != "failure" || tk.Error == nil || tk.Error.Code != "NIKA-EXEC-001" {
			t.Errorf("report: %s", raw)
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			t.Fatal("no rusage")
		}
		if peak := ru.Maxrss << 10; lowest < 0 || peak < lowest { // Maxrss is in KiB on Linux
			lowest = peak
		}
	}
	if lowest > 100<<20 {
		t.Errorf("nika run peaked at %d bytes resident (the lower of two runs) for a 1 MiB bound (%d bytes written), want under 100 MiB", lowest, written)
	}
}

// The bound's configuration: the flag wins over NIKA_MAX_EXEC_OUTPUT, which wins over the
// default; a bad value is a usage error (flag) or an environment error (variable).
func TestRunExecOutputBoundConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "big.nika.yaml"), zerosYAML(2048))
	run := func(env []string, args ...string) result {
		return runBinaryEnv(t, dir, env, append([]string{"run", "big.nika.yaml", "--no-trace", "--no-progress"}, args...)...)
	}
	if r := run(nil); r.code != 0 {
		t.Errorf("2 KiB under the default bound: exit %d\n%s", r.code, r.stderr)
	}
	if r := run([]string{"NIKA_MAX_EXEC_OUTPUT=1024"}); r.code != 1 || !strings.Contains(r.stderr, "bound of 1024 bytes (1 KiB)") {
		t.Errorf("NIKA_MAX_EXEC_OUTPUT=1024: exit %d\n%s", r.code, r.stderr)
	}
	if r := run([]string{"NIKA_MAX_EXEC_OUTPUT=1024"}, "--max-exec-output", "4096"); r.code != 0 {
		t.Errorf("the flag over the variable: exit %d\n%s", r.code, r.stderr)
	}
	if r := run([]string{"NIKA_MAX_EXEC_OUTPUT=lots"}); r.code != exitEnv || !strings.Contains(r.stderr, "NIKA_MAX_EXEC_OUTPUT must be a whole number of bytes ≥ 1") {
		t.Errorf("a bad NIKA_MAX_EXEC_OUTPUT: exit %d\n%s", r.code, r.stderr)
	}
	if r := run(nil, "--max-exec-output", "-1"); r.code != exitUsage || !strings.Contains(r.stderr, "--max-exec-output must be ≥ 0") {
		t.Errorf("--max-exec-output -1: exit %d\n%s", r.code, r.stderr)
	}
}
