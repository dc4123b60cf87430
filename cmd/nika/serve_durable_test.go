package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runStatus is GET /v1/runs/{id}: its state, questions and report.
type runStatus struct {
	State     string `json:"state"`
	Questions []struct {
		Task, Mode, Message string
		Choices             []string
	} `json:"questions"`
	Report *struct {
		Outputs map[string]any `json:"outputs"`
	} `json:"report"`
}

const helloWorkflow = "nika: v1\nworkflow: hello\nmodel: mock/echo\ntasks:\n  - id: hi\n    infer: { prompt: hi }\noutputs:\n  greeting: ${{ tasks.hi.output }}\n"

func (s *served) status(id string) runStatus {
	s.t.Helper()
	code, b := s.do("GET", "/v1/runs/"+id, "")
	var st runStatus
	if err := json.Unmarshal([]byte(b), &st); code != http.StatusOK || err != nil {
		s.t.Fatalf("GET %s: %d %s", id, code, b)
	}
	return st
}

// waitJournaled waits until the run's journal in the state directory holds task's success: the
// point after which a killed server must not run it again. The deadline only stops a broken
// test from hanging.
func waitJournaled(t *testing.T, stateDir, id, task string) {
	t.Helper()
	want := `"kind":"job","task":"` + task + `"`
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(stateDir, "runs", id, "journal.ndjson"))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, want) && strings.Contains(line, `"status":"success"`) {
				return
			}
		}
	}
	t.Fatalf("%s was never journaled", task)
}

// nika serve with a state directory survives its own death: a run in flight when the process
// was killed (SIGKILL) resumes when it starts again, without running again what it journaled;
// a paused run stays paused and takes its answers through the API; a finished run stays
// queryable.
func TestServeSurvivesItsRestart(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	fifo := mkfifo(t, dir, "hold")
	permits := writePermits(t, dir, "exec: [sh, cat]\ntools: [\"nika:prompt\"]\n")
	crash := `nika: v1
workflow: crash
tasks:
  - id: one
    exec: { command: ["sh", "-c", "echo x >> ` + filepath.Join(dir, "one.count") + `; echo one"] }
  - id: two
    depends_on: [one]
    exec: { command: ["cat", "` + fifo + `"] }
outputs:
  one: ${{ tasks.one.output }}
  two: ${{ tasks.two.output }}
`
	gate := `nika: v1
workflow: gate
tasks:
  - id: approve
    invoke: { tool: "nika:prompt", args: { mode: confirm, message: "Go?" } }
  - id: after
    depends_on: [approve]
    exec: { command: ["sh", "-c", "echo x >> ` + filepath.Join(dir, "after.count") + `; echo done"] }
outputs:
  go: ${{ tasks.approve.output }}
  after: ${{ tasks.after.output }}
`
	s1 := startServe(t, dir, "--permits", permits, "--state-dir", state)
	done := s1.submit(helloWorkflow)
	if st, _ := s1.finish(done); st != "success" {
		t.Fatalf("hello: %s", st)
	}
	paused := s1.submit(gate)
	s1.finish(paused)
	if st := s1.status(paused); st.State != "paused" || len(st.Questions) != 1 || st.Questions[0].Task != "approve" || st.Questions[0].Message != "Go?" {
		t.Fatalf("the prompt's run: %+v", st)
	}
	inflight := s1.submit(crash)
	waitJournaled(t, state, inflight, "one")
	s1.cmd.Process.Kill()
	s1.wait()

	s2 := startServe(t, dir, "--permits", permits, "--state-dir", state)
	if !strings.Contains(s2.stderr(), "run "+inflight+" (workflow crash) taken up: resumed from its journal") { // logged before it listens
		t.Fatalf("the in-flight run was not taken up:\n%s", s2.stderr())
	}
	release(t, fifo) // the resumed run's `cat` reads it
	if st, _ := s2.finish(inflight); st != "success" {
		t.Fatalf("the resumed run: %s\n%s", st, s2.stderr())
	}
	if out := s2.status(inflight).Report.Outputs; out["one"] != "one" || out["two"] != "released" {
		t.Fatalf("the resumed run's outputs: %v", out)
	}
	if n := counterOfFile(t, filepath.Join(dir, "one.count")); n != 1 {
		t.Fatalf("task one, journaled before the kill, ran %d times", n)
	}
	if st := s2.status(done); st.State != "success" || st.Report == nil || st.Report.Outputs["greeting"] == nil {
		t.Fatalf("the finished run after the restart: %+v", st)
	}
	if st := s2.status(paused); st.State != "paused" || len(st.Questions) != 1 {
		t.Fatalf("the paused run after the restart: %+v", st)
	}
	if code, b := s2.do("POST", "/v1/runs/"+paused+"/answers", `{"answers": {"approve": "perhaps"}}`); code != http.StatusBadRequest || !strings.Contains(b, "not an answer to a confirm prompt") {
		t.Fatalf("a bad answer: %d %s", code, b)
	}
	if code, b := s2.do("POST", "/v1/runs/"+paused+"/answers", `{"answers": {"approve": true}}`); code != http.StatusAccepted {
		t.Fatalf("answers: %d %s", code, b)
	}
	if st, _ := s2.finish(paused); st != "success" {
		t.Fatalf("the answered run: %s\n%s", st, s2.stderr())
	}
	if out := s2.status(paused).Report.Outputs; out["go"] != true || out["after"] != "done" {
		t.Fatalf("the answered run's outputs: %v", out)
	}
	if code, _ := s2.do("POST", "/v1/runs/"+paused+"/answers", `{"answers": {"approve": true}}`); code != http.StatusConflict {
		t.Fatalf("answers to a finished run: %d, want 409", code)
	}
	fi, err := os.Stat(filepath.Join(state, "runs", inflight, "journal.ndjson"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the journal's mode: %v %v", fi.Mode(), err)
	}
}
