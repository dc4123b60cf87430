package main

// Black-box tests of what `nika run` does when the files it writes cannot be
// written (issue 12): a trace, a report or the outputs that could not be
// written is exit 3 naming the file, and the report is replaced atomically.

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nikahq/nika/internal/testfs"
)

// smallYAML runs on the mock provider: no permits, no process.
const smallYAML = `nika: v1
workflow: small
model: mock/echo
tasks:
  - id: greet
    infer: { prompt: "hello" }
outputs:
  greeting: ${{ tasks.greet.output }}
`

// bigYAML's first task prints 100 000 bytes, and its second logs them: its
// report, and its trace from that log event on, do not fit on a 64 KiB file
// system.
const bigYAML = `nika: v1
workflow: big
permits:
  exec: ["sh"]
  tools: ["nika:log"]
tasks:
  - id: big
    exec: { command: ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a"] }
  - id: say
    depends_on: [big]
    invoke: { tool: nika:log, args: { message: "${{ tasks.big.output }}" } }
outputs:
  text: ${{ tasks.big.output }}
`

// blockedYAML's task says "up" on the fifo ready, then reads the fifo go
// until the test closes it.
const blockedYAML = `nika: v1
workflow: blocked
permits:
  exec: ["sh"]
tasks:
  - id: wait
    exec: { command: ["sh", "-c", "echo up > ready; cat go"] }
`

// runTo runs the binary in dir with its stdout on the file stdout.
func runTo(t *testing.T, dir string, stdout *os.File, args ...string) result {
	t.Helper()
	cmd := exec.Command(nikaBin, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, testEnv, strings.NewReader("")
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stderr: errb.String()}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// tempFiles lists the report temporary files in dir.
func tempFiles(t *testing.T, dir, report string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "."+report+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTraceToDevFull(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "small.nika.yaml"), smallYAML)
	r := runBinary(t, dir, "run", "small.nika.yaml", "--trace", "/dev/full", "--no-progress")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "trace /dev/full") || !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("stderr does not name the trace and why:\n%s", r.stderr)
	}
	if out := decodeOne(t, r.stdout); !strings.Contains(out["greeting"].(string), "hello") {
		t.Errorf("stdout = %q, want the run's outputs all the same", r.stdout)
	}
}

func TestOutputsToFullStdout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "small.nika.yaml"), smallYAML)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	r := runTo(t, dir, full, "run", "small.nika.yaml", "--no-trace", "--report", "report.json", "--no-progress")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(lastLine(r.stderr), "cannot write the outputs to stdout") || !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("stderr does not say the outputs were lost on stdout, and why:\n%s", r.stderr)
	}
	if rep, b := readReport(t, filepath.Join(dir, "report.json")); rep.State != "success" {
		t.Errorf("the report, which could be written, = %s", b)
	}
}

func TestReportToDevFull(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "small.nika.yaml"), smallYAML)
	r := runBinary(t, dir, "run", "small.nika.yaml", "--no-trace", "--report", "/dev/full", "--no-progress")
	if r.code != 3 || !strings.Contains(r.stderr, "report /dev/full") || !strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("exit %d, want 3 naming the report and why\nstderr:\n%s", r.code, r.stderr)
	}
	decodeOne(t, r.stdout) // the outputs are still printed
}

// A report that does not fit on its disk: exit 3 naming it, the outputs on
// stdout, the previous report untouched and no temporary file left.
func TestReportOnAFullDisk(t *testing.T) {
	disk := testfs.SmallFS(t, "64k")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "big.nika.yaml"), bigYAML)
	report := filepath.Join(disk, "report.json")
	previous := []byte(`{"previous":"report"}` + "\n")
	if err := os.WriteFile(report, previous, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "run", "big.nika.yaml", "--no-trace", "--report", report, "--no-progress")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "cannot write the report "+report) || !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("stderr does not name the report and why:\n%s", r.stderr)
	}
	if out := decodeOne(t, r.stdout); out["text"] != strings.Repeat("a", 100000) {
		t.Errorf("stdout = %q, want the run's outputs all the same", r.stdout)
	}
	if b, err := os.ReadFile(report); err != nil || string(b) != string(previous) {
		t.Errorf("the previous report is now %q (%v), want it untouched", b, err)
	}
	if tmp := tempFiles(t, disk, "report.json"); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// A trace that does not fit on its disk: exit 3, stderr ends with the error
// rather than a success, and the file holds only whole lines, without the
// workflow's end.
func TestTraceOnAFullDisk(t *testing.T) {
	disk := testfs.SmallFS(t, "64k")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "big.nika.yaml"), bigYAML)
	trace := filepath.Join(disk, "trace.ndjson")
	r := runBinary(t, dir, "run", "big.nika.yaml", "--trace", trace, "--no-progress")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	if last := lastLine(r.stderr); !strings.Contains(last, "error: the trace "+trace+" is incomplete") || !strings.Contains(last, "no space left on device") {
		t.Errorf("the last line of stderr is %q, want the trace's error\nstderr:\n%s", last, r.stderr)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the trace does not end with a whole line: %d bytes, last %q", len(b), b[max(0, len(b)-40):])
	}
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var e struct{ Kind string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("trace line %q: %v", sc.Bytes(), err)
		}
		kinds = append(kinds, e.Kind)
	}
	if len(kinds) == 0 || kinds[0] != "workflow_started" || slices.Contains(kinds, "workflow_completed") {
		t.Errorf("trace kinds = %v, want a prefix of the stream without its end", kinds)
	}
}

// The report's directory is checked before anything runs.
func TestReportInAMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "small.nika.yaml"), smallYAML)
	r := runBinary(t, dir, "run", "small.nika.yaml", "--report", "nowhere/report.json", "--no-progress")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "report nowhere/report.json") {
		t.Fatalf("exit %d stdout %q, want 3 before the run naming the report\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if traces, _ := filepath.Glob(filepath.Join(dir, ".nika", "traces", "*")); len(traces) != 0 {
		t.Errorf("the run started: traces %v", traces)
	}
}

// blocked is a `nika run blocked.nika.yaml --report report.json` whose task runs.
type blocked struct {
	dir     string
	cmd     *exec.Cmd
	done    chan error // cmd.Wait's error
	stderr  string     // the file nika's stderr goes to (a file: Wait waits for nika alone)
	release func()     // ends the task: closes the fifo it reads
}

func (b *blocked) log(t *testing.T) string {
	t.Helper()
	s, err := os.ReadFile(b.stderr)
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// startBlocked starts the run, with args added, in a new directory holding a
// previous report, and returns once its task runs.
func startBlocked(t *testing.T, previous []byte, args ...string) *blocked {
	t.Helper()
	b := &blocked{dir: t.TempDir(), done: make(chan error, 1), stderr: filepath.Join(t.TempDir(), "stderr")}
	writeFile(t, filepath.Join(b.dir, "blocked.nika.yaml"), blockedYAML)
	if err := os.WriteFile(filepath.Join(b.dir, "report.json"), previous, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ready", "go"} {
		if err := syscall.Mkfifo(filepath.Join(b.dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Read-write opens of a fifo do not wait for the other end: the test
	// holds go open before the task opens it, so the task's cat reads until
	// release closes it.
	ready, err := os.OpenFile(filepath.Join(b.dir, "ready"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ready.Close() })
	goFifo, err := os.OpenFile(filepath.Join(b.dir, "go"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.release = func() { goFifo.Close() }
	t.Cleanup(b.release)
	errf, err := os.Create(b.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()

	if len(args) == 0 {
		args = []string{"--no-trace"}
	}
	b.cmd = exec.Command(nikaBin, append([]string{"run", "blocked.nika.yaml", "--report", "report.json", "--no-progress"}, args...)...)
	b.cmd.Dir, b.cmd.Env, b.cmd.Stderr = b.dir, testEnv, errf
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	up := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(ready).ReadString('\n')
		up <- err
	}()
	select {
	case err := <-up:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-b.done:
		ready.Close() // ends the reader
		<-up
		t.Fatalf("nika exited (%v) before its task ran\nstderr:\n%s", err, b.log(t))
	}
	return b
}

// SIGKILL in the middle of a run: the previous report is byte for byte what
// it was, and at most the run's one temporary file is left beside it.
func TestReportSurvivesSIGKILL(t *testing.T) {
	previous := []byte(`{"previous":"report","kept":true}` + "\n")
	b := startBlocked(t, previous)
	if tmp := tempFiles(t, b.dir, "report.json"); len(tmp) != 1 {
		t.Errorf("while the run runs, temporary files = %v, want one", tmp)
	}
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.done
	b.release() // the orphaned task ends
	got, err := os.ReadFile(filepath.Join(b.dir, "report.json"))
	if err != nil || string(got) != string(previous) {
		t.Errorf("after SIGKILL the report is %q (%v), want the previous one\nstderr:\n%s", got, err, b.log(t))
	}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, e := range entries {
		switch n := e.Name(); {
		case n == "blocked.nika.yaml" || n == "report.json" || n == "ready" || n == "go":
		case n == ".nika": // the run's journal (docs/journal.md)
		case strings.HasPrefix(n, ".report.json.tmp-"): // the documented leftover
		default:
			others = append(others, n)
		}
	}
	if len(others) != 0 {
		t.Errorf("files left besides the report: %v", others)
	}
}

// An interrupted run still writes its report, in place of the previous one,
// and leaves no temporary file.
func TestReportOfAnInterruptedRun(t *testing.T) {
	b := startBlocked(t, []byte(`{"previous":"report"}`+"\n"))
	if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := <-b.done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\nstderr:\n%s", err, b.log(t))
	}
	if rep, raw := readReport(t, filepath.Join(b.dir, "report.json")); rep.State != "cancelled" {
		t.Errorf("report = %s, want the cancelled run's", raw)
	}
	if tmp := tempFiles(t, b.dir, "report.json"); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// An interrupted run whose trace could not be written still exits 130 (D23),
// and says so on stderr.
func TestInterruptedRunSaysAWriteFailure(t *testing.T) {
	b := startBlocked(t, []byte("{}\n"), "--trace", "/dev/full")
	if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := <-b.done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\nstderr:\n%s", err, b.log(t))
	}
	if log := b.log(t); !strings.Contains(log, "error: the trace /dev/full is incomplete") {
		t.Errorf("stderr does not say the trace was lost:\n%s", log)
	}
}

// A journal that does not fit on its disk: the run still runs, exits 3 naming the journal and
// the reason, and the journal keeps only whole lines (it reads back, without the run's end).
func TestJournalOnAFullDisk(t *testing.T) {
	disk := testfs.SmallFS(t, "64k")
	writeFile(t, filepath.Join(disk, "big.nika.yaml"), bigYAML)
	r := runBinary(t, disk, "run", "big.nika.yaml", "--no-trace", "--no-progress")
	if r.code != 3 || !strings.Contains(r.stderr, "the journal ") || !strings.Contains(r.stderr, "is incomplete") ||
		!strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("exit %d, want 3 naming the journal and the full disk\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, `{"text":"aaa`) {
		t.Errorf("the outputs were not printed: %.40q", r.stdout)
	}
	runs := runBinary(t, disk, "runs", "--json")
	if runs.code != 0 || !strings.Contains(runs.stdout, `"state":"unfinished"`) {
		t.Fatalf("nika runs: exit %d %s %s", runs.code, runs.stdout, runs.stderr)
	}
}
