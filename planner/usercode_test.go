package planner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// A task's user code (its `with`, verb fields and output bindings) runs off
// the core, under the attempt's context (usercode.go): the timeout covers it
// and ends the attempt with NIKA-TIMEOUT-001, a user cancellation stops it,
// and other tasks keep being scheduled while it runs.
//
// The expensive user code below never ends by itself in any time a test
// could wait: the jq binding is quadratic over a list of 100,000 numbers
// (10^10 steps), the expression renders that list as JSON a million times
// (an hour). Each is cheap in memory. A run that returns at all proves that
// the evaluation was stopped.

// heavyList is the size of the list the "list" command returns.
const heavyList = 100_000

// expensive user code, by position.
var expensivePositions = []struct {
	name string
	// task is the expensive task `slow`, with `{timeout}` where its timeout
	// goes; rendezvous names the signal that is fired once its expensive part
	// runs (or is about to run, on its own goroutine): slow-started when its
	// attempt's job starts, slow-attempt-finished when its attempt's job
	// finished (the core starts the recover job in the step that takes it).
	task, rendezvous string
	recover          bool // the timeout does not cover a recover (§3.9)
}{
	{"binding", `  - id: slow
{timeout}    exec: { command: ["list", "` + strconv.Itoa(heavyList) + `", "slow-verb-returned"] }
    output: { n: "[.[] as $a | .[] | select(. == $a)] | length" }
`, "slow-verb-returned", false},
	{"with", `  - id: src
    exec: { command: ["list", "` + strconv.Itoa(heavyList) + `"] }
  - id: slow
    depends_on: [src]
{timeout}    with: { ok: "${{ all(1..999999, toJSON(tasks.src.output) != '') }}" }
    exec: { command: ["echo", "${{ with.ok }}"] }
`, "slow-started", false},
	{"field", `  - id: src
    exec: { command: ["list", "` + strconv.Itoa(heavyList) + `"] }
  - id: slow
    depends_on: [src]
{timeout}    exec: { command: ["echo", "${{ all(1..999999, toJSON(tasks.src.output) != '') }}"] }
`, "slow-started", false},
	{"recover binding", `  - id: src
    exec: { command: ["list", "` + strconv.Itoa(heavyList) + `"] }
  - id: slow
    depends_on: [src]
{timeout}    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { recover: "${{ tasks.src.output }}" }
    output: { n: "[.[] as $a | .[] | select(. == $a)] | length" }
`, "slow-attempt-finished", true},
}

// heavyScript is the script verb plus ["list", N, SIGNAL?]: output the list
// 0..N-1, signalling SIGNAL (when given) as it returns.
type heavyScript struct{ *script }

func (h heavyScript) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	argv, _ := job.Fields["command"].([]any)
	if len(argv) >= 2 && argv[0] == "list" {
		n, _ := strconv.Atoi(fmt.Sprint(argv[1]))
		out := make([]any, n)
		for i := range out {
			out[i] = i
		}
		if len(argv) > 2 {
			close(h.ch(fmt.Sprint(argv[2])))
		}
		return workflow.Outcome{Output: out}
	}
	return h.script.Run(ctx, job)
}

// liveLog records the live stream: the order in which jobs finished, and a
// hook called on each event (on the driver goroutine).
type liveLog struct {
	mu       sync.Mutex
	finished []string // "task status"
	hook     func(event.Live)
}

func (l *liveLog) Observe(e event.Live) {
	if e.Kind == event.LiveTaskFinished {
		l.mu.Lock()
		l.finished = append(l.finished, e.Task+" "+e.Status)
		l.mu.Unlock()
	}
	if l.hook != nil {
		l.hook(e)
	}
}

func (l *liveLog) order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.finished...)
}

// rendezvous fires the signals of expensivePositions from the live stream.
func rendezvous(s *script, name string, e event.Live) {
	switch {
	case name == "slow-started" && e.Kind == event.LiveTaskStarted && e.Task == "slow",
		name == "slow-attempt-finished" && e.Kind == event.LiveTaskFinished && e.Task == "slow":
		close(s.ch(name))
	}
}

// runGuarded runs a workflow with a generous deadline as a hang guard (the
// bug this file tests froze the run for minutes). Its timers are manual
// (s.timers): a test fires them.
func runGuarded(t *testing.T, ctx context.Context, src string, s *script, live *liveLog) Result {
	t.Helper()
	w := compile(t, src)
	done := make(chan Result, 1)
	d := newDriver(ctx, w, Inputs{}, Options{Verbs: map[string]Verb{"exec": heavyScript{s}}, Live: live})
	s.timers = useManualTimers(d)
	go func() { done <- d.run() }()
	select {
	case res := <-done:
		return res
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end within 60s: the expensive user code blocked it")
		return Result{}
	}
}

func taskOf(res Result, id string) TaskResult {
	for _, tr := range res.Tasks {
		if tr.ID == id {
			return tr
		}
	}
	return TaskResult{}
}

// indexOf is the position of s in list, or -1.
func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// TestTimeoutCoversExpensiveUserCode: under `timeout: 1s`, an expensive
// binding, `with` or verb field ends the attempt with NIKA-TIMEOUT-001, and
// `other`, whose verb returns only once the expensive part runs, completes
// meanwhile: its job finishes before the timed-out one, which can end only
// once the deadline cancelled it. The deadline fires (manual timers) once
// other is finished: slow's expensive part is still running then.
func TestTimeoutCoversExpensiveUserCode(t *testing.T) {
	for _, pos := range expensivePositions {
		if pos.recover {
			continue
		}
		t.Run(pos.name, func(t *testing.T) {
			s := newScript()
			live := &liveLog{hook: func(e event.Live) {
				rendezvous(s, pos.rendezvous, e)
				if e.Kind == event.LiveTaskFinished && e.Task == "other" {
					s.timers.fire("slow", -1, TimerDeadline)
				}
			}}
			src := header + "tasks:\n" + strings.ReplaceAll(pos.task, "{timeout}", `    timeout: "1s"`+"\n") + `  - id: other
    exec: { command: ["wait", "` + pos.rendezvous + `"] }
`
			res := runGuarded(t, context.Background(), src, s, live)
			slow := taskOf(res, "slow")
			if slow.Status != "failure" || slow.Error == nil || slow.Error.Code != "NIKA-TIMEOUT-001" {
				t.Fatalf("slow = %s %+v, want failure with NIKA-TIMEOUT-001", slow.Status, slow.Error)
			}
			if slow.Error.Details["timeout"] != "1s" {
				t.Errorf("details = %v, want timeout 1s", slow.Error.Details)
			}
			if o := taskOf(res, "other"); o.Status != "success" {
				t.Errorf("other = %s %+v, want success", o.Status, o.Error)
			}
			order := live.order()
			if o, sl := indexOf(order, "other success"), indexOf(order, "slow failure"); o < 0 || sl < 0 || o > sl {
				t.Errorf("live task_finished order %v: other must finish while slow's %s still runs", order, pos.name)
			}
			if res.State != "failure" {
				t.Errorf("state = %s, want failure", res.State)
			}
		})
	}
}

// TestCancelStopsExpensiveUserCode: a user cancellation stops an expensive
// binding, `with`, verb field or binding over a recover value at once. `other` completes while it runs (it
// never ends by itself, and the test cancels only once other is finished),
// and the run returns cancelled.
func TestCancelStopsExpensiveUserCode(t *testing.T) {
	for _, pos := range expensivePositions {
		t.Run(pos.name, func(t *testing.T) {
			s := newScript()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			live := &liveLog{hook: func(e event.Live) {
				rendezvous(s, pos.rendezvous, e)
				if e.Kind == event.LiveTaskFinished && e.Task == "other" {
					cancel() // slow's expensive part is still running: nothing else ends it
				}
			}}
			src := header + "tasks:\n" + strings.ReplaceAll(pos.task, "{timeout}", "") + `  - id: other
    exec: { command: ["wait", "` + pos.rendezvous + `"] }
`
			res := runGuarded(t, ctx, src, s, live)
			if res.State != "cancelled" {
				t.Errorf("state = %s, want cancelled", res.State)
			}
			slow := taskOf(res, "slow")
			if slow.Status != "cancelled" || slow.Error == nil || slow.Error.Code != "NIKA-CANCEL-001" {
				t.Errorf("slow = %s %+v, want cancelled with NIKA-CANCEL-001", slow.Status, slow.Error)
			}
			if o := taskOf(res, "other"); o.Status != "success" {
				t.Errorf("other = %s %+v, want success", o.Status, o.Error)
			}
		})
	}
}

// TestRecoverSeesWithAfterTimeout: a recover reads the `with` its attempt
// evaluated, although the timeout ended the attempt before it reported: the
// verb fires its own deadline once it runs, after its `with` was prepared.
func TestRecoverSeesWithAfterTimeout(t *testing.T) {
	src := header + `tasks:
  - id: t
    timeout: "1h"
    with: { fb: "${{ 'from-' + 'with' }}" }
    exec: { command: ["deadline"] }
    on_error: { recover: "${{ with.fb }}" }
  - id: each
    for_each: [a, b]
    timeout: "1h"
    with: { fb: "${{ item }}" }
    exec: { command: ["deadline"] }
    on_error: { recover: "${{ with.fb + string(index) }}" }
`
	res := runGuarded(t, context.Background(), src, newScript(), &liveLog{})
	if tr := taskOf(res, "t"); tr.Status != "success" || tr.Output != "from-with" {
		t.Errorf("t = %s %v %+v, want success with the with value", tr.Status, tr.Output, tr.Error)
	}
	if tr := taskOf(res, "each"); tr.Status != "success" || fmt.Sprint(tr.Output) != "[a0 b1]" {
		t.Errorf("each = %s %v %+v, want success [a0 b1]", tr.Status, tr.Output, tr.Error)
	}
}

// panicker is a BatchVerb whose RunBatch panics.
type panicker struct{}

func (panicker) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	return panicker{}.RunBatch(ctx, []workflow.Job{job})[0]
}

func (panicker) RunBatch(_ context.Context, jobs []workflow.Job) []workflow.Outcome {
	panic(fmt.Sprintf("boom %d", len(jobs)))
}

// TestBatchPanicKeepsValueAndStack: a panicking RunBatch fails its jobs with
// the panic value and the stack, as a panicking Run does (a single job of a
// batch verb goes through Run).
func TestBatchPanicKeepsValueAndStack(t *testing.T) {
	for _, tc := range []struct{ name, task, value string }{
		{"batch", "    for_each: [1, 2]\n", "boom 2"},
		{"single", "", "boom 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := compile(t, header+"tasks:\n  - id: t\n"+tc.task+"    exec: { command: [\"x\"] }\n")
			res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"exec": panicker{}}})
			e := taskOf(res, "t").Error
			if e == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(e.Message, "verb exec panicked: "+tc.value) || e.Details["panic"] != tc.value {
				t.Errorf("message %q, details.panic %v; want the panic value %q in both", e.Message, e.Details["panic"], tc.value)
			}
			if stack, _ := e.Details["stack"].(string); !strings.Contains(stack, "panicker.RunBatch") {
				t.Errorf("details.stack does not show the panicking RunBatch:\n%s", stack)
			}
			if e.Category != "internal_error" {
				t.Errorf("category %q, want internal_error", e.Category)
			}
		})
	}
}
