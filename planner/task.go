package planner

import (
	"context"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

type phase uint8

const (
	phaseWaiting     phase = iota // dependencies not yet terminal
	phaseGating                   // the gate job evaluates its when and for_each
	phaseReady                    // gate passed, waiting for a concurrency slot
	phaseRunning                  // attempts or iterations in flight
	phaseRecoverWait              // on_error.recover waits for a referenced task (holds no slot, D4)
	phaseFinally                  // outcome decided, on_finally steps running
	phaseSettled                  // terminal; events ready for release
)

type iterState uint8

const (
	iterIdle    iterState = iota
	iterRunning           // an attempt's job in flight (its with, fields, verb, bindings)
	iterBackoff
	iterRecoverWait
	iterRecovering // the recover job in flight (its value, bindings)
	iterDone
)

// iterRun is one attempt loop: the task itself, or one for_each iteration.
type iterRun struct {
	index    int // -1 outside for_each
	item     any
	attempt  int
	state    iterState
	live     bool // its attempt or recover (jobOf) is in flight, not ended by the core
	timerSeq int
	start    time.Time // when the attempt loop started (for the timeout's elapsed_ms)

	with     map[string]any
	output   any
	bindings map[string]any
	err      *spec.Error
	skipped  bool // on_error skip: null value, not a failure
	failed   bool
	events   []event.Event
}

// taskRun is the state of one task in the core.
type taskRun struct {
	t         *spec.Task
	phase     phase
	holdsSlot bool

	status    Status
	output    any
	bindings  map[string]any
	err       *spec.Error
	started   bool
	startedAt time.Time
	endedAt   time.Time
	usage     map[string]*ModelUsage

	recoverRefs []string
	items       []any
	iters       []*iterRun
	next        int // next for_each index to start
	stopAt      int // fail-fast: iterations at or above never start; len(items) otherwise
	// count holds how many of iters are in each state (setState keeps it),
	// and recWait the iterations that entered iterRecoverWait, so that no
	// decision taken on one outcome scans the iterations: a for_each of n
	// items costs O(n) in all, not O(n²) (BENCHMARKS.md, for_each).
	count   [iterDone + 1]int
	recWait []*iterRun
	relIter int // the iterations below have had their events released (stream)

	tail       []event.Event // on_finally logs, then the terminal event
	end        terminalEvent // what the terminal event says, released with the rest
	finallyIdx int
	skipReason endReason
	cancelCode string
	counted    bool // dependents were told this task is terminal
	// Incremental scheduling: the task is gated when its count of
	// non-terminal dependencies reaches zero.
	waitingOn  int
	dependents []*taskRun
	solo       iterRun        // the attempt loop of a task without for_each
	soloIters  [1]*iterRun    // iters of a task without for_each: {&solo}
	hasHead    bool           // task_started is not released yet
	recovering bool           // in Core.recovering
	depRecords map[string]any // the dependencies' records, once gated (scope.go)
	templated  bool           // with or the verb body holds an expression
	rec        map[string]any // the record, once terminal
}

func newTaskRun(t *spec.Task) *taskRun {
	tr := &taskRun{t: t, templated: len(t.With) > 0 || hasTemplate(t.Body)}
	if t.OnError != nil && t.OnError.HasRecover {
		tr.recoverRefs = templateTaskRefs(t.OnError.Recover)
	}
	return tr
}

// terminal: settled, after on_finally (§3.12 step 8); only then do
// dependents and waiting recovers see it.
func (tr *taskRun) terminal() bool { return tr.phase == phaseSettled }

// decided: the record is fixed (on_finally may still be running).
func (tr *taskRun) decided() bool { return tr.phase == phaseSettled || tr.phase == phaseFinally }

// gate applies the default gate or `when:` (LANGUAGE.md §3.3), then
// evaluates a for_each collection (§3.7): in a gate job when either holds
// an expression, at once when they are literals.
func (tr *taskRun) gate(c *Core) {
	if c.cancelled {
		tr.settle(c, StatusCancelled, nil)
		tr.skipReason = reasonUser
		return
	}
	if tr.t.When == nil { // the default gate reads statuses only
		for _, d := range tr.t.DependsOn {
			if s := c.byID[d].status; s != StatusSuccess && s != StatusSkipped {
				tr.skipReason = reasonUpstream
				tr.settle(c, StatusCancelled, nil)
				return
			}
		}
		if tr.t.ForEach == nil {
			tr.ready(c)
			return
		}
	}
	e := &Eval{Scope: c.scope(tr, scopeGate, nil), When: tr.t.When, ForEach: tr.t.ForEach}
	if !hasTemplate(tr.t.When) && !hasTemplate(tr.t.ForEach) {
		tr.gated(c, e.runGate(context.Background())) // no expression: no user code
		return
	}
	tr.phase = phaseGating
	c.step.Start = append(c.step.Start, Work{ID: tr.gateJob(), Eval: e})
}

// gated takes the gate's report: a gate failure is final (attempt 0, no
// retry, no on_error, no on_finally), a false `when` or an empty
// collection skips the task, and otherwise it waits for a slot.
func (tr *taskRun) gated(c *Core, r Report) {
	switch {
	case r.Outcome.Err != nil:
		tr.settle(c, StatusFailure, tr.stamp(r.Outcome.Err, 0, -1))
	case r.Skipped:
		tr.skipReason = reasonWhenFalse
		tr.settle(c, StatusSkipped, nil)
	case tr.t.ForEach != nil && len(r.Items) == 0:
		tr.skipReason = reasonEmptyCollection
		tr.settle(c, StatusSkipped, nil)
	default:
		if tr.t.ForEach != nil {
			tr.items = r.Items
			tr.stopAt = len(r.Items)
		}
		tr.ready(c)
	}
}

// jobOf is an iteration's job: its recover while it recovers, else its
// attempt.
func (tr *taskRun) jobOf(it *iterRun) JobID {
	k := JobAttempt
	if it.state == iterRecovering {
		k = JobRecover
	}
	return JobID{Task: tr.t.ID, Kind: k, Iteration: it.index, Attempt: it.attempt, Finally: -1}
}

// terminalEvent is what a settled task's terminal event says.
type terminalEvent struct {
	kind    string
	attempt int
	fields  map[string]any
}

// gateJob is the task's gate job.
func (tr *taskRun) gateJob() JobID {
	return JobID{Task: tr.t.ID, Kind: JobGate, Iteration: -1, Finally: -1}
}

// finallyJob is the job of the task's current on_finally step.
func (tr *taskRun) finallyJob() JobID {
	return JobID{Task: tr.t.ID, Kind: JobFinally, Iteration: -1, Attempt: 0, Finally: tr.finallyIdx}
}

// ready queues the gated task for a concurrency slot.
func (tr *taskRun) ready(c *Core) {
	tr.phase = phaseReady
	c.ready = append(c.ready, tr)
}

// begin runs once the task holds a slot: task_started, then the attempt
// loop (or the first iterations).
func (tr *taskRun) begin(c *Core) {
	tr.phase = phaseRunning
	tr.started, tr.startedAt = true, c.now
	tr.hasHead = true
	if tr.t.ForEach == nil {
		it := &tr.solo
		it.index = -1
		tr.soloIters[0] = it
		tr.iters = tr.soloIters[:]
		tr.count[iterIdle]++
		tr.startIter(c, it)
		return
	}
	tr.iters = make([]*iterRun, len(tr.items))
	tr.fill(c)
}

// fill starts iterations in index order up to max_parallel.
func (tr *taskRun) fill(c *Core) {
	for tr.next < tr.stopAt && !c.cancelled {
		if tr.t.MaxParallel > 0 && tr.inFlight() >= tr.t.MaxParallel {
			return
		}
		it := &iterRun{index: tr.next, item: tr.items[tr.next]}
		tr.iters[tr.next] = it
		tr.count[iterIdle]++
		tr.next++
		tr.startIter(c, it)
	}
}

// setState moves an iteration to state s, keeping tr.count.
func (tr *taskRun) setState(it *iterRun, s iterState) {
	tr.count[it.state]--
	tr.count[s]++
	it.state = s
	if s == iterRecoverWait {
		tr.recWait = append(tr.recWait, it)
	}
}

// inFlight counts the started iterations not yet done (max_parallel).
func (tr *taskRun) inFlight() int {
	return tr.count[iterRunning] + tr.count[iterBackoff] + tr.count[iterRecoverWait] + tr.count[iterRecovering]
}

// open counts the iterations created and not yet done.
func (tr *taskRun) open() int { return tr.inFlight() + tr.count[iterIdle] }

func (tr *taskRun) startIter(c *Core, it *iterRun) {
	it.start = c.now
	if tr.t.Timeout > 0 {
		it.timerSeq++
		c.step.Timers = append(c.step.Timers, Timer{Task: tr.t.ID, Iteration: it.index, Kind: TimerDeadline, Seq: -it.timerSeq, Delay: tr.t.Timeout})
	}
	tr.startAttempt(c, it)
}

// startAttempt asks for the attempt's job: the driver evaluates `with` and
// the verb fields, runs the verb and the bindings (usercode.go).
func (tr *taskRun) startAttempt(c *Core, it *iterRun) {
	it.attempt++
	id := JobID{Task: tr.t.ID, Kind: JobAttempt, Iteration: it.index, Attempt: it.attempt, Finally: -1}
	it.live = true
	tr.setState(it, iterRunning)
	c.step.Start = append(c.step.Start, Work{ID: id, Job: c.job(tr, tr.t.Verb, it.attempt, it.index), Eval: &Eval{
		Scope: c.scope(tr, scopeWith, it), With: tr.t.With, Body: tr.t.Body, Bindings: tr.t.Bindings,
		KeepWith: len(tr.t.With) > 0 && tr.t.OnError != nil && tr.t.OnError.HasRecover, Literal: !tr.templated,
	}})
}

// finished takes a job's outcome.
func (tr *taskRun) finished(c *Core, id JobID, r Report) {
	out, emitted := r.Outcome, r.Emitted
	switch id.Kind {
	case JobGate:
		if tr.phase == phaseGating && id == tr.gateJob() {
			tr.gated(c, r)
		}
		return
	case JobRecover:
		if it := tr.iter(id.Iteration); it != nil && it.state == iterRecovering && it.live && tr.jobOf(it) == id {
			tr.recovered(c, it, r)
		}
		return
	case JobFinally:
		if tr.phase == phaseFinally && id == tr.finallyJob() {
			tr.finallyDone(c, id, r)
		}
		return
	}
	it := tr.iter(id.Iteration)
	if it == nil || it.state != iterRunning || !it.live || tr.jobOf(it) != id {
		return // stale: the attempt was cancelled by a timeout or fail-fast
	}
	if r.With != nil {
		it.with = r.With // what its recover sees (§3.10)
	}
	if r.Restored {
		it.events = append(it.events, tr.event(event.TaskRestored, it.index, id.Attempt, nil))
	}
	for _, e := range emitted {
		it.events = append(it.events, tr.event(e.Kind, it.index, id.Attempt, e.Fields))
	}
	for _, u := range out.Usage {
		tr.addUsage(u)
		if u.Emitted {
			continue // its infer_completed is among the emitted events
		}
		f := map[string]any{"model": u.Model, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "usage_reported": u.Reported}
		if u.Turn > 0 {
			f["turn"] = u.Turn // D18: turn? on agent requests
		}
		it.events = append(it.events, tr.event(event.InferCompleted, it.index, id.Attempt, f))
	}
	if out.Err != nil {
		tr.attemptFailed(c, it, out.Err) // the verb's, or that of the user code around it
		return
	}
	it.output, it.bindings = out.Output, r.Bindings
	tr.iterDone(c, it)
}

func (tr *taskRun) addUsage(u workflow.Usage) {
	m := tr.usage[u.Model]
	if m == nil {
		if tr.usage == nil {
			tr.usage = map[string]*ModelUsage{}
		}
		m = &ModelUsage{}
		tr.usage[u.Model] = m
	}
	m.Requests++
	m.InputTokens += u.InputTokens
	m.OutputTokens += u.OutputTokens
	if !u.Reported {
		m.Unreported++
	}
}

func (tr *taskRun) iter(index int) *iterRun {
	if index < 0 {
		if len(tr.iters) == 1 && tr.iters[0].index == -1 {
			return tr.iters[0]
		}
		return nil
	}
	if index < len(tr.iters) {
		return tr.iters[index]
	}
	return nil
}

// stamp sets the task id and attempt of an error (a copy).
func (tr *taskRun) stamp(err *spec.Error, attempt, iteration int) *spec.Error {
	if err == nil {
		return nil
	}
	e := *err
	e.TaskID, e.Attempt = tr.t.ID, attempt
	if iteration >= 0 {
		e.Details = copyDetails(e.Details)
		e.Details["iteration"] = iteration
	}
	return &e
}

func copyDetails(d map[string]any) map[string]any {
	out := make(map[string]any, len(d)+1)
	for k, v := range d {
		out[k] = v
	}
	return out
}

func (tr *taskRun) event(kind string, iteration, attempt int, fields map[string]any) event.Event {
	if fields == nil {
		fields = map[string]any{}
	}
	return event.Event{Kind: kind, Task: tr.t.ID, Attempt: attempt, Iteration: iteration, Fields: fields}
}
