package main

// Integration tests of issue 16 against a real Temporal server: the dev server of
// temporal/devserver, built apart (its own module) and found through $NIKA_TEMPORAL_DEVSERVER:
//
//	go -C temporal/devserver build -o /tmp/nika-devserver .
//	NIKA_TEMPORAL_DEVSERVER=/tmp/nika-devserver go test ./cmd/nika/ -run Devserver
//
// Without it the tests skip, unless NIKA_REQUIRE_INTEGRATION=1 (.ci/run) makes that a failure.

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// devserverBinary is the built dev server, or the test skips (fails under NIKA_REQUIRE_INTEGRATION=1).
func devserverBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("NIKA_TEMPORAL_DEVSERVER")
	if bin == "" {
		msg := "NIKA_TEMPORAL_DEVSERVER is not set (go -C temporal/devserver build -o BIN . and point it at BIN)"
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 makes that a failure")
		}
		t.Skip(msg)
	}
	return bin
}

// syncBuffer collects a process's stderr for the failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startUntil starts cmd and returns once a line of the stream (stdout or stderr) starts with
// ready; the rest of both streams goes to the returned buffer. The process is stopped with
// SIGTERM at the test's end (one killed already is only waited for).
func startUntil(t testing.TB, cmd *exec.Cmd, fromStdout bool, ready string) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	var r *bufio.Reader
	if fromStdout {
		p, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		r = bufio.NewReader(p)
		cmd.Stderr = logs
	} else {
		p, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		r = bufio.NewReader(p)
		cmd.Stdout = logs
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
	})
	found := make(chan bool, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if !seen && strings.HasPrefix(sc.Text(), ready) {
				seen = true
				found <- true
			}
		}
		if !seen {
			found <- false
		}
	}()
	if !<-found {
		t.Fatalf("%s ended before saying %q:\n%s", cmd.Path, ready, logs.String())
	}
	return logs
}

// startDevServer starts a dev server on a free loopback port with its database in dir and
// returns its address once it accepts connections.
func startDevServer(t testing.TB, dir string) string {
	t.Helper()
	bin := devserverBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--addr", addr, "--db", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	startUntil(t, cmd, true, "devserver: listening on "+addr)
	return addr
}

// startWorker starts `nika worker` in dir with env added to the test environment; it returns
// once the worker serves its queue.
func startWorker(t testing.TB, dir, addr, queue string, env ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(nikaBin, "worker", "--temporal", addr, "--task-queue", queue)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), env...)
	logs := startUntil(t, cmd, false, "nika worker: serving")
	return cmd, logs
}

// failoverYAML: first, then a long exec that, on its first dispatch in a directory holding the
// FIFOs, tells the test which worker runs it (through started.fifo) and waits (on hold.fifo,
// which nobody writes), then last. Each exec appends its worker's name to its counter file.
const failoverYAML = `nika: v1
workflow: failover
tasks:
  - id: first
    exec: { command: 'echo "$NIKA_TEST_WORKER" >> first.count; echo one' }
  - id: long
    depends_on: [first]
    exec: { command: 'echo "$NIKA_TEST_WORKER" >> long.count; if [ -p started.fifo ] && [ "$(wc -l < long.count)" -eq 1 ]; then echo "$NIKA_TEST_WORKER" > started.fifo; read x < hold.fifo; fi; echo two' }
  - id: last
    depends_on: [long]
    exec: { command: 'echo "$NIKA_TEST_WORKER" >> last.count; echo three' }
outputs:
  all: ${{ [tasks.first.output, tasks.long.output, tasks.last.output] }}
`

// Two workers; the one running the long exec is SIGKILLed: the run completes on the other,
// no exec that had completed ran again, and stdout and the exit code are a local run's.
func TestDevserverExecWorkerKilled(t *testing.T) {
	devserverBinary(t)
	dir, local := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, local} {
		writeFile(t, filepath.Join(d, "f.nika.yaml"), failoverYAML)
	}
	for _, f := range []string{"started.fifo", "hold.fifo"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := runBinaryEnv(t, local, []string{"NIKA_TEST_WORKER=local"}, "run", "f.nika.yaml", "--quiet", "--no-trace")
	if want.code != 0 {
		t.Fatalf("the local run: exit %d, stderr %s", want.code, want.stderr)
	}
	addr := startDevServer(t, dir)
	workers := map[string]*exec.Cmd{}
	logs := map[string]*syncBuffer{}
	for _, name := range []string{"A", "B"} {
		workers[name], logs[name] = startWorker(t, dir, addr, "nika", "NIKA_TEST_WORKER="+name)
	}
	run := exec.Command(nikaBin, "run", "--temporal", addr, "--heartbeat-timeout", "2s", "f.nika.yaml", "--quiet", "--no-trace")
	run.Dir, run.Env = dir, testEnv
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "started.fifo")) // blocks until the long exec writes
	if err != nil {
		t.Fatal(err)
	}
	victim := strings.TrimSpace(string(b))
	w, ok := workers[victim]
	if !ok {
		t.Fatalf("the long exec names worker %q", victim)
	}
	if err := w.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = run.Wait()
	code := 0
	if err != nil {
		code = run.ProcessState.ExitCode()
	}
	if code != want.code || stdout.String() != want.stdout {
		t.Fatalf("the Temporal run: exit %d stdout %q stderr %s; the local run: exit %d stdout %q\nworker A:\n%s\nworker B:\n%s",
			code, stdout.String(), stderr.String(), want.code, want.stdout, logs["A"], logs["B"])
	}
	survivor := map[string]string{"A": "B", "B": "A"}[victim]
	count := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name+".count"))
		return string(b)
	}
	if got := count("first"); got != "A\n" && got != "B\n" {
		t.Errorf("first ran %q, want once", got)
	}
	if got := count("long"); got != victim+"\n"+survivor+"\n" {
		t.Errorf("long ran %q, want on %s and then on %s", got, victim, survivor)
	}
	if got := count("last"); got != survivor+"\n" {
		t.Errorf("last ran %q, want once on %s", got, survivor)
	}
}
