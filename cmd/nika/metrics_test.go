package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// metered runs three infer jobs on the offline mock model.
const metered = `nika: v1
workflow: metered
model: mock/echo
tasks:
  - id: greet
    infer: { prompt: "hello" }
  - id: each
    for_each: [1, 2]
    infer: { prompt: "item ${{ item }}" }
outputs:
  greeting: ${{ tasks.greet.output }}
`

func meteredDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "metered.nika.yaml"), metered)
	return dir
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// `nika run --metrics-addr 127.0.0.1:0 --metrics-linger`: stderr names the address, /metrics serves
// the finished run's metrics during the linger, an interrupt ends the linger with the run's exit code,
// and the server is gone afterwards.
func TestRunMetricsServeAndLinger(t *testing.T) {
	cmd := exec.Command(nikaBin, "run", "metered.nika.yaml", "--no-trace", "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "10m")
	cmd.Dir, cmd.Env = meteredDir(t), testEnv
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once cmd.Wait returned waitErr
	var waitErr error
	defer func() {
		cmd.Process.Kill() // a no-op once it exited
		<-exited
	}()
	// stderr: the address line, then the linger line once the run is over.
	addrRe := regexp.MustCompile(`^nika run: serving metrics at (http://127\.0\.0\.1:\d+/metrics)$`)
	urls := make(chan string, 1)
	var errMu sync.Mutex
	var errLines []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			errMu.Lock()
			errLines = append(errLines, sc.Text())
			errMu.Unlock()
			if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		close(urls)
		waitErr = cmd.Wait() // after both pipes are drained
		close(exited)
	}()
	// stdout gets the outputs when the run is over: from then on the metrics are final.
	out, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || out != `{"greeting":"hello"}`+"\n" {
		t.Fatalf("stdout %q (%v)", out, err)
	}
	url, ok := <-urls
	if !ok {
		t.Fatalf("no stderr line names the metrics address: %q", errLines)
	}
	body, err := scrape(url)
	if err != nil {
		t.Fatalf("scraping %s during the linger: %v", url, err)
	}
	for _, want := range []string{
		`nika_workflow_runs_total{state="success",workflow="metered"} 1`,
		`nika_workflow_runs_in_flight 0`,
		`nika_task_runs_total{status="success",verb="infer",workflow="metered"} 3`,
		`nika_task_duration_seconds_count{verb="infer"} 3`,
		`nika_llm_requests_total{model="mock/echo",outcome="ok",provider="mock"} 3`,
		`nika_build_info{go_version="go`,
		`process_start_time_seconds `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `task="`) {
		t.Error("a task label without --metrics-task-label")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("after the interrupted linger: %v, want exit 0 (the run's outcome)", waitErr)
		}
	case <-time.After(30 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("an interrupt did not end the linger")
	}
	errMu.Lock()
	joined := strings.Join(errLines, "\n")
	errMu.Unlock()
	if !strings.Contains(joined, "the run is over; serving metrics at "+url+" for 10m0s more") {
		t.Errorf("stderr lacks the linger line:\n%s", joined)
	}
	if _, err := scrape(url); err == nil {
		t.Errorf("%s still answers after nika exited", url)
	}
}

// `nika run --pushgateway URL`: one PUT of the run's metrics to /metrics/job/nika/workflow/<name>,
// the workflow label moved into the grouping key; a failing Pushgateway is reported and leaves the
// exit code alone.
func TestRunMetricsPushgateway(t *testing.T) {
	var mu sync.Mutex
	var pushes []string
	var body string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		pushes = append(pushes, r.Method+" "+r.URL.EscapedPath())
		body = string(b)
		mu.Unlock()
	}))
	defer gw.Close()
	dir := meteredDir(t)
	r := runBinary(t, dir, "run", "metered.nika.yaml", "--no-trace", "--quiet", "--pushgateway", gw.URL, "--metrics-task-label")
	if r.code != 0 || r.stdout != `{"greeting":"hello"}`+"\n" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pushes) != 1 || pushes[0] != "PUT /metrics/job/nika/workflow/metered" {
		t.Fatalf("pushes %q, want one PUT /metrics/job/nika/workflow/metered", pushes)
	}
	for _, want := range []string{
		`nika_workflow_runs_total{state="success"} 1`,
		`nika_task_runs_total{status="success",task="each",verb="infer"} 2`,
		`nika_task_runs_total{status="success",task="greet",verb="infer"} 1`,
		`nika_llm_tokens_total{kind="input",model="mock/echo",provider="mock"} `,
		`# TYPE nika_workflow_run_duration_seconds histogram`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the pushed body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "workflow=") {
		t.Errorf("a pushed series keeps its workflow label (the Pushgateway refuses it):\n%s", body)
	}

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "pushgateway is sad", http.StatusInternalServerError)
	}))
	defer down.Close()
	r = runBinary(t, dir, "run", "metered.nika.yaml", "--no-trace", "--quiet", "--pushgateway", down.URL)
	if r.code != 0 || r.stdout != `{"greeting":"hello"}`+"\n" || !strings.Contains(r.stderr, "Pushgateway") || !strings.Contains(r.stderr, "500") {
		t.Errorf("a failing Pushgateway: exit %d, stdout %q, stderr %q; want exit 0, the outputs, a line naming the 500", r.code, r.stdout, r.stderr)
	}
}

func TestRunMetricsFlagErrors(t *testing.T) {
	dir := meteredDir(t)
	busy := httptest.NewServer(http.NotFoundHandler()) // an address already taken
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--metrics-linger", "5s"}, 2, "needs --metrics-addr"},
		{[]string{"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "-1s"}, 2, "--metrics-linger must be ≥ 0"},
		{[]string{"--metrics-linger", "soon"}, 2, "invalid value"},
		{[]string{"--pushgateway", "localhost:9091"}, 2, "base URL"},
		{[]string{"--pushgateway", "ftp://gw"}, 2, "base URL"},
		{[]string{"--metrics-addr", strings.TrimPrefix(busy.URL, "http://")}, 3, "cannot serve metrics on"},
	} {
		r := runBinary(t, dir, append([]string{"run", "metered.nika.yaml", "--no-trace"}, tc.args...)...)
		if r.code != tc.code || r.stdout != "" || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit %d, no stdout, %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.err)
		}
	}
}

// failingLong fails one task at once while another runs on: the run's state will be failure.
const failingLong = `nika: v1
workflow: failing
permits:
  exec: ["sh"]
tasks:
  - id: bad
    exec: { command: ["sh", "-c", "exit 1"] }
  - id: slow
    exec: { command: ["sh", "-c", "sleep 30"] }
`

// An interrupted run does not linger (--metrics-linger ends at an interrupt), even when its state is
// failure rather than cancelled because a task had failed before the interrupt.
func TestRunMetricsNoLingerAfterInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { noLingerAfter(t, sig) })
	}
}

func noLingerAfter(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "failing.nika.yaml"), failingLong)
	cmd := exec.Command(nikaBin, "run", "failing.nika.yaml", "--no-trace", "--no-progress", "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "10m")
	cmd.Dir, cmd.Env = dir, testEnv
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var lines []string
	failed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "bad") && strings.Contains(sc.Text(), "NIKA-EXEC-001") {
				close(failed)
			}
		}
		exited <- cmd.Wait() // after stderr is drained
	}()
	defer cmd.Process.Kill() // a no-op once it exited
	select {
	case <-failed: // bad failed; slow is still running
	case <-time.After(30 * time.Second):
		t.Fatal("no stderr line says that bad failed")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("exit %v, want 130 (interrupted)", err)
		}
		if joined := strings.Join(lines, "\n"); strings.Contains(joined, "the run is over") {
			t.Errorf("an interrupted run lingers:\n%s", joined)
		}
	case <-time.After(30 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("an interrupted run with a failed task kept serving /metrics for its linger")
	}
}

// With port 0 the address line is the only way to learn where the metrics are, so --quiet keeps
// it (and only it) on stderr; a fixed port under --quiet prints nothing.
func TestRunMetricsQuietNamesAPickedPort(t *testing.T) {
	dir := meteredDir(t)
	r := runBinary(t, dir, "run", "metered.nika.yaml", "--no-trace", "--quiet", "--metrics-addr", "127.0.0.1:0")
	if r.code != 0 || !regexp.MustCompile(`^nika run: serving metrics at http://127\.0\.0\.1:\d+/metrics\n$`).MatchString(r.stderr) {
		t.Errorf("exit %d, stderr %q; want only the address line", r.code, r.stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r = runBinary(t, dir, "run", "metered.nika.yaml", "--no-trace", "--quiet", "--metrics-addr", addr)
	if r.code != 0 || r.stderr != "" {
		t.Errorf("fixed port: exit %d, stderr %q; want nothing", r.code, r.stderr)
	}
}
