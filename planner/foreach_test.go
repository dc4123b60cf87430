package planner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// The cost of a wide for_each (issue 12): completing or cancelling one
// iteration must cost O(1) amortized, whatever the width. These tests count
// work instead of timing it: Core.visits (the iterations the core looked at
// in its loops over a task's iterations) and driver.cancels (the calls of a
// job's cancel function). A scan per outcome makes either quadratic; the
// figures are in BENCHMARKS.md (for_each).

const wideHeader = header + `vars:
  items: { type: array, description: "the for_each items" }
`

func wideItems(n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = i
	}
	return items
}

// coreRun drives a Core by hand, without a driver: pick chooses which of
// the pending jobs finishes next, report says how it ends, and cancelAt (>0)
// cancels the run once that many jobs finished. Backoff timers fire at once,
// deadlines never. It returns the core and the canonical events.
type coreRun struct {
	pick     func(pending []Work) int
	report   func(wk Work) Report
	cancelAt int
}

func (cr coreRun) run(t *testing.T, src string, n int) (*Core, []event.Event) {
	t.Helper()
	w := compile(t, src)
	c := NewCore(w, Inputs{Vars: map[string]any{"items": wideItems(n)}}, Config{RunID: "r"})
	now := time.Unix(0, 0)
	var pending []Work
	var timers []Timer
	var events []event.Event
	take := func(s Step) bool {
		pending = append(pending, s.Start...)
		for _, tm := range s.Timers {
			if tm.Kind == TimerBackoff {
				timers = append(timers, tm)
			}
		}
		events = append(events, s.Events...)
		return s.Done
	}
	done := take(c.Start(now))
	finished := 0
	for steps := 0; !done; steps++ {
		if steps > 100*n+1000 {
			t.Fatalf("the run did not end after %d steps", steps)
		}
		switch {
		case cr.cancelAt > 0 && finished == cr.cancelAt:
			finished++
			done = take(c.Cancel(now))
		case len(timers) > 0:
			tm := timers[0]
			timers = timers[1:]
			done = take(c.TimerFired(tm, now))
		case len(pending) > 0:
			i := cr.pick(pending)
			wk := pending[i]
			if i == 0 {
				pending = pending[1:]
			} else {
				pending = append(pending[:i], pending[i+1:]...)
			}
			if wk.ID.Kind == JobGate { // the for_each collection: the real user code
				done = take(c.Finished(wk.ID, wk.Eval.runGate(context.Background()), now))
				continue
			}
			finished++
			done = take(c.Finished(wk.ID, cr.report(wk), now))
		default:
			t.Fatal("the run waits for nothing and is not done")
		}
	}
	return c, events
}

func fifo(pending []Work) int { return 0 }
func lifo(pending []Work) int { return len(pending) - 1 }

// echo reports the item as the output, with one log event the iteration
// emitted, whose place in the canonical stream the tests check.
func echo(wk Work) Report {
	var item any = "x"
	if wk.Eval != nil {
		item = wk.Eval.Scope.Item
	}
	return Report{Outcome: workflow.Outcome{Output: item},
		Emitted: []Emitted{{Kind: event.Log, Fields: map[string]any{"level": "info", "message": fmt.Sprint(item)}}}}
}

func failing(wk Work) Report {
	r := echo(wk)
	r.Outcome = workflow.Failed(spec.NewError("NIKA-EXEC-001", "scripted failure", nil))
	return r
}

// iterationOrder checks that the iteration events of task are in index
// order in the canonical stream (the determinism contract) and returns how
// many there are.
func iterationOrder(t *testing.T, events []event.Event, task string) int {
	t.Helper()
	last, count := -1, 0
	for _, e := range events {
		if e.Task != task || e.Iteration < 0 {
			continue
		}
		if e.Iteration <= last {
			t.Fatalf("iteration %d's %s comes after iteration %d's", e.Iteration, e.Kind, last)
		}
		last, count = e.Iteration, count+1
	}
	return count
}

// TestForEachWorkIsLinear: the core's work over the iterations grows like
// the width (8× the items, about 8× the visits), whether iterations finish
// in or against index order, under max_parallel, under fail-fast with the
// failures arriving from the highest index down, while iterations wait on a
// recover, and when the run is cancelled half-way. Before, every outcome
// scanned every iteration (the outcome's task's inFlight, the "anything
// still open" loop, maybeWaitRecover, the fail-fast cascade), 64× the
// visits at 8× the items.
func TestForEachWorkIsLinear(t *testing.T) {
	cases := []struct {
		name, task string
		src        string
		cr         coreRun
		want       func(t *testing.T, c *Core, events []event.Event, n int)
	}{
		{name: "unbounded, finishing in index order", task: "each", cr: coreRun{pick: fifo, report: echo},
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    exec: { command: ["echo", "${{ item }}"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				if got := iterationOrder(t, events, "each"); got != n {
					t.Errorf("%d iteration events, want %d", got, n)
				}
			}},
		{name: "unbounded, finishing last first", task: "each", cr: coreRun{pick: lifo, report: echo},
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    exec: { command: ["echo", "${{ item }}"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				if got := iterationOrder(t, events, "each"); got != n {
					t.Errorf("%d iteration events, want %d", got, n)
				}
				if out := c.Result().Tasks[0].Output.([]any); len(out) != n || out[n-1] != n-1 {
					t.Errorf("output has %d items, the last %v", len(out), out[len(out)-1])
				}
			}},
		{name: "max_parallel 8", task: "each", cr: coreRun{pick: fifo, report: echo},
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    max_parallel: 8
    exec: { command: ["echo", "${{ item }}"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				if got := iterationOrder(t, events, "each"); got != n {
					t.Errorf("%d iteration events, want %d", got, n)
				}
			}},
		{name: "fail-fast, failures from the top down", task: "each", cr: coreRun{pick: lifo, report: failing},
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    fail_fast: true
    exec: { command: ["fail", "NIKA-EXEC-001"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				// D3: only iteration 0's events remain, and its error is the task's.
				if got := iterationOrder(t, events, "each"); got != 1 {
					t.Errorf("%d iteration events, want 1 (iteration 0's)", got)
				}
				if e := c.Result().Tasks[0].Error; e == nil || e.Details["iteration"] != 0 {
					t.Errorf("error %+v, want iteration 0's", e)
				}
			}},
		{name: "recovers waiting on another task", task: "each",
			cr: coreRun{
				// every iteration fails, in index order, before the task
				// its recover reads (declared after it, so started after it)
				pick: fifo,
				report: func(wk Work) Report {
					if wk.ID.Task == "slow" {
						return Report{Outcome: workflow.Outcome{Output: "fallback"}}
					}
					if wk.ID.Kind == JobRecover {
						return Report{Outcome: workflow.Outcome{Output: "recovered"}}
					}
					return failing(wk)
				}},
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    on_error: { recover: "${{ tasks.slow.output }}" }
    exec: { command: ["fail", "NIKA-EXEC-001"] }
  - id: slow
    exec: { command: ["echo", "fallback"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				res := c.Result()
				out, _ := res.Tasks[0].Output.([]any)
				if res.State != "success" || len(out) != n || out[n-1] != "recovered" {
					t.Errorf("state %s, each %s with %d items", res.State, res.Tasks[0].Status, len(out))
				}
				iterationOrder(t, events, "each")
			}},
		{name: "cancelled half-way", task: "each",
			src: wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    exec: { command: ["echo", "${{ item }}"] }
`,
			want: func(t *testing.T, c *Core, events []event.Event, n int) {
				if res := c.Result(); res.State != "cancelled" {
					t.Errorf("state %s, want cancelled", res.State)
				}
				if got := iterationOrder(t, events, "each"); got != n/2 {
					t.Errorf("%d iteration events, want the %d of the iterations that finished", got, n/2)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			visits := map[int]int{}
			for _, n := range []int{1000, 8000} {
				cr := tc.cr
				if cr.pick == nil { // cancelled half-way
					cr = coreRun{pick: fifo, report: echo, cancelAt: n / 2}
				}
				c, events := cr.run(t, tc.src, n)
				tc.want(t, c, events, n)
				visits[n] = c.visits
				t.Logf("n=%d: %d visits", n, c.visits)
				if c.visits > 4*n {
					t.Errorf("n=%d: the core visited %d iterations, more than 4 per item", n, c.visits)
				}
			}
			if ratio := float64(visits[8000]) / float64(visits[1000]); ratio > 10 {
				t.Errorf("8× the items cost %.1f× the visits (%d vs %d): a scan per outcome", ratio, visits[8000], visits[1000])
			}
		})
	}
}

// halfBlocks is a verb that returns at once for even items and waits for
// its context for odd ones; the last odd one to start cancels the run.
type halfBlocks struct {
	blocked, want atomic.Int64
	cancel        context.CancelFunc
}

func (h *halfBlocks) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	if job.Iteration%2 == 0 {
		return workflow.Outcome{Output: job.Iteration}
	}
	if h.blocked.Add(1) == h.want.Load() {
		h.cancel()
	}
	<-ctx.Done()
	return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
}

// halfBatch is the BatchVerb form: it settles the even jobs at once, then
// cancels the run and settles each odd one once its Job.Cancelled closes.
type halfBatch struct{ cancel context.CancelFunc }

func (h *halfBatch) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	return workflow.Failed(spec.NewError("NIKA-EXEC-002", "Run is not used", nil))
}

func (h *halfBatch) RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome {
	outs := make([]workflow.Outcome, len(jobs))
	for i, j := range jobs {
		if j.Iteration%2 == 0 {
			outs[i] = workflow.Outcome{Output: j.Iteration}
			j.Settle(outs[i])
		}
	}
	h.cancel()
	for i, j := range jobs {
		if j.Iteration%2 == 1 {
			<-j.Cancelled
			outs[i] = workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
			j.Settle(outs[i])
		}
	}
	return outs
}

// TestForEachCancelIsLinear: a wide for_each cancelled with half of its
// iterations still running ends cancelled, after O(1) cancel calls per job
// and O(1) core visits per iteration. Before, once the run was done the
// driver cancelled every running job again for every report that came in
// (n²/8 calls here), which kept a 100,000-item run busy for minutes after
// SIGINT. The plain verb's case keeps under 4,000 goroutines (-race); the
// batch one runs its jobs in one goroutine.
func TestForEachCancelIsLinear(t *testing.T) {
	src := wideHeader + `tasks:
  - id: each
    for_each: ${{ vars.items }}
    exec: { command: ["x"] }
`
	cases := []struct {
		name string
		n    int
		verb func(cancel context.CancelFunc, n int) Verb
	}{
		{"verb", 3000, func(cancel context.CancelFunc, n int) Verb {
			h := &halfBlocks{cancel: cancel}
			h.want.Store(int64(n / 2))
			return h
		}},
		{"batch verb", 8000, func(cancel context.CancelFunc, n int) Verb { return &halfBatch{cancel: cancel} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := compile(t, src)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			finished := 0
			live := event.LiveFunc(func(l event.Live) {
				if l.Kind == event.LiveTaskFinished {
					mu.Lock()
					finished++
					mu.Unlock()
				}
			})
			d := newDriver(ctx, w, Inputs{Vars: map[string]any{"items": wideItems(tc.n)}},
				Options{Verbs: map[string]Verb{"exec": tc.verb(cancel, tc.n)}, Canonical: event.NewMemory(), Live: live})
			res := d.run()
			if res.State != "cancelled" || res.Tasks[0].Status != "cancelled" {
				t.Fatalf("state %s, task %s %+v; want cancelled", res.State, res.Tasks[0].Status, res.Tasks[0].Error)
			}
			if finished != tc.n {
				t.Errorf("%d jobs reported finished, want every one of %d", finished, tc.n)
			}
			if d.cancels > 3*tc.n {
				t.Errorf("%d cancel calls for %d jobs: more than 3 per job", d.cancels, tc.n)
			}
			if d.core.visits > 3*tc.n {
				t.Errorf("the core visited %d iterations for %d items: more than 3 per item", d.core.visits, tc.n)
			}
		})
	}
}

// TestInboxKeepsOrder: the driver's inbox hands the reports back in the
// order they were put, one per token, across its blocks and their reuse.
func TestInboxKeepsOrder(t *testing.T) {
	b := newInbox()
	next, taken := 0, 0
	for round := 0; round < 5; round++ {
		for i := 0; i < 3000; i++ {
			b.put(jobResult{id: JobID{Iteration: next}})
			next++
		}
		for i := 0; i < 2000+round*200; i++ { // leave some behind, so that emptied blocks are reused with reports in the queue
			<-b.ready
			r, ok := b.take()
			if !ok || r.id.Iteration != taken {
				t.Fatalf("took %v %v, want report %d", r.id, ok, taken)
			}
			taken++
		}
	}
	for taken < next {
		<-b.ready
		r, ok := b.take()
		if !ok || r.id.Iteration != taken {
			t.Fatalf("took %v %v, want report %d", r.id, ok, taken)
		}
		taken++
	}
	select {
	case <-b.ready:
		if _, ok := b.take(); ok {
			t.Fatal("a report after the last one")
		}
	default:
	}
}

// calls records the iterations a verb was called for.
type calls struct {
	mu   sync.Mutex
	seen map[int]bool
}

func (c *calls) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	c.mu.Lock()
	c.seen[job.Iteration] = true
	c.mu.Unlock()
	return workflow.Outcome{Output: job.Iteration}
}

// TestCancelWhileStartingAWideStep: a user cancellation that comes while
// the driver is still starting the jobs of one step (a wide for_each's
// first step starts every iteration) stops it there: the jobs not started
// yet never start, and the one whose goroutine had not begun reports
// cancelled without calling its verb. The live sink, called on the driver
// goroutine as each job starts, cancels the run as iteration 10 starts.
// Before, the driver went on starting all of them (each a goroutine that
// evaluated its fields and called its verb), and the cancellation waited
// until the whole step was carried out.
func TestCancelWhileStartingAWideStep(t *testing.T) {
	const n = 2000
	w := compile(t, wideHeader+`tasks:
  - id: each
    for_each: ${{ vars.items }}
    exec: { command: ["x"] }
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	started := map[int]bool{}
	finished := 0
	live := event.LiveFunc(func(l event.Live) {
		mu.Lock()
		defer mu.Unlock()
		switch l.Kind {
		case event.LiveTaskStarted:
			started[l.Iteration] = true
			if l.Iteration == 10 {
				cancel()
			}
		case event.LiveTaskFinished:
			finished++
		}
	})
	v := &calls{seen: map[int]bool{}}
	res := Run(ctx, w, Inputs{Vars: map[string]any{"items": wideItems(n)}},
		Options{Verbs: map[string]Verb{"exec": v}, Canonical: event.NewMemory(), Live: live})
	if res.State != "cancelled" {
		t.Fatalf("state %s, want cancelled", res.State)
	}
	if len(started) != 11 || !started[10] || finished != 11 {
		t.Errorf("%d jobs started (iteration 10 among them: %v), %d finished; want iterations 0-10, all finished", len(started), started[10], finished)
	}
	if v.seen[10] {
		t.Error("the verb ran for iteration 10, whose job was cancelled before its goroutine began")
	}
}

// TestForEachStreamsFinalEvents: the events of a running for_each at the
// front of the release order reach the stream as soon as they are final,
// in index order (a prefix of the iterations all done; under fail-fast, up
// to the lowest failure), and the whole stream is what it was when a task's
// events were released only once it settled.
func TestForEachStreamsFinalEvents(t *testing.T) {
	for _, failFast := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail_fast=%v", failFast), func(t *testing.T) {
			w := compile(t, wideHeader+fmt.Sprintf(`tasks:
  - id: each
    for_each: ${{ vars.items }}
    fail_fast: %v
    exec: { command: ["x"] }
`, failFast))
			c := NewCore(w, Inputs{Vars: map[string]any{"items": wideItems(8)}}, Config{RunID: "r"})
			now := time.Unix(0, 0)
			var all []string
			names := func(s Step) string {
				var got []string
				for _, e := range s.Events {
					n := e.Kind
					if e.Iteration >= 0 {
						n += fmt.Sprint(e.Iteration)
					}
					got = append(got, n)
				}
				all = append(all, got...)
				return strings.Join(got, " ")
			}
			gate := c.Start(now)
			if got := names(gate); got != "workflow_started" || len(gate.Start) != 1 || gate.Start[0].ID.Kind != JobGate {
				t.Fatalf("the start released %q and started %v, want workflow_started and the gate job", got, gate.Start)
			}
			start := c.Finished(gate.Start[0].ID, gate.Start[0].Eval.runGate(context.Background()), now)
			if got := names(start); got != "task_started" {
				t.Fatalf("the gate released %q, want the task's task_started as it starts", got)
			}
			works := map[int]Work{}
			for _, wk := range start.Start {
				works[wk.ID.Iteration] = wk
			}
			finish := func(i int, fail bool) string {
				r := echo(works[i])
				if fail {
					r = failing(works[i])
				}
				return names(c.Finished(works[i].ID, r, now))
			}
			steps := []struct {
				i    int
				fail bool
				want string
			}{
				{1, false, ""}, // iteration 0 still runs
				{0, false, "log0 log1"},
				{4, true, ""},
				{2, false, "log2"},
				{3, false, "log3 log4"}, // 4's failure is final: nothing below it can fail now
				{6, false, ""},
			}
			if failFast { // 4's failure cancelled 5-7: the task is decided once 3 is done
				steps[4].want += " task_failed workflow_failed"
			}
			for _, s := range steps {
				if got := finish(s.i, s.fail); got != s.want {
					t.Fatalf("iteration %d finished: released %q, want %q", s.i, got, s.want)
				}
			}
			finish(5, false)
			finish(7, false)
			want := "workflow_started task_started log0 log1 log2 log3 log4 log5 log6 log7 task_failed workflow_failed"
			if failFast { // D3: the events above the lowest failure are dropped
				want = "workflow_started task_started log0 log1 log2 log3 log4 task_failed workflow_failed"
			}
			if got := strings.Join(all, " "); got != want {
				t.Errorf("stream %q, want %q", got, want)
			}
		})
	}
}
