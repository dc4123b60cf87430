package planner

// Regression tests from a review of the run engine: each pins behaviour that
// was checked against LANGUAGE.md §3 and DECISIONS.md and found correct.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
)

var terminalKinds = map[string]bool{
	event.TaskCompleted: true, event.TaskFailed: true, event.TaskSkipped: true, event.TaskCancelled: true,
}

// checkEventInvariants asserts D18: exactly one terminal event per task,
// task_started at most once and before it, and no event carrying an output.
func checkEventInvariants(t *testing.T, r run) {
	t.Helper()
	terminal := map[string]int{}
	started := map[string]int{}
	for _, e := range r.events {
		if e.Task == "" {
			continue
		}
		if _, ok := e.Fields["output"]; ok {
			t.Errorf("event %s of %s carries an output: %v", e.Kind, e.Task, e.Fields)
		}
		switch {
		case e.Kind == event.TaskStarted:
			if terminal[e.Task] > 0 {
				t.Errorf("task_started of %s after its terminal event", e.Task)
			}
			started[e.Task]++
		case terminalKinds[e.Kind]:
			terminal[e.Task]++
		}
	}
	for _, tr := range r.res.Tasks {
		if terminal[tr.ID] != 1 {
			t.Errorf("%s: %d terminal events, want exactly 1", tr.ID, terminal[tr.ID])
		}
		if started[tr.ID] > 1 {
			t.Errorf("%s: %d task_started events, want at most 1", tr.ID, started[tr.ID])
		}
	}
}

// D3: with fail_fast, the lowest failed index wins even when a higher one
// failed first; the output keeps the values below it and is null from it up;
// the events of higher iterations are dropped.
func TestReviewFailFastLowestIndexWins(t *testing.T) {
	src := header + `tasks:
  - id: fe
    for_each: [["log", "zero"], ["flaky-then-block", "1", "NIKA-EXEC-001"], ["fail", "NIKA-EXEC-002"], ["log", "three"]]
    retry: { max_attempts: 2, backoff_ms: 20, jitter: false, on_codes: [NIKA-EXEC-001] }
    timeout: "300ms"
    exec: { command: "${{ item }}" }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	fe := r.task("fe")
	if fe.Status != "failure" || fmt.Sprint(fe.Output) != "[zero <nil> <nil> <nil>]" {
		t.Fatalf("fe = %s %v, want failure [zero <nil> <nil> <nil>]", fe.Status, fe.Output)
	}
	if fe.Error == nil || fe.Error.Code != "NIKA-TIMEOUT-001" || fe.Error.Details["iteration"] != 1 || fe.Error.Attempt != 2 {
		t.Errorf("error = %+v, want iteration 1's NIKA-TIMEOUT-001 at attempt 2", fe.Error)
	}
	for _, e := range r.events {
		if e.Task == "fe" && e.Iteration >= 2 {
			t.Errorf("event %s of iteration %d kept; D3 drops events above the failed index", e.Kind, e.Iteration)
		}
	}
	checkEventInvariants(t, r)
}

// §3.3: a non-boolean `when` is NIKA-VAR-006, final: no retry, no on_error,
// no on_finally, never started; an explicit `when` downstream still reads it.
func TestReviewGateFailureIsFinal(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "not a boolean"] }
  - id: g
    depends_on: [a]
    when: ${{ tasks.a.output }}
    retry: { max_attempts: 3, backoff_ms: 0, on_codes: [NIKA-VAR-006] }
    on_error: { recover: "recovered" }
    exec: { command: ["echo", "never"] }
    on_finally:
      - exec: { command: ["log", "finally must not run"] }
  - id: d
    depends_on: [g]
    when: ${{ tasks.g.status == 'failure' }}
    exec: { command: ["echo", "${{ tasks.g.error.code }} ${{ tasks.g.started_at }} ${{ tasks.g.duration_ms }} ${{ tasks.g.output }}"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	g := r.task("g")
	if g.Status != "failure" || g.Error == nil || g.Error.Code != "NIKA-VAR-006" || g.Output != nil {
		t.Fatalf("g = %s %v %+v, want failure NIKA-VAR-006 with a null output", g.Status, g.Output, g.Error)
	}
	if got := r.task("d").Output; got != "NIKA-VAR-006 null 0 null" {
		t.Errorf("d = %v, want the never-started record: NIKA-VAR-006 null 0 null", got)
	}
	for _, e := range r.events {
		if e.Task == "g" && e.Kind != event.TaskFailed {
			t.Errorf("g emitted %s; a gate failure has only its terminal event", e.Kind)
		}
	}
	if r.res.State != "failure" {
		t.Errorf("state = %s, want failure", r.res.State)
	}
	checkEventInvariants(t, r)
}

// §3.6/§3.10: a binding failure over a recover value is final, even when
// retry.on_codes lists its code; on_error skip keeps the error readable and
// nulls the bindings.
func TestReviewRecoverBindingFailureIsFinal(t *testing.T) {
	src := header + `tasks:
  - id: bad
    retry: { max_attempts: 3, backoff_ms: 0, on_codes: [NIKA-VAR-004] }
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { recover: "notjson" }
    output: { v: "fromjson" }
  - id: sk
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { skip: true }
    output: { v: "." }
  - id: reader
    depends_on: [sk]
    exec: { command: ["echo", "${{ tasks.sk.status }} ${{ tasks.sk.error.code }} ${{ tasks.sk.v }} ${{ tasks.sk.output }}"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	bad := r.task("bad")
	if bad.Status != "failure" || bad.Error == nil || bad.Error.Code != "NIKA-VAR-004" || bad.Error.Attempt != 1 {
		t.Errorf("bad = %s %+v, want failure NIKA-VAR-004 at attempt 1", bad.Status, bad.Error)
	}
	for _, e := range r.events {
		if e.Task == "bad" && e.Kind == event.TaskRetrying {
			t.Errorf("a binding failure over a recover value was retried: %v", e.Fields)
		}
	}
	if got := r.task("reader").Output; got != "skipped NIKA-EXEC-001 null null" {
		t.Errorf("reader = %v, want skipped NIKA-EXEC-001 null null", got)
	}
	checkEventInvariants(t, r)
}

// §3.9: the timeout does not cover on_error.recover: a recover that waits for
// a task without an edge past the timeout still recovers.
func TestReviewTimeoutDoesNotCoverRecoverWait(t *testing.T) {
	src := header + `tasks:
  - id: t
    timeout: "20ms"
    exec: { command: ["fail", "NIKA-EXEC-001"] }
    on_error: { recover: "${{ tasks.r.output }}" }
  - id: r
    timeout: "200ms"
    exec: { command: ["block"] }
    on_error: { recover: "late" }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	if got := r.task("t"); got.Status != "success" || got.Output != "late" || got.Error != nil {
		t.Errorf("t = %s %v %+v, want success late", got.Status, got.Output, got.Error)
	}
	checkEventInvariants(t, r)
}

// §3.8: task_retrying carries attempt, max_attempts, code and the seeded
// jitter delay; the values were computed independently from the formula
// (seed 7, task "r", d = 100 then 200).
func TestReviewRetryJitterDelays(t *testing.T) {
	src := header + `tasks:
  - id: r
    retry: { max_attempts: 3, backoff_ms: 100, on_codes: [NIKA-EXEC-001] }
    exec: { command: ["flaky", "2", "NIKA-EXEC-001"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{Seed: 7})
	var got []string
	for _, e := range r.events {
		if e.Kind == event.TaskRetrying {
			got = append(got, fmt.Sprintf("%d:%v/%v/%v/%v", e.Attempt, e.Fields["attempt"], e.Fields["max_attempts"], e.Fields["code"], e.Fields["delay_ms"]))
		}
	}
	want := "1:1/3/NIKA-EXEC-001/95 2:2/3/NIKA-EXEC-001/182"
	if strings.Join(got, " ") != want {
		t.Errorf("task_retrying = %v, want %s", got, want)
	}
	if rr := r.task("r"); rr.Status != "success" || rr.Output != "ok" {
		t.Errorf("r = %s %v", rr.Status, rr.Output)
	}
}

// §3.4/D22: on user cancellation a running task ends cancelled with
// NIKA-CANCEL-001 and still runs on_finally (which sees the decided record);
// a task waiting for a slot never starts and has no error.
func TestReviewUserCancelWithSlotWaiter(t *testing.T) {
	src := header + `tasks:
  - id: long
    exec: { command: ["block"] }
    on_finally:
      - exec: { command: ["log", "finally ${{ tasks.long.status }} ${{ tasks.long.error.code }}"] }
  - id: waiter
    exec: { command: ["echo", "x"] }
`
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan run)
	go func() { done <- execute(t, ctx, src, newScript(), Config{MaxParallelTasks: 1}) }()
	time.AfterFunc(20*time.Millisecond, cancel) // long blocks until cancelled, holding the only slot
	r := <-done
	if l := r.task("long"); l.Status != "cancelled" || l.Error == nil || l.Error.Code != "NIKA-CANCEL-001" {
		t.Errorf("long = %s %+v, want cancelled with NIKA-CANCEL-001", l.Status, l.Error)
	}
	if w := r.task("waiter"); w.Status != "cancelled" || w.Error != nil {
		t.Errorf("waiter = %s %+v, want cancelled without error", w.Status, w.Error)
	}
	var logs []string
	for _, e := range r.events {
		if e.Task == "waiter" && e.Kind == event.TaskStarted {
			t.Error("waiter started after the cancellation")
		}
		if e.Kind == event.Log {
			logs = append(logs, fmt.Sprint(e.Fields["message"]))
		}
	}
	if strings.Join(logs, "|") != "finally cancelled NIKA-CANCEL-001" {
		t.Errorf("on_finally logs = %v", logs)
	}
	if r.res.State != "cancelled" {
		t.Errorf("state = %s, want cancelled", r.res.State)
	}
	checkEventInvariants(t, r)
}

// D22: the report's shape.
func TestReviewReportShape(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["echo", "x"] }
  - id: b
    exec: { command: ["fail", "NIKA-EXEC-001"] }
outputs:
  o: ${{ tasks.a.output }}
`
	r := execute(t, context.Background(), src, newScript(), Config{Seed: 3})
	rep := r.res.Report("r-1", "t", 3)
	var keys []string
	for k := range rep {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "outputs,run_id,seed,tasks,usage,workflow,workflow_state" {
		t.Errorf("report keys = %s", got)
	}
	b := rep["tasks"].(map[string]any)["b"].(map[string]any)
	errObj, _ := b["error"].(map[string]any)
	var ek []string
	for k := range errObj {
		ek = append(ek, k)
	}
	sort.Strings(ek)
	if got := strings.Join(ek, ","); got != "attempt,category,code,details,message,task_id,transient" {
		t.Errorf("error keys = %s", got)
	}
	if rep["workflow_state"] != "failure" || rep["outputs"].(map[string]any)["o"] != "x" {
		t.Errorf("report = %v", rep)
	}
}
