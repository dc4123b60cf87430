package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunVarsAndOutputs(t *testing.T) {
	dir := t.TempDir() // a run keeps its journal in its run directory
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "vars.nika.yaml"), filepath.Join(dir, "vars.nika.yaml"))
	r := runBinary(t, dir, "run", "vars.nika.yaml", "--no-trace", "--var", "times=3", "--var", "name=nika")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if want := `{"greeting":"Hello nika x3","times":3}` + "\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"run", "vars.nika.yaml", "--no-trace"}, 2, "NIKA-VAR-001"},                                        // required var missing
		{[]string{"run", "vars.nika.yaml", "--no-trace", "--var", "times=x"}, 2, "NIKA-VAR-006"},                    // bad conversion
		{[]string{"run", "vars.nika.yaml", "--no-trace", "--var", "times=1", "--var", "nope=1"}, 2, "NIKA-VAR-001"}, // undeclared
		{[]string{"run", "--no-trace", "missing.nika.yaml"}, 2, "cannot read"},
		{[]string{"run", "vars.nika.yaml", "--max-parallel-tools", "0x"}, 2, "invalid value"},
	} {
		r := runBinary(t, dir, tc.args...)
		if r.code != tc.code || r.stdout != "" || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit %d, empty stdout, %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.err)
		}
	}
}

// Secrets are masked in stdout, the report and the trace (LANGUAGE.md §2.3),
// and a missing secret refuses the run with exit 3 before any task.
func TestRunMasksSecrets(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "secret.nika.yaml"), filepath.Join(dir, "secret.nika.yaml"))
	secret := "s3cr3t-value-42"
	cmd := exec.Command(nikaBin, "run", "secret.nika.yaml", "--report", "report.json", "--trace", "trace.ndjson")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "NIKA_TEST_TOKEN="+secret)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if want := `{"shown":"token=••••••"}` + "\n"; string(out) != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	// The report carries outputs (masked); events never do (D18), so the
	// trace must simply never hold the secret.
	for _, f := range []string{"report.json", "trace.ndjson"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) || (f == "report.json" && !strings.Contains(string(b), "token=••••••")) {
			t.Errorf("%s is not masked:\n%s", f, b)
		}
	}
	var rep struct {
		WorkflowState string                     `json:"workflow_state"`
		Tasks         map[string]json.RawMessage `json:"tasks"`
		RunID         string                     `json:"run_id"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil || rep.WorkflowState != "success" || len(rep.Tasks) != 1 || !strings.HasPrefix(rep.RunID, "r-") {
		t.Errorf("report = %s (%v)", b, err)
	}

	r := runBinary(t, dir, "run", "secret.nika.yaml", "--no-trace")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "NIKA_TEST_TOKEN") {
		t.Errorf("missing secret: exit %d stdout %q stderr %q; want exit 3 naming the variable", r.code, r.stdout, r.stderr)
	}
}

// SIGINT during a long exec: exit 130, the report says cancelled, on_finally
// ran, and no child process is left (order, not timing: the test waits for
// the child to print "started" before signalling).
func TestRunInterrupt(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "long.nika.yaml"), filepath.Join(dir, "long.nika.yaml"))
	cmd := exec.Command(nikaBin, "run", "long.nika.yaml", "--report", "report.json", "--trace", "trace.ndjson")
	cmd.Dir = dir
	cmd.Env = testEnv
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the exec child (sh) and its own child (sleep) run.
	deadline := time.Now().Add(20 * time.Second)
	var procs []int
	for {
		procs = nil
		for _, sh := range children(cmd.Process.Pid) {
			procs = append(procs, sh)
			procs = append(procs, children(sh)...)
		}
		if len(procs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec child never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, log.String())
	}
	rep, b := readReport(t, filepath.Join(dir, "report.json"))
	if rep.State != "cancelled" || rep.Tasks["sleepy"].Status != "cancelled" || rep.Tasks["sleepy"].Error == nil ||
		rep.Tasks["sleepy"].Error.Code != "NIKA-CANCEL-001" || rep.Tasks["after"].Status != "cancelled" || rep.Tasks["after"].Error != nil {
		t.Errorf("report = %s", b)
	}
	// No process the run started is left (the whole process group died).
	for _, pid := range procs {
		if alive(pid) {
			t.Errorf("process %d of the exec task is still alive", pid)
		}
	}
	if !strings.Contains(log.String(), "cleanup after cancelled") {
		t.Errorf("on_finally did not run after the interrupt; stderr:\n%s", log.String())
	}
}

// children lists the child processes of pid, forked by any of its threads
// (Linux /proc).
func children(pid int) []int {
	tasks, _ := filepath.Glob(filepath.Join("/proc", itoa(pid), "task", "*", "children"))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie waiting for a reaper.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func itoa(i int) string { return strconv.Itoa(i) }

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// --quiet drops the per-task lines but never the reason a run failed: each failed task is named
// with its error on stderr (exit 1, stdout still the outputs object).
func TestRunQuietReportsFailedTasks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "q.nika.yaml"), `nika: v1
workflow: quiet
tasks:
  - id: fine
    exec: { command: ["true"] }
  - id: boom
    exec: { command: ["false"] }
`)
	r := runBinary(t, dir, "run", "q.nika.yaml", "--quiet", "--no-trace")
	want := "nika run: task boom failed: error[NIKA-EXEC-001] the command exited with code 1\n"
	if r.code != 1 || r.stdout != "{}\n" || r.stderr != want {
		t.Errorf("exit %d stdout %q stderr %q; want exit 1, {}, %q", r.code, r.stdout, r.stderr, want)
	}
}
