package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
)

// scriptedOpenAI answers an agent: the first turn asks for three tools in
// one response, the second (once tool results come back) answers in prose.
// It records the tool_call_id order of the results it receives.
type scriptedOpenAI struct {
	mu        sync.Mutex
	resultIDs [][]string
}

func (s *scriptedOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	var ids []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			ids = append(ids, m.ToolCallID)
		}
	}
	if len(ids) == 0 {
		io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Working.","tool_calls":[
 {"id":"call_c","type":"function","function":{"name":"nika_hash","arguments":"{\"content\":\"alpha\"}"}},
 {"id":"call_a","type":"function","function":{"name":"nika_jq","arguments":"{\"expression\":\". + 1\",\"input\":41}"}},
 {"id":"call_b","type":"function","function":{"name":"nika_hash","arguments":"{\"content\":\"beta\",\"algo\":\"sha512\"}"}}]}}],
 "usage":{"prompt_tokens":30,"completion_tokens":20}}`)
		return
	}
	s.mu.Lock()
	s.resultIDs = append(s.resultIDs, ids)
	s.mu.Unlock()
	io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"All done."}}],"usage":{"prompt_tokens":80,"completion_tokens":3}}`)
}

// nika run on an agent task driven by a scripted OpenAI-compatible server:
// the canonical trace is the same with --max-parallel-tools 1 and 8, and
// the tool results go back to the server in request order.
func TestRunAgentParallelToolsSameTrace(t *testing.T) {
	fake := &scriptedOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var traces []string
	for _, n := range []string{"1", "8"} {
		dir := t.TempDir()
		copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent.nika.yaml"), filepath.Join(dir, "agent.nika.yaml"))
		cmd := exec.Command(nikaBin, "run", "agent.nika.yaml", "--max-parallel-tools", n, "--trace", "trace.ndjson", "--quiet")
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, testEnv...), "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-test")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("--max-parallel-tools %s: %v", n, err)
		}
		if string(out) != `{"answer":"All done."}`+"\n" {
			t.Errorf("stdout = %q", out)
		}
		f, err := os.Open(filepath.Join(dir, "trace.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			d, err := event.Deterministic(sc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(d))
		}
		f.Close()
		traces = append(traces, strings.Join(lines, "\n"))
	}
	if traces[0] != traces[1] {
		t.Errorf("canonical traces differ:\n--- 1 ---\n%s\n--- 8 ---\n%s", traces[0], traces[1])
	}
	if !strings.Contains(traces[0], `"tool":"nika:jq"`) || strings.Count(traces[0], `"kind":"tool_invoked"`) != 3 {
		t.Errorf("the trace lacks the three tool calls:\n%s", traces[0])
	}
	for _, ids := range fake.resultIDs {
		if strings.Join(ids, ",") != "call_c,call_a,call_b" {
			t.Errorf("tool results sent back as %v, want request order call_c,call_a,call_b", ids)
		}
	}
	if len(fake.resultIDs) != 2 {
		t.Errorf("the server saw %d result turns, want 2 (one per run)", len(fake.resultIDs))
	}
}

// for_each over an agent task: the iterations go through the verb's
// RunBatch and the shared mock provider, and the outputs stay in item
// order whatever the parallelism (AGENT.md §11.4).
func TestForEachAgentOutputsInItemOrder(t *testing.T) {
	dir := t.TempDir() // a run keeps its journal in its run directory
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-each.nika.yaml"), filepath.Join(dir, "agent-each.nika.yaml"))
	want := `{"answers":["Hash alpha, then finish.","Hash beta, then finish.","Hash gamma, then finish.","Hash delta, then finish."]}` + "\n"
	for _, n := range []string{"1", "8"} {
		r := runBinary(t, dir, "run", "agent-each.nika.yaml", "--no-trace", "--quiet", "--max-parallel-tools", n)
		if r.code != 0 || r.stdout != want {
			t.Errorf("--max-parallel-tools %s: exit %d stdout %q stderr %q", n, r.code, r.stdout, r.stderr)
		}
	}
}

// One failing iteration of a for_each over an agent is an outcome beside
// the others (§11.4): its slot is null, the others keep their values, and
// the task's error names the iteration.
func TestForEachIterationFailureIsAnOutcome(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-each-fail.nika.yaml"), filepath.Join(dir, "f.nika.yaml"))
	r := runBinary(t, dir, "run", "f.nika.yaml", "--no-trace", "--quiet", "--report", "r.json")
	want := `{"answers":["Iteration 0: hash a word, then finish.",null,"Iteration 2: hash a word, then finish."]}` + "\n"
	if r.code != 1 || r.stdout != want {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var rep struct {
		Tasks map[string]struct {
			Status string `json:"status"`
			Error  struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	e := rep.Tasks["each"]
	if e.Status != "failure" || e.Error.Code != "NIKA-AGENT-002" || e.Error.Details["iteration"] != 1.0 || e.Error.Details["partial_output"] == nil {
		t.Errorf("each = %+v", e)
	}
}

// agentEachTrace runs agent-each.nika.yaml with extra flags and returns the
// canonical trace lines; it fails the test on any tool_invoked that lacks
// the task/attempt/iteration stamps, and returns the iterations seen.
func agentEachTrace(t *testing.T, args ...string) ([]string, map[float64]bool) {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-each.nika.yaml"), filepath.Join(dir, "a.nika.yaml"))
	r := runBinary(t, dir, append([]string{"run", "a.nika.yaml", "--quiet", "--trace", "t.ndjson"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f, err := os.Open(filepath.Join(dir, "t.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	iterations := map[float64]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Kind      string   `json:"kind"`
			Task      string   `json:"task"`
			Attempt   float64  `json:"attempt"`
			Iteration *float64 `json:"iteration"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "tool_invoked" {
			if e.Task != "each" || e.Attempt != 1 || e.Iteration == nil {
				t.Errorf("unstamped agent event: %s", sc.Text())
			} else {
				iterations[*e.Iteration] = true
			}
		}
		d, _ := event.Deterministic(sc.Bytes())
		lines = append(lines, string(d))
	}
	return lines, iterations
}

// runWithServer runs the binary in dir against an OpenAI-compatible server.
func runWithServer(t *testing.T, dir, url string, args ...string) result {
	t.Helper()
	cmd := exec.Command(nikaBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test")
	cmd.Stdin = strings.NewReader("")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

type traceEvent struct {
	Kind      string   `json:"kind"`
	Task      string   `json:"task"`
	Attempt   float64  `json:"attempt"`
	Iteration *float64 `json:"iteration"`
	raw       string
}

func readTrace(t *testing.T, path string) []traceEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []traceEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e traceEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		e.raw = sc.Text()
		evs = append(evs, e)
	}
	return evs
}

// AGENT.md §13.6 / §10.2: agent events of a for_each task are stamped with
// task, attempt and iteration (every iteration 0..3 appears); agent events of
// a retried task carry the attempt that emitted them.
func TestRuntimeStampsTaskAttemptIteration(t *testing.T) {
	_, iterations := agentEachTrace(t, "--max-parallel-tools", "8")
	if len(iterations) != 4 {
		t.Errorf("tool_invoked seen for iterations %v, want 0..3", iterations)
	}

	// Retried task: the very first request is a 400 bad_request (NIKA-INFER-001,
	// not transient, so the provider front end does not repeat it); the
	// task's retry.on_codes retries it and attempt 2 runs the agent through.
	fake := &scriptedOpenAI{}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"scripted bad request","type":"invalid_request_error"}}`)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-retry.nika.yaml"), filepath.Join(dir, "r.nika.yaml"))
	r := runWithServer(t, dir, srv.URL, "run", "r.nika.yaml", "--quiet", "--trace", "t.ndjson")
	if r.code != 0 || r.stdout != `{"answer":"All done."}`+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("the server saw %d requests, want 3 (one failed, two of attempt 2)", got)
	}
	invoked := 0
	for _, e := range readTrace(t, filepath.Join(dir, "t.ndjson")) {
		if e.Kind != "tool_invoked" {
			continue
		}
		invoked++
		if e.Task != "solve" || e.Attempt != 2 || e.Iteration != nil {
			t.Errorf("agent event of the retry not stamped task solve, attempt 2, no iteration: %s", e.raw)
		}
	}
	if invoked != 3 {
		t.Errorf("%d tool_invoked events, want 3 (all from attempt 2)", invoked)
	}
}

// AGENT.md §13.6: the canonical event stream of a for_each over an agent is
// the same with task/tool parallelism 1 and 8.
func TestEventStreamIdenticalAcrossWaveAndForEachParallelism(t *testing.T) {
	a, _ := agentEachTrace(t, "--max-parallel-tasks", "1", "--max-parallel-tools", "1")
	b, _ := agentEachTrace(t, "--max-parallel-tasks", "8", "--max-parallel-tools", "8")
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("canonical streams differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// AGENT.md §13.6 as amended by D3/D40: under fail_fast: true the task error
// is the lowest failed iteration, and iterations queued after it never start
// (max_parallel 1 queues them; no tool_invoked is ever stamped above the
// failed index); the subtest covers iterations already running (max_parallel 4).
func TestForEachFailFastCancelsRest(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-each-failfast.nika.yaml"), filepath.Join(dir, "f.nika.yaml"))
	r := runBinary(t, dir, "run", "f.nika.yaml", "--quiet", "--trace", "t.ndjson", "--report", "r.json")
	if r.code != 1 {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var rep struct {
		Tasks map[string]struct {
			Status string `json:"status"`
			Error  struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	e := rep.Tasks["each"]
	if e.Status != "failure" || e.Error.Code != "NIKA-AGENT-002" || e.Error.Details["iteration"] != 2.0 {
		t.Errorf("each = %+v", e)
	}
	f, err := os.Open(filepath.Join(dir, "t.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[float64]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Kind      string   `json:"kind"`
			Iteration *float64 `json:"iteration"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Iteration != nil && ev.Kind == "tool_invoked" {
			seen[*ev.Iteration] = true
		}
	}
	for i := range seen {
		if i > 2 {
			t.Errorf("iteration %v ran after the fail-fast failure at 2 (seen %v)", i, seen)
		}
	}
	if !seen[0] || !seen[1] {
		t.Errorf("iterations before the failure did not run: %v", seen)
	}
	t.Run("running iterations are cancelled", failFastCancelsRunning)
}

// failFastCancelsRunning (AGENT.md §13.6 / D3): under fail_fast: true,
// iterations already running when a lower-indexed sibling fails are
// cancelled: iterations 2 and 3 hold their requests open, iteration 1 fails
// (a non-transient 400) once they are in flight, iteration 0 (below the
// failure) finishes. The slots from 1 up are null, the task error is
// iteration 1's, no event of 2 or 3 is kept, and the held requests are
// cancelled by the run.
func failFastCancelsRunning(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	var cancelled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		switch {
		case strings.Contains(body, "Iteration 0:"):
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"zero"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
		case strings.Contains(body, "Iteration 1:"):
			waitOrTimeout(&arrived, holdRunning)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"scripted bad request","type":"invalid_request_error"}}`)
		default:
			arrived.Done()
			select {
			case <-r.Context().Done():
				cancelled.Add(1)
			case <-time.After(holdRunning):
				io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"late"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
			}
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "agent-each-cancel.nika.yaml"), filepath.Join(dir, "c.nika.yaml"))
	start := time.Now()
	r := runWithServer(t, dir, srv.URL, "run", "c.nika.yaml", "--quiet", "--trace", "t.ndjson", "--report", "r.json")
	took := time.Since(start)
	if r.code != 1 || r.stdout != `{"answers":["zero",null,null,null]}`+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var rep struct {
		Tasks map[string]struct {
			Status string `json:"status"`
			Error  struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	e := rep.Tasks["each"]
	if e.Status != "failure" || e.Error.Code != "NIKA-INFER-001" || e.Error.Details["iteration"] != 1.0 {
		t.Errorf("each = %+v", e)
	}
	for _, ev := range readTrace(t, filepath.Join(dir, "t.ndjson")) {
		if ev.Iteration != nil && *ev.Iteration > 1 {
			t.Errorf("event of a cancelled iteration above the failure kept (D3 drops them): %s", ev.raw)
		}
	}
	// The held requests ended because the run cancelled them, not because the
	// server gave up: Close waits for every handler, and a handler that was
	// not cancelled answers only after holdRunning.
	srv.Close()
	if c := cancelled.Load(); c != 2 {
		t.Fatalf("%d of 2 running iterations cancelled (run took %v); D3 requires cancelling them", c, took.Round(time.Millisecond))
	}
}

// holdRunning bounds how long the fake server holds requests that the run
// is expected to cancel.
const holdRunning = 2 * time.Second

func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
