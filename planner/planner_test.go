package planner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is a fake exec verb driven by the argv it is given:
//
//	["echo", X]            output X
//	["fail", CODE]         error CODE (transient per the registry)
//	["flaky", N, CODE]     error CODE on attempts 1..N, then output "ok"
//	["block"]              wait for cancellation
//	["wait", NAME]         wait until NAME is signalled (or cancellation)
//	["signal", NAME, X]    signal NAME, output X
//	["log", MSG]           emit a log event, output MSG
//	["pause", MSG]         wait for an answer to MSG (Outcome.Pause)
type script struct {
	mu      sync.Mutex
	signals map[string]chan struct{}
	jitter  bool               // randomize latency (determinism tests)
	cancel  context.CancelFunc // ["cancel"]: cancel the run, then block
	timers  *manualTimers      // ["deadline"]: fire the job's deadline timer, then block
}

func newScript() *script { return &script{signals: map[string]chan struct{}{}} }

func (s *script) ch(name string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.signals[name]
	if !ok {
		c = make(chan struct{})
		s.signals[name] = c
	}
	return c
}

func (s *script) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	argv, _ := job.Fields["command"].([]any)
	arg := func(i int) string {
		if i < len(argv) {
			return fmt.Sprint(argv[i])
		}
		return ""
	}
	if s.jitter {
		select {
		case <-time.After(time.Duration(rand.IntN(300)) * time.Microsecond):
		case <-ctx.Done():
		}
	}
	switch arg(0) {
	case "echo":
		return workflow.Outcome{Output: argv[1]}
	case "pause":
		return workflow.Outcome{Pause: &workflow.Question{Mode: "input", Message: arg(1)}}
	case "fail":
		return workflow.Failed(spec.NewError(arg(1), "scripted failure", nil))
	case "flaky":
		n, _ := strconv.Atoi(arg(1))
		if job.Attempt <= n {
			return workflow.Failed(spec.NewError(arg(2), fmt.Sprintf("attempt %d fails", job.Attempt), nil))
		}
		return workflow.Outcome{Output: "ok"}
	case "flaky-then-block":
		if n, _ := strconv.Atoi(arg(1)); job.Attempt <= n {
			return workflow.Failed(spec.NewError(arg(2), fmt.Sprintf("attempt %d fails", job.Attempt), nil))
		}
		<-ctx.Done()
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	case "cancel":
		s.cancel()
		<-ctx.Done()
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	case "deadline":
		s.timers.fire(job.Task.ID, job.Iteration, TimerDeadline)
		<-ctx.Done()
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	case "block":
		<-ctx.Done()
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	case "wait":
		select {
		case <-s.ch(arg(1)):
			return workflow.Outcome{Output: "waited"}
		case <-ctx.Done():
			return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
		}
	case "signal":
		close(s.ch(arg(1)))
		return workflow.Outcome{Output: arg(2)}
	case "note":
		if job.Live != nil {
			job.Live(workflow.LiveNote{Kind: event.LiveToolCallFinished, Tool: arg(1), Turn: 2, Index: 1})
		}
		return workflow.Outcome{Output: arg(1)}
	case "log":
		job.Emit(event.Log, map[string]any{"level": "info", "message": arg(1)})
		return workflow.Outcome{Output: arg(1)}
	}
	return workflow.Failed(spec.NewError("NIKA-EXEC-002", "unknown script "+arg(0), nil))
}

// manualTimers arms a driver's timers on no clock: a test fires one when it
// wants (a rendezvous), through the driver's inbox like a real one, so that
// it comes after every report put before it.
type manualTimers struct {
	d     *driver
	mu    sync.Mutex
	cond  *sync.Cond
	armed []Timer
}

// useManualTimers makes d's timers manual.
func useManualTimers(d *driver) *manualTimers {
	m := &manualTimers{d: d}
	m.cond = sync.NewCond(&m.mu)
	d.arm = m.arm
	return m
}

func (m *manualTimers) arm(t Timer) {
	m.mu.Lock()
	m.armed = append(m.armed, t)
	m.mu.Unlock()
	m.cond.Broadcast()
}

// fire fires the armed timer of that task, iteration and kind, once the
// driver armed it (a job may run before its step's timers are armed).
func (m *manualTimers) fire(task string, iteration int, kind TimerKind) {
	m.mu.Lock()
	for {
		for i, t := range m.armed {
			if t.Task == task && t.Iteration == iteration && t.Kind == kind {
				m.armed = append(m.armed[:i], m.armed[i+1:]...)
				m.mu.Unlock()
				m.d.results.put(jobResult{timer: &t})
				return
			}
		}
		m.cond.Wait()
	}
}

type run struct {
	res      Result
	events   []event.Event
	lines    []string // deterministic lines
	finished []string // live task_finished order (completion order)
}

func compile(t testing.TB, src string) *workflow.Workflow {
	t.Helper()
	a := spec.CheckSource("t.nika.yaml", []byte(src), spec.CheckOptions{})
	if !a.Valid() {
		for _, f := range a.Findings {
			t.Log(spec.FormatFinding("t.nika.yaml", f))
		}
		t.Fatal("invalid workflow")
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func execute(t testing.TB, ctx context.Context, src string, s *script, cfg Config) run {
	t.Helper()
	w := compile(t, src)
	mem := event.NewMemory()
	var mu sync.Mutex
	var finished []string
	live := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveTaskFinished {
			mu.Lock()
			finished = append(finished, l.Task)
			mu.Unlock()
		}
	})
	res := Run(ctx, w, Inputs{Vars: map[string]any{}, Env: map[string]any{}, Secrets: map[string]any{}},
		Options{Config: cfg, Verbs: map[string]Verb{"exec": s}, Canonical: mem, Live: live})
	r := run{res: res, events: mem.Events(), finished: finished}
	for _, l := range mem.Lines() {
		d, err := event.Deterministic(l)
		if err != nil {
			t.Fatal(err)
		}
		r.lines = append(r.lines, string(d))
	}
	return r
}

func (r run) task(id string) TaskResult {
	for _, t := range r.res.Tasks {
		if t.ID == id {
			return t
		}
	}
	return TaskResult{}
}

// kinds lists "kind task" for each event, the canonical sequence.
func (r run) kinds() []string {
	var out []string
	for _, e := range r.events {
		s := e.Kind
		if e.Task != "" {
			s += " " + e.Task
		}
		out = append(out, s)
	}
	return out
}

const header = "nika: v1\nworkflow: t\n"

func TestGatesAndCascade(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["fail", "NIKA-EXEC-001"] }
  - id: b
    depends_on: [a]
    exec: { command: ["echo", "b"] }
  - id: c
    depends_on: [b]
    exec: { command: ["echo", "c"] }
  - id: always
    depends_on: [a, c]
    when: true
    exec: { command: ["echo", "${{ tasks.a.status }}/${{ tasks.c.status }}"] }
  - id: never
    when: false
    exec: { command: ["echo", "x"] }
  - id: free
    exec: { command: ["echo", "free"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	for id, want := range map[string]string{"a": "failure", "b": "cancelled", "c": "cancelled", "always": "success", "never": "skipped", "free": "success"} {
		if got := string(r.task(id).Status); got != want {
			t.Errorf("%s: status %q, want %q", id, got, want)
		}
	}
	if got := r.task("always").Output; got != "failure/cancelled" {
		t.Errorf("always output = %v, want failure/cancelled", got)
	}
	if r.task("b").Error != nil {
		t.Errorf("a gate-cancelled task has no error, got %v", r.task("b").Error)
	}
	if r.res.State != "failure" {
		t.Errorf("state = %s, want failure (the always-pattern does not turn it into success)", r.res.State)
	}
	// Cancelled-by-gate and skipped tasks have only their terminal event.
	want := []string{"workflow_started", "task_started a", "task_failed a", "task_skipped never", "task_started free", "task_completed free",
		"task_cancelled b", "task_cancelled c", "task_started always", "task_completed always", "workflow_failed"}
	if got := r.kinds(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

func TestForEachOrderAndNulls(t *testing.T) {
	src := header + `tasks:
  - id: each
    for_each: ["a", "b", "c", "d"]
    max_parallel: 2
    fail_fast: false
    exec: { command: ["${{ item == 'c' ? 'fail' : 'echo' }}", "${{ item == 'c' ? 'NIKA-EXEC-001' : item + string(index) }}"] }
    output: { up: "ascii_upcase" }
  - id: empty
    for_each: []
    exec: { command: ["echo", "x"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	each := r.task("each")
	if each.Status != "failure" {
		t.Fatalf("each = %s, want failure", each.Status)
	}
	got := fmt.Sprint(each.Output)
	if got != "[a0 b1 <nil> d3]" {
		t.Errorf("output = %s, want [a0 b1 <nil> d3] (input order, null at the failed index)", got)
	}
	if each.Error == nil || each.Error.Details["iteration"] != 2 {
		t.Errorf("error = %+v, want details.iteration 2", each.Error)
	}
	if r.task("empty").Status != "skipped" {
		t.Errorf("empty collection: %s, want skipped", r.task("empty").Status)
	}
}

func TestForEachFailFast(t *testing.T) {
	// Iteration 1 fails while 2 blocks: 2 is cancelled, 3 never starts, 0 finishes (D3).
	src := header + `tasks:
  - id: each
    for_each: [["echo", "zero"], ["fail", "NIKA-EXEC-001"], ["block"], ["echo", "three"]]
    max_parallel: 3
    exec: { command: "${{ item }}" }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	each := r.task("each")
	if each.Status != "failure" || fmt.Sprint(each.Output) != "[zero <nil> <nil> <nil>]" {
		t.Errorf("each = %s %v, want failure [zero <nil> <nil> <nil>]", each.Status, each.Output)
	}
}

func TestRetryCountsAndOnCodes(t *testing.T) {
	src := header + `tasks:
  - id: transient
    retry: { max_attempts: 3, backoff_ms: 0 }
    exec: { command: ["flaky", "2", "NIKA-BUILTIN-FETCH-002"] }
  - id: not_listed
    retry: { max_attempts: 3, backoff_ms: 0 }
    exec: { command: ["flaky", "1", "NIKA-EXEC-001"] }
  - id: listed
    retry: { max_attempts: 3, backoff_ms: 0, on_codes: [NIKA-EXEC-001] }
    exec: { command: ["flaky", "2", "NIKA-EXEC-001"] }
  - id: exhausted
    retry: { max_attempts: 2, backoff_ms: 0, on_codes: [NIKA-EXEC-001] }
    exec: { command: ["flaky", "5", "NIKA-EXEC-001"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	for id, want := range map[string]string{"transient": "success", "not_listed": "failure", "listed": "success", "exhausted": "failure"} {
		if got := string(r.task(id).Status); got != want {
			t.Errorf("%s = %s, want %s", id, got, want)
		}
	}
	if e := r.task("exhausted").Error; e == nil || e.Attempt != 2 {
		t.Errorf("exhausted error = %+v, want attempt 2", e)
	}
	retries := 0
	for _, e := range r.events {
		if e.Kind == event.TaskRetrying {
			retries++
		}
	}
	if retries != 2+2+1 {
		t.Errorf("task_retrying events = %d, want 5", retries)
	}
}

func TestOnError(t *testing.T) {
	src := header + `tasks:
  - id: cache
    exec: { command: ["echo", "cached"] }
  - id: recovered
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { recover: "${{ tasks.cache.output }}" }
    output: { up: "ascii_upcase" }
  - id: skipped
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { skip: true }
  - id: reader
    depends_on: [skipped, recovered]
    exec: { command: ["echo", "${{ tasks.skipped.error.code }} ${{ tasks.recovered.up }}"] }
  - id: other_code
    exec: { command: ["fail", "NIKA-EXEC-002"] }
    on_error: { skip: true, on_codes: [NIKA-EXEC-001] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	if rec := r.task("recovered"); rec.Status != "success" || rec.Output != "cached" || rec.Error != nil {
		t.Errorf("recovered = %s %v %v", rec.Status, rec.Output, rec.Error)
	}
	if sk := r.task("skipped"); sk.Status != "skipped" || sk.Error == nil || sk.Error.Code != "NIKA-EXEC-001" {
		t.Errorf("skipped = %s %+v, want skipped keeping its error", sk.Status, sk.Error)
	}
	if got := r.task("reader").Output; got != "NIKA-EXEC-001 CACHED" {
		t.Errorf("reader = %v: the recovered value must go through the bindings", got)
	}
	if got := r.task("other_code").Status; got != "failure" {
		t.Errorf("other_code = %s, want failure (code not listed)", got)
	}
}

func TestOnFinally(t *testing.T) {
	src := header + `tasks:
  - id: build
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_finally:
      - exec: { command: ["log", "cleanup ${{ tasks.build.status }}"] }
      - when: ${{ tasks.build.status == 'success' }}
        exec: { command: ["log", "never"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	var logs []string
	for _, e := range r.events {
		if e.Kind == event.Log {
			logs = append(logs, fmt.Sprint(e.Fields["message"]))
		}
	}
	if strings.Join(logs, "|") != "cleanup failure" {
		t.Errorf("on_finally logs = %v, want [cleanup failure]", logs)
	}
	if r.task("build").Status != "failure" {
		t.Error("on_finally must not change the outcome")
	}
}

// TestEagerStart proves a later-wave task starts before an earlier-wave
// sibling finishes: `waiter` (wave 0) blocks until `late` (wave 1) signals
// it. A wave-by-wave scheduler deadlocks; the timeout turns that into a
// failure instead of a hang.
func TestEagerStart(t *testing.T) {
	src := header + `tasks:
  - id: waiter
    timeout: "10s"
    exec: { command: ["wait", "late-ran"] }
  - id: quick
    exec: { command: ["echo", "q"] }
  - id: late
    depends_on: [quick]
    exec: { command: ["signal", "late-ran", "l"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	if r.task("waiter").Status != "success" {
		t.Fatalf("waiter = %s %+v: the wave-1 task did not start before the wave-0 task finished", r.task("waiter").Status, r.task("waiter").Error)
	}
	// Release still follows the canonical order: waiter before late.
	if got := strings.Join(r.kinds(), ","); !strings.Contains(got, "task_completed waiter,task_started quick,task_completed quick,task_started late") {
		t.Errorf("release order: %s", got)
	}
}

func TestUserCancel(t *testing.T) {
	src := header + `tasks:
  - id: long
    exec: { command: ["cancel"] }
    on_finally:
      - exec: { command: ["log", "finally ran"] }
  - id: after
    depends_on: [long]
    when: true
    exec: { command: ["echo", "x"] }
`
	// `long` cancels the run itself once it is running (order, not timing),
	// then blocks until the cancellation reaches it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newScript()
	s.cancel = cancel
	r := execute(t, ctx, src, s, Config{})
	if l := r.task("long"); l.Status != "cancelled" || l.Error == nil || l.Error.Code != "NIKA-CANCEL-001" {
		t.Errorf("long = %s %+v, want cancelled with NIKA-CANCEL-001", l.Status, l.Error)
	}
	if a := r.task("after"); a.Status != "cancelled" || a.Error != nil {
		t.Errorf("after = %s %+v, want cancelled without error (not even when: true starts)", a.Status, a.Error)
	}
	if r.res.State != "cancelled" {
		t.Errorf("state = %s", r.res.State)
	}
	found := false
	for _, e := range r.events {
		found = found || (e.Kind == event.Log && e.Fields["message"] == "finally ran")
	}
	if !found {
		t.Error("on_finally did not run after the cancellation")
	}
}

// TestDeterminism runs one workflow many times at parallelism 1, 2 and
// unbounded with random latencies: the canonical stream (timing and run id
// removed) must be identical, and completion order must actually vary.
func TestDeterminism(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "a"] }
  - id: b
    exec: { command: ["log", "b"] }
  - id: c
    depends_on: [a]
    for_each: ["x", "y", "z"]
    exec: { command: ["echo", "${{ item }}"] }
  - id: d
    depends_on: [a, b]
    retry: { max_attempts: 2, backoff_ms: 0, on_codes: [NIKA-EXEC-001] }
    exec: { command: ["flaky", "1", "NIKA-EXEC-001"] }
  - id: e
    depends_on: [c, d]
    exec: { command: ["echo", "${{ tasks.c.output }}"] }
  - id: f
    exec: { command: ["fail", "NIKA-EXEC-001"] }
  - id: g
    depends_on: [f]
    exec: { command: ["echo", "g"] }
`
	var golden string
	orders := map[string]bool{}
	for round := 0; round < 30; round++ {
		for _, p := range []int{1, 2, 0} {
			s := newScript()
			s.jitter = true
			r := execute(t, context.Background(), src, s, Config{MaxParallelTasks: p, RunID: fmt.Sprint(round)})
			orders[strings.Join(r.finished, ",")] = true
			got := strings.Join(r.lines, "\n")
			if golden == "" {
				golden = got
				continue
			}
			if got != golden {
				t.Fatalf("round %d, parallelism %d: canonical stream differs:\n%s\n--- first ---\n%s", round, p, got, golden)
			}
		}
	}
	// D32: the test proves nothing unless completion order really varied.
	if len(orders) < 2 {
		t.Fatalf("completion order never varied over %d runs; the test proves nothing", 90)
	}
}

// batcher is a BatchVerb that records the size of every call.
type batcher struct {
	mu    sync.Mutex
	sizes []int
}

func (b *batcher) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	return b.RunBatch(ctx, []workflow.Job{job})[0]
}

func (b *batcher) RunBatch(_ context.Context, jobs []workflow.Job) []workflow.Outcome {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(jobs))
	b.mu.Unlock()
	out := make([]workflow.Outcome, len(jobs))
	for i, j := range jobs {
		out[i] = workflow.Outcome{Output: fmt.Sprint(j.Fields["prompt"])}
	}
	return out
}

// D5: the attempts one step starts for a batch-capable verb go out as one
// RunBatch call, and outcomes still land at their own index.
func TestBatchVerb(t *testing.T) {
	w := compile(t, header+`model: mock/echo
tasks:
  - id: each
    for_each: ["a", "b", "c", "d", "e"]
    infer: { prompt: "p-${{ item }}" }
  - id: single
    infer: { prompt: "one" }
`)
	b := &batcher{}
	res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"infer": b}})
	if res.State != "success" {
		t.Fatalf("state %s", res.State)
	}
	if got := fmt.Sprint(res.Tasks[0].Output); got != "[p-a p-b p-c p-d p-e]" {
		t.Errorf("output %s", got)
	}
	if fmt.Sprint(b.sizes) != "[6]" {
		t.Errorf("RunBatch sizes = %v, want [6]: the five iterations and the other task start in one step", b.sizes)
	}
}

func TestOutputsTyped(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "text"] }
outputs:
  good: ${{ tasks.a.output }}
  wrong: { value: "${{ tasks.a.output }}", type: integer }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	if r.res.State != "failure" || r.res.Error == nil || r.res.Error.Code != "NIKA-VAR-009" {
		t.Errorf("state %s error %+v, want failure with NIKA-VAR-009", r.res.State, r.res.Error)
	}
	if r.res.Outputs["good"] != "text" || r.res.Outputs["wrong"] != nil {
		t.Errorf("outputs = %v", r.res.Outputs)
	}
	// In a run that already failed, outputs that cannot be evaluated are null, silently.
	r = execute(t, context.Background(), header+`tasks:
  - id: a
    exec: { command: ["fail", "NIKA-EXEC-001"] }
outputs:
  x: ${{ tasks.a.error.details.nope.x }}
`, newScript(), Config{})
	if r.res.State != "failure" || r.res.Error != nil || r.res.Outputs["x"] != nil {
		t.Errorf("failed run: state %s error %+v outputs %v", r.res.State, r.res.Error, r.res.Outputs)
	}
}

// A for_each iteration whose recover waits on another task while a sibling
// iteration still runs must resume once that task is terminal (it hung).
func TestForEachRecoverWaitsWithSiblingRunning(t *testing.T) {
	src := header + `tasks:
  - id: fe
    for_each: [["fail", "NIKA-EXEC-001"], ["signal", "s1", "v1"]]
    exec: { command: "${{ item }}" }
    on_error: { recover: "${{ tasks.r.output }}" }
  - id: r
    exec: { command: ["wait", "s1"] }
`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a regression cancels instead of hanging
	defer cancel()
	r := execute(t, ctx, src, newScript(), Config{MaxParallelTasks: 2})
	if fe := r.task("fe"); fe.Status != "success" || fmt.Sprint(fe.Output) != "[waited v1]" {
		t.Errorf("fe = %s %v %+v, want success [waited v1]", fe.Status, fe.Output, fe.Error)
	}
}

// A user cancellation never hides a real failure that came first (D23).
func TestCancelKeepsEarlierFailure(t *testing.T) {
	src := header + `tasks:
  - id: fe
    for_each: [["fail", "NIKA-EXEC-001"], ["cancel"]]
    max_parallel: 1
    fail_fast: false
    exec: { command: "${{ item }}" }
  - id: out
    for_each: [["echo", "v0"], ["cancel"]]
    max_parallel: 1
    exec: { command: "${{ item }}" }
`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newScript()
	s.cancel = cancel
	r := execute(t, ctx, src, s, Config{MaxParallelTasks: 1})
	if fe := r.task("fe"); fe.Status != "failure" || fe.Error == nil || fe.Error.Code != "NIKA-EXEC-001" {
		t.Errorf("fe = %s %+v, want failure NIKA-EXEC-001", fe.Status, fe.Error)
	}
	if r.res.State != "failure" {
		t.Errorf("state = %s, want failure", r.res.State)
	}
	// out never started (the cancel came first) or was cancelled: no output either way.
	if o := r.task("out"); o.Status != "cancelled" || o.Output != nil {
		t.Errorf("out = %s %v, want cancelled with no output (§3.13)", o.Status, o.Output)
	}
}

// Dependents start only once a task is settled, after its on_finally
// (§3.12): here a's on_finally waits for b, so only its own timeout can end
// it (the driver enforces Work.Timeout), whatever the machine's speed.
func TestDependentsWaitForOnFinally(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "a"] }
    on_finally:
      - timeout: "1ms"
        exec: { command: ["wait", "b-started"] }
  - id: b
    depends_on: [a]
    exec: { command: ["signal", "b-started", "b"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	var warned bool
	for _, e := range r.events {
		warned = warned || (e.Kind == event.Log && e.Task == "a" && strings.Contains(fmt.Sprint(e.Fields["message"]), "on_finally step 0 failed"))
	}
	if !warned || r.task("b").Status != "success" {
		t.Errorf("b started before a's on_finally ended (warned=%v, b=%s)", warned, r.task("b").Status)
	}
}

// Verbs' live observations reach the live stream stamped with their job,
// and never the canonical one (D19).
func TestLiveNotes(t *testing.T) {
	w := compile(t, header+`tasks:
  - id: each
    for_each: ["a", "b"]
    exec: { command: ["note", "${{ item }}"] }
`)
	var mu sync.Mutex
	var got []string
	live := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveToolCallFinished {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s[%d]#%d %s t%d i%d", l.Task, l.Iteration, l.Attempt, l.Tool, l.Turn, l.Index))
			mu.Unlock()
		}
	})
	mem := event.NewMemory()
	Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"exec": newScript()}, Canonical: mem, Live: live})
	sort.Strings(got)
	if strings.Join(got, ",") != "each[0]#1 a t2 i1,each[1]#1 b t2 i1" {
		t.Errorf("live notes = %v", got)
	}
	for _, e := range mem.Events() {
		if e.Kind == event.LiveToolCallFinished {
			t.Error("a live note reached the canonical stream")
		}
	}
}

// settler is a BatchVerb that settles each job's outcome as soon as it is
// known (Job.Settle): "fail" fails at once, "hold" waits until the planner
// cancels that job alone (or gives up after 5 s and answers "late"),
// "gate" waits until a job "open" has run, "open" opens the gate, anything
// else answers its prompt.
type settler struct {
	gate      chan struct{}
	cancelled atomic.Int32
}

func (s *settler) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	return s.RunBatch(ctx, []workflow.Job{job})[0]
}

func (s *settler) RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome {
	out := make([]workflow.Outcome, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprint(j.Fields["prompt"])
			switch p {
			case "fail":
				out[i] = workflow.Failed(spec.NewError("NIKA-INFER-001", "scripted failure", nil))
			case "hold":
				select {
				case <-j.Cancelled:
					s.cancelled.Add(1)
					out[i] = workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
				case <-time.After(5 * time.Second):
					out[i] = workflow.Outcome{Output: "late"}
				}
			case "gate":
				select {
				case <-s.gate:
					out[i] = workflow.Outcome{Output: "gate"}
				case <-time.After(5 * time.Second):
					out[i] = workflow.Failed(spec.NewError("NIKA-INFER-001", "the dependant of a settled job never started", nil))
				}
			case "open":
				close(s.gate)
				out[i] = workflow.Outcome{Output: "open"}
			default:
				out[i] = workflow.Outcome{Output: p}
			}
			if j.Settle != nil {
				j.Settle(out[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// D3 with D5: a batch that settles a failing iteration early lets fail_fast
// cancel the iterations above it still running in the same batch. Without early
// settlement the core would hear of the failure only when the held
// iterations gave up, and none would be cancelled.
func TestBatchSettleFailsFastWhileSiblingsRun(t *testing.T) {
	w := compile(t, header+`model: mock/echo
tasks:
  - id: each
    for_each: ["below", "fail", "hold", "hold"]
    infer: { prompt: "${{ item }}" }
`)
	s := &settler{gate: make(chan struct{})}
	res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"infer": s}})
	if res.State != "failure" || res.Tasks[0].Error == nil || res.Tasks[0].Error.Code != "NIKA-INFER-001" {
		t.Fatalf("state %s, task error %+v; want failure with NIKA-INFER-001", res.State, res.Tasks[0].Error)
	}
	if got := s.cancelled.Load(); got != 2 {
		t.Errorf("%d of 2 held iterations were cancelled; the failure must cancel them while they run", got)
	}
}

// A job settled early releases its dependants while its batch siblings still
// run: "gate" finishes only once "after", which depends on "quick" alone,
// has started.
func TestBatchSettleReleasesDependantsEarly(t *testing.T) {
	w := compile(t, header+`model: mock/echo
tasks:
  - id: quick
    infer: { prompt: "quick" }
  - id: slow
    infer: { prompt: "gate" }
  - id: after
    depends_on: [quick]
    infer: { prompt: "open" }
`)
	s := &settler{gate: make(chan struct{})}
	res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"infer": s}})
	if res.State != "success" {
		t.Fatalf("state %s: %+v", res.State, res.Error)
	}
	for _, tr := range res.Tasks {
		if tr.Error != nil {
			t.Errorf("task %s: %v", tr.ID, tr.Error)
		}
	}
}
