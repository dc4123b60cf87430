package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// journaledSuccesses reads the journal of the only run under dir and returns the jobs it
// journaled as succeeded ("task" or "task[i]").
func journaledSuccesses(t *testing.T, dir string) map[string]bool {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".nika", "runs", "*", "journal.ndjson"))
	if len(paths) != 1 {
		t.Fatalf("want one journal under %s, found %v", dir, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]bool{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l struct {
			R struct {
				Kind, Task, Status string
				Iteration          *int
			} `json:"r"`
		}
		if json.Unmarshal(line, &l) != nil || l.R.Kind != "job" || l.R.Status != "success" {
			continue // a torn last line does not count: it was not journaled
		}
		name := l.R.Task
		if l.R.Iteration != nil {
			name = fmt.Sprintf("%s[%d]", name, *l.R.Iteration)
		}
		ok[name] = true
	}
	return ok
}

// hasJournal reports whether a run under dir has a journal with its header (a process killed
// while it opened the journal has none, and nothing ran).
func hasJournal(dir string) bool {
	paths, _ := filepath.Glob(filepath.Join(dir, ".nika", "runs", "*", "journal.ndjson"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.IndexByte(b, '\n') > 0 {
			return true
		}
	}
	return false
}

// counterOf is how many times a job of counters.nika.yaml ran.
func counterOf(t *testing.T, dir, job string) int {
	name := job
	if strings.HasPrefix(job, "c3[") {
		name = "c3-" + string("pqr"[job[3]-'0'])
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".count"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

var counterJobs = []string{"a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3[0]", "c3[1]", "c3[2]", "d1", "d2", "d3"}

// nika run killed with SIGKILL at randomized points of a workflow of exec tasks, then resumed
// with --resume last: no job journaled as succeeded runs again (its counter stays 1), every
// other one runs (at least once: at-least-once, docs/journal.md), the outputs equal an uninterrupted run's, and it exits 0.
func TestCrashResumeRunsNothingJournaledTwice(t *testing.T) {
	fixture, err := filepath.Abs("testdata/durable/counters.nika.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clean := t.TempDir()
	copyFile(t, fixture, filepath.Join(clean, "flow.nika.yaml"))
	want := runBinary(t, clean, "run", "flow.nika.yaml", "--no-progress")
	if want.code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", want.code, want.stderr)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill points from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	resumed := 0 // kills after the journal was opened: at least 10 are wanted
	for i := 0; resumed < 10; i++ {
		if i == 40 {
			t.Fatalf("only %d of 40 kills came after the journal was opened", resumed)
		}
		dir := t.TempDir()
		copyFile(t, fixture, filepath.Join(dir, "flow.nika.yaml"))
		delay := time.Duration(rng.IntN(350)) * time.Millisecond
		cmd := exec.Command(nikaBin, "run", "flow.nika.yaml", "--no-progress")
		cmd.Dir, cmd.Env = dir, testEnv
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(delay, func() { cmd.Process.Kill() })
		err := cmd.Wait()
		killed := timer.Stop() == false && err != nil
		if !hasJournal(dir) {
			// Killed before its journal existed: nothing ran (the journal is opened before the
			// first task), and there is nothing to resume.
			for _, job := range counterJobs {
				if n := counterOf(t, dir, job); n != 0 {
					t.Fatalf("kill %d after %s: no journal, yet %s ran %d times", i, delay, job, n)
				}
			}
			t.Logf("kill %d after %s: before the journal", i, delay)
			continue
		}
		resumed++
		journaled := journaledSuccesses(t, dir)
		before := map[string]int{}
		for _, j := range counterJobs {
			before[j] = counterOf(t, dir, j)
		}
		got := runBinary(t, dir, "run", "flow.nika.yaml", "--resume", "last", "--no-progress")
		if got.code != 0 || got.stdout != want.stdout {
			t.Fatalf("kill %d after %s (killed %v): resumed run exit %d, stdout %q, want %q\n%s", i, delay, killed, got.code, got.stdout, want.stdout, got.stderr)
		}
		for _, j := range counterJobs {
			n := counterOf(t, dir, j)
			switch {
			case journaled[j] && n != 1:
				t.Errorf("kill %d after %s: %s was journaled as succeeded and ran %d times", i, delay, j, n)
			case n < 1 || n < before[j]:
				t.Errorf("kill %d after %s: %s ran %d times before the resume and %d after", i, delay, j, before[j], n)
			}
			// A job not journaled may have run any number of times by then: at least once (the
			// resume), plus its run in the killed process, whose child can outlive nika for a
			// moment (the orphan watcher kills it once it sees nika gone).
		}
		t.Logf("kill %d after %s: %d of %d jobs journaled", i, delay, len(journaled), len(counterJobs))
	}
}

const pauseFlow = `nika: v1
workflow: gate
permits:
  exec: ["sh"]
  tools: ["nika:prompt"]
tasks:
  - id: build
    exec: {command: ["sh", "-c", "echo x >> build.count; echo built"]}
  - id: approve
    depends_on: [build]
    invoke:
      tool: nika:prompt
      args: {mode: choice, message: "Ship ${{ tasks.build.output }}?", choices: ["ship", "hold"]}
  - id: other
    exec: {command: ["sh", "-c", "echo x >> other.count; echo other"]}
  - id: ship
    depends_on: [approve]
    exec: {command: ["sh", "-c", "echo x >> ship.count; echo ${{ tasks.approve.output }}"]}
outputs:
  decision: ${{ tasks.ship.output }}
  other: ${{ tasks.other.output }}
`

// A prompt nobody can answer pauses the run (exit 4, nothing on stdout, the question and the
// command that answers it on stderr) after everything that does not wait for it ran; --answer
// completes it without running again what succeeded.
func TestPromptPausesAndAnswerCompletes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "gate.nika.yaml"), []byte(pauseFlow), 0o644)
	r := runBinary(t, dir, "run", "gate.nika.yaml", "--no-progress", "--report", "report.json")
	if r.code != exitPaused || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, want 4 and nothing\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `approve asks "Ship built?" (choice ["ship" "hold"])`) ||
		!strings.Contains(r.stderr, "nika run gate.nika.yaml --resume r-") || !strings.Contains(r.stderr, "--answer approve=VALUE") {
		t.Fatalf("stderr does not say what the run waits for and how to answer:\n%s", r.stderr)
	}
	var rep struct {
		State string `json:"workflow_state"`
		Tasks map[string]struct{ Status string }
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	json.Unmarshal(b, &rep)
	if rep.State != "paused" || rep.Tasks["approve"].Status != "paused" || rep.Tasks["ship"].Status != "pending" || rep.Tasks["other"].Status != "success" {
		t.Fatalf("report %s", b)
	}
	bad := runBinary(t, dir, "run", "gate.nika.yaml", "--resume", "last", "--answer", "approve=maybe")
	if bad.code != exitUsage || !strings.Contains(bad.stderr, `"maybe" is not one of the choices "ship", "hold"`) {
		t.Fatalf("a bad answer: exit %d\n%s", bad.code, bad.stderr)
	}
	id := r.stderr[strings.Index(r.stderr, "--resume ")+len("--resume "):]
	id = id[:strings.IndexByte(id, ' ')]
	wrong := runBinary(t, dir, "run", "gate.nika.yaml", "--resume", id, "--answer", "build=1") // by run id
	if wrong.code != exitUsage || !strings.Contains(wrong.stderr, "waits for no answer from build (it waits for approve)") {
		t.Fatalf("an answer to a task that does not wait: exit %d\n%s", wrong.code, wrong.stderr)
	}
	traces, _ := filepath.Glob(filepath.Join(dir, ".nika", "traces", "*-"+id+".ndjson"))
	if len(traces) != 1 {
		t.Fatalf("traces of %s: %v", id, traces)
	}
	done := runBinary(t, dir, "run", "gate.nika.yaml", "--resume", traces[0], "--answer", "approve=1", "--no-progress") // by its trace
	if done.code != 0 || done.stdout != `{"decision":"ship","other":"other"}`+"\n" {
		t.Fatalf("answered: exit %d, stdout %q\n%s", done.code, done.stdout, done.stderr)
	}
	for _, job := range []string{"build", "other", "ship"} {
		if n := counterOfFile(t, filepath.Join(dir, job+".count")); n != 1 {
			t.Errorf("%s ran %d times", job, n)
		}
	}
}

func counterOfFile(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// turnServer is an OpenAI-compatible model that calls nika:hash once per turn for four turns,
// then answers. Its hang, when set, is the request (1-based) it never answers: it signals it and
// waits for the client to go away.
type turnServer struct {
	mu     sync.Mutex
	bodies []string
	hang   int
	hung   chan string
}

func (s *turnServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	n := len(s.bodies)
	s.mu.Unlock()
	if n == s.hang {
		s.hung <- string(b)
		<-r.Context().Done()
		return
	}
	results := strings.Count(string(b), `"role":"tool"`)
	if results >= 4 {
		io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hashed four"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}`)
		return
	}
	fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"turn %d","tool_calls":[
 {"id":"call_%d","type":"function","function":{"name":"nika_hash","arguments":"{\"content\":\"t%d\"}"}}]}}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`, results+1, results+1, results+1)
}

const agentFlow = `nika: v1
workflow: agent-resume
model: openai/gpt-test
permits:
  tools: ["nika:hash"]
tasks:
  - id: work
    agent:
      prompt: "Hash four times."
      tools: ["nika:hash"]
      max_turns: 8
outputs:
  answer: ${{ tasks.work.output }}
`

// An agent killed while it waits for its third model response resumes after its last
// completed turn: the resumed run sends exactly the remaining requests (3, 4, 5 of five), the
// first byte-identical to the one the killed process was sending.
func TestAgentResumesMidLoop(t *testing.T) {
	srv := &turnServer{hang: 3, hung: make(chan string, 1)}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agent.nika.yaml"), []byte(agentFlow), 0o644)
	env := append(append([]string{}, testEnv...), "OPENAI_BASE_URL="+ts.URL+"/v1", "OPENAI_API_KEY=sk-test")
	cmd := exec.Command(nikaBin, "run", "agent.nika.yaml", "--no-progress")
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var interrupted string
	select {
	case interrupted = <-srv.hung:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the agent never sent its third request\n%s", stderr.String())
	}
	cmd.Process.Kill()
	cmd.Wait()

	srv.mu.Lock()
	srv.bodies, srv.hang = nil, 0
	srv.mu.Unlock()
	r := runWithServer(t, dir, ts.URL, "run", "agent.nika.yaml", "--resume", "last", "--no-progress")
	if r.code != 0 || r.stdout != `{"answer":"hashed four"}`+"\n" {
		t.Fatalf("resumed: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.bodies) != 3 {
		t.Fatalf("the resumed run sent %d requests, want the remaining 3", len(srv.bodies))
	}
	if srv.bodies[0] != interrupted {
		t.Fatalf("the first resumed request differs from the interrupted one:\nresumed:     %s\ninterrupted: %s", srv.bodies[0], interrupted)
	}
}

// nika runs lists the runs of the directory from their journals, with their states.
func TestRunsListsTheJournals(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "gate.nika.yaml"), []byte(pauseFlow), 0o644)
	if r := runBinary(t, dir, "run", "gate.nika.yaml", "--no-progress"); r.code != exitPaused {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "run", "gate.nika.yaml", "--resume", "last", "--answer", "approve=hold"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "run", "gate.nika.yaml", "--no-progress"); r.code != exitPaused {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	r := runBinary(t, dir, "runs", "--json")
	var runs []struct {
		RunID, State, Workflow, File, Started string
		DurationMS                            *int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if len(runs) != 2 || runs[0].State != "success" || runs[1].State != "paused" || runs[0].Workflow != "gate" ||
		runs[0].File != filepath.Join(dir, "gate.nika.yaml") || runs[0].DurationMS == nil || runs[0].Started == "" {
		t.Fatalf("runs %+v", runs)
	}
	text := runBinary(t, dir, "runs")
	if text.code != 0 || !strings.HasPrefix(text.stdout, "RUN ") || !strings.Contains(text.stdout, runs[1].RunID) || !strings.Contains(text.stdout, "paused") {
		t.Fatalf("runs: exit %d\n%s", text.code, text.stdout)
	}
}
