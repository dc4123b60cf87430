package main

// Issue 16's human gates against the dev server (NIKA_TEMPORAL_DEVSERVER, see
// temporal_devserver_test.go): a nika:prompt nobody can answer at a terminal waits on Temporal,
// `nika answer` lists it, refuses a bad answer without sending anything and sends a good one;
// `nika serve --temporal` shows the run paused with its question and takes its answer over HTTP.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// gateYAML: a confirm gate without a default (nobody at a terminal can answer it), then a task
// that runs only when the answer is yes; the outputs are the answer and what that task made.
const gateYAML = `nika: v1
workflow: gate
permits:
  tools: ["nika:prompt", "nika:jq"]
tasks:
  - id: approve
    invoke: { tool: "nika:prompt", args: { mode: confirm, message: "Ship v1?" } }
  - id: ship
    depends_on: [approve]
    when: ${{ tasks.approve.output }}
    invoke: { tool: "nika:jq", args: { expression: '"shipped " + .', input: "v1" } }
outputs:
  approved: ${{ tasks.approve.output }}
  shipped: ${{ tasks.ship.output }}
`

// gateWantStdout is a yes-answered run's stdout (canonical JSON, keys sorted).
const gateWantStdout = `{"approved":true,"shipped":"shipped v1"}` + "\n"

// gateSignals counts the answer signals the run's workflow history holds.
func gateSignals(t *testing.T, c client.Client, runID string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", runID, err)
		}
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			n++
		}
	}
	return n
}

// gateDial is a Temporal client of the dev server at addr, closed at the test's end.
func gateDial(t *testing.T, addr string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietTemporalLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// gateRun is a `nika run --temporal` in flight.
type gateRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *syncBuffer
	runID  chan string // the workflow id named by the first question's line
	exited chan int    // the exit code, once the process has ended
}

// gateStartRun starts `nika run --temporal addr f.nika.yaml` in dir and follows its stderr for
// the question's line, which names the run's workflow (its run id).
func gateStartRun(t *testing.T, dir, addr string) *gateRun {
	t.Helper()
	r := &gateRun{stderr: &syncBuffer{}, runID: make(chan string, 1), exited: make(chan int, 1)}
	r.cmd = exec.Command(nikaBin, "run", "--temporal", addr, "f.nika.yaml", "--no-trace")
	r.cmd.Dir, r.cmd.Env = dir, testEnv
	r.cmd.Stdout = &r.stdout
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		asked, sent := false, false
		for sc.Scan() {
			line := sc.Text()
			r.stderr.Write([]byte(line + "\n"))
			switch {
			case strings.HasPrefix(line, "nika run: approve asks (confirm): Ship v1?"):
				asked = true
			case asked && !sent && strings.HasPrefix(line, "  answer with: nika answer --temporal "):
				f := strings.Fields(line) // answer with: nika answer --temporal ADDR RUN approve=VALUE
				if len(f) != 8 || f[7] != "approve=VALUE" {
					t.Errorf("the answer line is %q", line)
				}
				r.runID <- f[6]
				sent = true
			}
		}
		if !sent {
			close(r.runID)
		}
		code := 0
		if err := r.cmd.Wait(); err != nil {
			code = r.cmd.ProcessState.ExitCode()
		}
		r.exited <- code
	}()
	t.Cleanup(func() {
		select {
		case code := <-r.exited:
			r.exited <- code
		default:
			r.cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// A confirm gate of a run on Temporal waits for `nika answer`: the run does not end while the
// question is open; --list --json lists it; `maybe` is exit 2 and signals nothing; yes is exit 0,
// and the run then ends with exit 0 and the outputs of a yes. An unknown run id is exit 3.
func TestDevserverGateAnswer(t *testing.T) {
	devserverBinary(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.nika.yaml"), gateYAML)
	addr := startDevServer(t, dir)
	_, wlogs := startWorker(t, dir, addr, "nika")
	c := gateDial(t, addr)
	run := gateStartRun(t, dir, addr)

	var runID string
	select {
	case id, ok := <-run.runID:
		if !ok {
			code := <-run.exited
			run.exited <- code
			t.Fatalf("nika run --temporal ended (exit %d) without asking: stdout %q stderr:\n%s\nworker:\n%s",
				code, run.stdout.String(), run.stderr, wlogs)
		}
		runID = id
	case <-time.After(60 * time.Second):
		t.Fatalf("no question within 60s; stderr:\n%s\nworker:\n%s", run.stderr, wlogs)
	}

	list := runBinary(t, dir, "answer", "--temporal", addr, runID, "--list", "--json")
	if list.code != 0 {
		t.Fatalf("answer --list --json: exit %d stderr %s", list.code, list.stderr)
	}
	var qs []map[string]any
	if err := json.Unmarshal([]byte(list.stdout), &qs); err != nil {
		t.Fatalf("answer --list --json printed %q: %v", list.stdout, err)
	}
	if len(qs) != 1 || qs[0]["task"] != "approve" || qs[0]["name"] != "approve" || qs[0]["mode"] != "confirm" ||
		qs[0]["message"] != "Ship v1?" || qs[0]["choices"] != nil || qs[0]["iteration"] != nil {
		t.Fatalf("answer --list --json: %s, want the one confirm question of approve", list.stdout)
	}

	bad := runBinary(t, dir, "answer", "--temporal", addr, runID, "approve=maybe")
	if bad.code != exitUsage || !strings.Contains(bad.stderr, "nothing was sent") {
		t.Fatalf("answer approve=maybe: exit %d stderr %q, want 2 saying nothing was sent", bad.code, bad.stderr)
	}
	if n := gateSignals(t, c, runID); n != 0 {
		t.Fatalf("after the refused answer the run got %d signals, want 0", n)
	}
	again := runBinary(t, dir, "answer", "--temporal", addr, runID, "--list", "--json")
	if again.code != 0 || again.stdout != list.stdout {
		t.Fatalf("after the refused answer, --list --json: exit %d %q, want the same question %q", again.code, again.stdout, list.stdout)
	}
	select {
	case code := <-run.exited:
		t.Fatalf("nika run --temporal ended (exit %d) while its question was open: stdout %q stderr:\n%s", code, run.stdout.String(), run.stderr)
	default:
	}

	for _, args := range [][]string{{"nosuch-run", "--list"}, {"nosuch-run", "approve=yes"}} {
		r := runBinary(t, dir, append([]string{"answer", "--temporal", addr}, args...)...)
		if r.code != exitEnv || !strings.Contains(r.stderr, "is not on this Temporal namespace") {
			t.Errorf("answer %s: exit %d stderr %q, want 3 naming the unknown run", strings.Join(args, " "), r.code, r.stderr)
		}
	}

	yes := runBinary(t, dir, "answer", "--temporal", addr, runID, "approve=yes")
	if yes.code != 0 {
		t.Fatalf("answer approve=yes: exit %d stderr %s", yes.code, yes.stderr)
	}
	var code int
	select {
	case code = <-run.exited:
		run.exited <- code
	case <-time.After(60 * time.Second):
		t.Fatalf("nika run --temporal did not end within 60s of the answer; stderr:\n%s\nworker:\n%s", run.stderr, wlogs)
	}
	if code != 0 || run.stdout.String() != gateWantStdout {
		t.Fatalf("nika run --temporal: exit %d stdout %q, want 0 and %q; stderr:\n%s\nworker:\n%s",
			code, run.stdout.String(), gateWantStdout, run.stderr, wlogs)
	}
	if n := gateSignals(t, c, runID); n != 1 {
		t.Errorf("the run got %d signals, want the one answer", n)
	}
	after := runBinary(t, dir, "answer", "--temporal", addr, runID, "approve=yes")
	if after.code != exitUsage || !strings.Contains(after.stderr, "waits for no answer") {
		t.Errorf("answering the ended run again: exit %d stderr %q, want 2: it waits for no answer", after.code, after.stderr)
	}
}

// gateHTTP sends one request to the server and decodes its JSON answer.
func gateHTTP(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object: %v", method, url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// gatePoll polls GET url until its state is want (60s at most), and returns the last body.
func gatePoll(t *testing.T, url, want string, logs ...*syncBuffer) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := gateHTTP(t, http.MethodGet, url, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", url, code, body)
		}
		if body["state"] == want {
			return body
		}
		if s, _ := body["state"].(string); s != "queued" && s != "running" && s != "paused" {
			t.Fatalf("GET %s: state %q (%v), want %q", url, s, body, want)
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("GET %s: still %v after 60s, want state %q", url, body, want)
			for _, l := range logs {
				msg += "\n" + l.String()
			}
			t.Fatal(msg)
		}
		time.Sleep(50 * time.Millisecond) // polling a state, not standing in for an event
	}
}

// `nika serve --temporal` with a worker: the gated run shows "paused" with its question; a bad
// answer is 400 and signals nothing; a yes is 202, and the run ends in success with the outputs
// of a yes.
func TestDevserverGateServe(t *testing.T) {
	devserverBinary(t)
	dir := t.TempDir()
	addr := startDevServer(t, dir)
	_, wlogs := startWorker(t, dir, addr, "nika")
	c := gateDial(t, addr)
	permits := writePermits(t, dir, `tools: ["nika:prompt", "nika:jq"]`+"\n")
	serve := exec.Command(nikaBin, "serve", "--temporal", addr, "--addr", "127.0.0.1:0", "--permits", permits)
	serve.Dir, serve.Env = dir, testEnv
	slogs := startUntil(t, serve, false, "nika serve: listening on http://")
	var base string
	for _, l := range strings.Split(slogs.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "nika serve: listening on "); ok {
			base = strings.TrimSpace(rest)
		}
	}
	if base == "" {
		t.Fatalf("no listening line:\n%s", slogs)
	}

	sub, _ := json.Marshal(map[string]any{"workflow": gateYAML})
	code, body := gateHTTP(t, http.MethodPost, base+"/v1/runs", string(sub))
	id, _ := body["run_id"].(string)
	if code != http.StatusAccepted || id == "" {
		t.Fatalf("POST /v1/runs: %d %v, want 202 with a run_id", code, body)
	}
	runURL := base + "/v1/runs/" + id
	paused := gatePoll(t, runURL, "paused", slogs, wlogs)
	wantQs := []any{map[string]any{"task": "approve", "mode": "confirm", "message": "Ship v1?"}}
	if !reflect.DeepEqual(paused["questions"], wantQs) || paused["report"] != nil {
		t.Fatalf("the paused run: %v, want questions %v and no report yet", paused, wantQs)
	}

	code, body = gateHTTP(t, http.MethodPost, runURL+"/answers", `{"answers":{"approve":"maybe"}}`)
	if code != http.StatusBadRequest {
		t.Fatalf("POST answers approve=maybe: %d %v, want 400", code, body)
	}
	if n := gateSignals(t, c, id); n != 0 {
		t.Fatalf("after the refused answer the run got %d signals, want 0", n)
	}
	code, body = gateHTTP(t, http.MethodPost, runURL+"/answers", `{"answers":{"nosuch":"yes"}}`)
	if code != http.StatusBadRequest {
		t.Fatalf("POST answers to a task that does not ask: %d %v, want 400", code, body)
	}
	if again := gatePoll(t, runURL, "paused", slogs, wlogs); !reflect.DeepEqual(again["questions"], wantQs) {
		t.Fatalf("after the refused answers: %v, want the same question", again)
	}

	code, body = gateHTTP(t, http.MethodPost, runURL+"/answers", `{"answers":{"approve":"yes"}}`)
	if code != http.StatusAccepted || body["state"] != "running" {
		t.Fatalf("POST answers approve=yes: %d %v, want 202 running", code, body)
	}
	done := gatePoll(t, runURL, "success", slogs, wlogs)
	rep, _ := done["report"].(map[string]any)
	wantOut := map[string]any{"approved": true, "shipped": "shipped v1"}
	if rep == nil || !reflect.DeepEqual(rep["outputs"], wantOut) || rep["workflow_state"] != "success" {
		t.Fatalf("the finished run: %v, want a success report with outputs %v", done, wantOut)
	}
	tasks, _ := rep["tasks"].(map[string]any)
	for _, task := range []string{"approve", "ship"} {
		if tr, _ := tasks[task].(map[string]any); tr == nil || tr["status"] != "success" {
			t.Errorf("task %s in the report: %v, want success", task, tasks[task])
		}
	}
	if n := gateSignals(t, c, id); n != 1 {
		t.Errorf("the run got %d signals, want the one answer", n)
	}
	code, body = gateHTTP(t, http.MethodPost, runURL+"/answers", `{"answers":{"approve":"yes"}}`)
	if code != http.StatusConflict {
		t.Errorf("POST answers to the finished run: %d %v, want 409", code, body)
	}
}
