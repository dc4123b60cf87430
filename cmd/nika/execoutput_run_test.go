//go:build linux

package main

// Black-box tests of the exec output bound under `nika run` (issue 12 item 5; see
// execoutput_test.go).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A task writing 128 MiB under a 1 MiB bound fails with NIKA-EXEC-001 naming the bound, and
// `nika run` never holds the output: its peak resident memory stays far below the 128 MiB it read.
//
// The peak is the process's own VmHWM (/proc/PID/status), read while it runs: not the ru_maxrss
// wait4 reports, which also counts the memory of the test binary the child was vforked from before
// it exec'd nika (the kernel keeps the old mm's high-water mark across exec): 106–122 MiB for the
// -race test binary in CI, where nika itself peaks at about 25 MiB.
func TestRunExecOutputBound(t *testing.T) {
	const written = 128 << 20
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "big.nika.yaml"), zerosYAML(written))
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(nikaBin, "run", "big.nika.yaml", "--no-trace", "--no-progress", "--report", report, "--max-exec-output", "1048576")
	cmd.Dir = dir
	cmd.Env = testEnv
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64 // KiB; VmHWM only grows, so the last read is the peak so far
	var err error
	status := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status")
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case <-time.After(time.Millisecond): // a sampling period, not a synchronization
			if hwm := vmHWM(status); hwm > peak {
				peak = hwm
			}
		}
	}
	if cmd.ProcessState.ExitCode() != 1 {
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
	if peak == 0 {
		t.Fatal("no VmHWM read from " + status)
	}
	t.Logf("nika run peaked at %d KiB resident", peak)
	if peak<<10 > 100<<20 {
		t.Errorf("nika run peaked at %d KiB resident for a 1 MiB bound (%d bytes written), want under 100 MiB", peak, written)
	}
}

// vmHWM is the VmHWM line of a /proc/PID/status file, in KiB; 0 when it cannot be read (the
// process is gone).
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
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
