package planner

import (
	"context"
	"fmt"
	"sort"
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
	job      JobID // the attempt or recover in flight
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

	head       event.Event   // task_started
	tail       []event.Event // on_finally logs, then the terminal event
	terminalEv event.Event
	finallyIdx int
	finallyJob JobID
	gateJob    JobID
	skipReason endReason
	cancelCode string
	counted    bool // dependents were told this task is terminal
	// Incremental scheduling: the task is gated when its count of
	// non-terminal dependencies reaches zero.
	waitingOn  int
	dependents []*taskRun
	solo       iterRun        // the attempt loop of a task without for_each
	soloIters  [1]*iterRun    // iters of a task without for_each: {&solo}
	hasHead    bool           // head holds task_started, not released yet
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
	tr.gateJob = JobID{Task: tr.t.ID, Kind: JobGate, Iteration: -1, Finally: -1}
	c.step.Start = append(c.step.Start, Work{ID: tr.gateJob, Eval: e})
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
	tr.head, tr.hasHead = tr.event(event.TaskStarted, -1, 0, map[string]any{"verb": tr.t.Verb}), true
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
	it.job = id
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
		if tr.phase == phaseGating && id == tr.gateJob {
			tr.gated(c, r)
		}
		return
	case JobRecover:
		if it := tr.iter(id.Iteration); it != nil && it.state == iterRecovering && it.job == id {
			tr.recovered(c, it, r)
		}
		return
	case JobFinally:
		if tr.phase == phaseFinally && id == tr.finallyJob {
			tr.finallyDone(c, id, r)
		}
		return
	}
	it := tr.iter(id.Iteration)
	if it == nil || it.state != iterRunning || it.job != id {
		return // stale: the attempt was cancelled by a timeout or fail-fast
	}
	if r.With != nil {
		it.with = r.With // what its recover sees (§3.10)
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

// attemptFailed applies the retry decision of §3.8.
func (tr *taskRun) attemptFailed(c *Core, it *iterRun, err *spec.Error) {
	err = tr.stamp(err, it.attempt, it.index)
	if r := tr.t.Retry; r != nil && retryable(r, err) && it.attempt < r.MaxAttempts && !c.cancelled {
		delay := backoff(r, c.cfg.Seed, tr.t.ID, it.index, it.attempt)
		it.events = append(it.events, tr.event(event.TaskRetrying, it.index, it.attempt, map[string]any{
			"attempt": it.attempt, "max_attempts": r.MaxAttempts, "delay_ms": delay.Milliseconds(), "code": err.Code,
		}))
		tr.setState(it, iterBackoff)
		it.timerSeq++
		c.step.Timers = append(c.step.Timers, Timer{Task: tr.t.ID, Iteration: it.index, Kind: TimerBackoff, Seq: it.timerSeq, Delay: delay})
		c.step.Retrying = append(c.step.Retrying, Retrying{Task: tr.t.ID, Verb: tr.t.Verb, Iteration: it.index, Attempt: it.attempt, Code: err.Code})
		return
	}
	tr.handleError(c, it, err)
}

func retryable(r *spec.Retry, err *spec.Error) bool {
	if err.Code == "NIKA-TIMEOUT-001" || err.Code == "NIKA-CANCEL-001" {
		return false
	}
	if len(r.OnCodes) > 0 {
		for _, code := range r.OnCodes {
			if code == err.Code {
				return true
			}
		}
		return false
	}
	return err.Transient
}

// handleError applies on_error (§3.10) to the error that ended the loop.
func (tr *taskRun) handleError(c *Core, it *iterRun, err *spec.Error) {
	oe := tr.t.OnError
	if oe == nil || oe.FailWorkflow || err.Code == "NIKA-CANCEL-001" || !codeListed(oe.OnCodes, err.Code) {
		it.err, it.failed = err, true
		tr.iterDone(c, it)
		return
	}
	if oe.Skip {
		it.err, it.skipped = err, true
		tr.iterDone(c, it)
		return
	}
	it.err = err
	if !c.recoverReady(tr) {
		tr.setState(it, iterRecoverWait)
		c.waitRecover(tr)
		tr.maybeWaitRecover(c)
		return
	}
	tr.recover(c, it)
}

func codeListed(codes []string, code string) bool {
	if len(codes) == 0 {
		return true
	}
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}

// maybeWaitRecover frees the task's slot while nothing of it runs but
// recovers waiting on other tasks (D2, D4).
func (tr *taskRun) maybeWaitRecover(c *Core) {
	if tr.count[iterRunning] > 0 || tr.count[iterBackoff] > 0 || tr.count[iterRecovering] > 0 {
		return
	}
	if tr.waitingRecover() && (tr.t.ForEach == nil || tr.next >= tr.stopAt) {
		tr.phase = phaseRecoverWait
		c.slotFree(tr)
	}
}

// resumeRecover runs the recovers that waited, once their tasks are
// terminal, in index order.
func (tr *taskRun) resumeRecover(c *Core) {
	tr.phase = phaseRunning
	waiting := tr.recWait
	tr.recWait = nil
	sort.Slice(waiting, func(i, j int) bool { return waiting[i].index < waiting[j].index })
	for _, it := range waiting {
		c.visits++
		if it.state == iterRecoverWait { // not cancelled meanwhile
			tr.recover(c, it)
		}
	}
}

// waitingRecover reports whether an iteration waits on a recover.
func (tr *taskRun) waitingRecover() bool { return tr.count[iterRecoverWait] > 0 }

// recover asks for the recover job: the driver evaluates on_error.recover,
// whose value replaces the raw output, and runs the bindings over it
// (§3.10, usercode.go).
func (tr *taskRun) recover(c *Core, it *iterRun) {
	id := JobID{Task: tr.t.ID, Kind: JobRecover, Iteration: it.index, Attempt: it.attempt, Finally: -1}
	it.job = id
	tr.setState(it, iterRecovering)
	c.step.Start = append(c.step.Start, Work{ID: id, Eval: &Eval{
		Scope: c.scope(tr, scopeRecover, it), Recover: tr.t.OnError.Recover, Bindings: tr.t.Bindings,
	}})
}

// recovered takes the recover job's report. A failure there is final.
func (tr *taskRun) recovered(c *Core, it *iterRun, r Report) {
	if err := r.Outcome.Err; err != nil {
		it.err, it.failed = tr.stamp(err, it.attempt, it.index), true
	} else {
		it.output, it.bindings, it.err = r.Outcome.Output, r.Bindings, nil
	}
	tr.iterDone(c, it)
}

// iterDone settles one attempt loop; the task's outcome is decided when
// every started iteration is done.
func (tr *taskRun) iterDone(c *Core, it *iterRun) {
	tr.setState(it, iterDone)
	if tr.t.ForEach != nil && it.failed && tr.t.FailFast && it.index < tr.stopAt {
		// D3: iterations above the lowest failure never start, and running
		// ones are cancelled; those below still run. Those at or above the
		// previous stopAt were settled by the failure that set it, so each
		// iteration is looked at once however many failures lower stopAt.
		upTo := min(tr.stopAt, tr.next)
		tr.stopAt = it.index + 1
		for i := it.index + 1; i < upTo; i++ {
			c.visits++
			if o := tr.iters[i]; o != nil && o.state != iterDone {
				if o.state == iterRunning || o.state == iterRecovering {
					c.step.Cancel = append(c.step.Cancel, o.job)
				}
				tr.setState(o, iterDone)
				o.failed, o.err = false, nil
			}
		}
	}
	if tr.t.ForEach != nil {
		tr.fill(c)
		if tr.next < tr.stopAt {
			return // more iterations still to start
		}
	}
	if tr.open() > 0 {
		tr.maybeWaitRecover(c)
		return
	}
	tr.decide(c)
}

// decide aggregates the iterations into the task's record, then runs
// on_finally.
func (tr *taskRun) decide(c *Core) {
	if tr.phase == phaseFinally || tr.phase == phaseSettled {
		return // already decided (an iteration can finish inside fill)
	}
	if tr.t.ForEach == nil {
		it := tr.iters[0]
		switch {
		case it.failed:
			status := StatusFailure
			if it.err != nil && it.err.Code == "NIKA-CANCEL-001" {
				status = StatusCancelled
			}
			tr.record(c, status, nil, nil, tr.stamp(it.err, it.attempt, it.index)) // a user cancel's is not stamped yet
		case it.skipped:
			tr.record(c, StatusSkipped, nil, nil, it.err)
		default:
			tr.record(c, StatusSuccess, it.output, it.bindings, nil)
		}
		return
	}
	out := make([]any, len(tr.items))
	names := bindingNames(tr.t)
	bind := make(map[string]any, len(names))
	cols := make(map[string][]any, len(names))
	for _, n := range names {
		cols[n] = make([]any, len(tr.items))
	}
	// The task's error is its lowest failed iteration's; a real failure wins
	// over a cancellation, so a user cancel never hides one (D23).
	var first, firstCancel *iterRun
	for _, it := range tr.iters {
		c.visits++
		if it == nil || it.state != iterDone {
			continue
		}
		if it.failed {
			if it.err != nil && it.err.Code == "NIKA-CANCEL-001" {
				if firstCancel == nil {
					firstCancel = it
				}
			} else if first == nil {
				first = it
			}
			continue
		}
		if first != nil && tr.t.FailFast {
			continue
		}
		if !it.skipped {
			out[it.index] = it.output
			for _, n := range names {
				cols[n][it.index] = it.bindings[n]
			}
		}
	}
	for _, n := range names {
		bind[n] = cols[n]
	}
	if first == nil && firstCancel != nil {
		// A user cancel's error is not stamped yet; a cancelled task has no output (§3.13).
		e := *tr.stamp(firstCancel.err, firstCancel.attempt, firstCancel.index)
		tr.record(c, StatusCancelled, nil, nil, &e)
		return
	}
	if first != nil {
		if tr.t.FailFast {
			for i := first.index; i < len(out); i++ {
				out[i] = nil
			}
		}
		e := *first.err
		e.Details = copyDetails(e.Details)
		e.Details["iteration"] = first.index
		status := StatusFailure
		if e.Code == "NIKA-CANCEL-001" {
			status = StatusCancelled
		}
		tr.record(c, status, out, nil, &e)
		return
	}
	tr.record(c, StatusSuccess, out, bind, nil)
}

// record fixes the task's record and moves on to on_finally.
func (tr *taskRun) record(c *Core, status Status, output any, bindings map[string]any, err *spec.Error) {
	tr.status, tr.output, tr.bindings, tr.err = status, output, bindings, err
	if status == StatusFailure {
		c.failed = true
	}
	if status == StatusCancelled && err != nil {
		tr.skipReason, tr.cancelCode = reasonUser, err.Code
	}
	tr.endedAt = c.now
	tr.phase = phaseFinally
	tr.runFinally(c)
}

// runFinally starts the next on_finally step, best effort (§3.11): its
// job evaluates the step's `when` and fields, then runs its verb. Once
// every step reported, the task is settled.
func (tr *taskRun) runFinally(c *Core) {
	if tr.finallyIdx < len(tr.t.OnFinally) {
		step := tr.t.OnFinally[tr.finallyIdx]
		id := JobID{Task: tr.t.ID, Kind: JobFinally, Iteration: -1, Attempt: 0, Finally: tr.finallyIdx}
		tr.finallyJob = id
		c.step.Start = append(c.step.Start, Work{ID: id, Job: c.job(tr, step.Verb, 0, -1), Timeout: step.Timeout,
			Eval: &Eval{Scope: c.scope(tr, scopeFinally, nil), When: step.When, Body: step.Body}})
		return
	}
	tr.settle(c, tr.status, tr.err)
}

// finallyDone takes an on_finally step's report: its events, and a warning
// for a step that failed or whose `when` or fields did not evaluate; a
// step whose `when` was false leaves nothing.
func (tr *taskRun) finallyDone(c *Core, id JobID, r Report) {
	for _, e := range r.Emitted {
		tr.tail = append(tr.tail, tr.event(e.Kind, -1, 0, e.Fields))
	}
	if err := r.Outcome.Err; err != nil {
		msg := fmt.Sprintf("on_finally step %d failed: %s", id.Finally, err.Error())
		if r.Skipped {
			msg = fmt.Sprintf("on_finally step %d: %s", id.Finally, err.Error())
		}
		tr.tail = append(tr.tail, tr.event(event.Log, -1, 0, map[string]any{"level": "warn", "message": msg}))
	}
	tr.finallyIdx++
	tr.runFinally(c)
}

// settle makes the task terminal and queues its terminal event.
func (tr *taskRun) settle(c *Core, status Status, err *spec.Error) {
	tr.status, tr.err = status, err
	if status == StatusFailure {
		c.failed = true
	}
	if tr.endedAt.IsZero() && tr.started {
		tr.endedAt = c.now
	}
	timing := map[string]any{"duration_ms": tr.duration().Milliseconds()}
	var ev event.Event
	switch status {
	case StatusSuccess:
		ev = tr.event(event.TaskCompleted, -1, 0, map[string]any{"status": string(StatusSuccess), "timing": timing})
	case StatusFailure:
		f := map[string]any{"timing": timing}
		if err != nil {
			f["code"], f["category"], f["transient"], f["message"] = err.Code, err.Category, err.Transient, err.Message
			ev = tr.event(event.TaskFailed, -1, err.Attempt, f)
		} else {
			ev = tr.event(event.TaskFailed, -1, 0, f)
		}
	case StatusSkipped:
		f := map[string]any{"reason": string(tr.skipReason)}
		if err != nil {
			f["reason"], f["code"] = string(reasonOnErrorSkip), err.Code
		}
		ev = tr.event(event.TaskSkipped, -1, 0, f)
	case StatusCancelled:
		f := map[string]any{"reason": string(tr.skipReason)}
		if tr.skipReason == "" {
			f["reason"] = string(reasonUpstream)
		}
		if err != nil {
			f["code"] = err.Code
		}
		ev = tr.event(event.TaskCancelled, -1, 0, f)
	}
	tr.terminalEv = ev
	tr.phase = phaseSettled
	c.slotFree(tr)
	c.becameTerminal(tr)
}

func (tr *taskRun) duration() time.Duration {
	if !tr.started {
		return 0
	}
	return tr.endedAt.Sub(tr.startedAt)
}

// stream emits what of a running for_each task's canonical events is final
// while the task is at the front of the release order: task_started, then
// the events of its iterations in index order up to the first one not done
// (under fail-fast, up to its lowest failure, D3: every iteration below is
// done and did not fail, so nothing can drop them). A wide for_each's
// events so reach the stream as its iterations end, not all at once when it
// settles (a cancellation then writes only the rest), and are not kept.
func (tr *taskRun) stream(c *Core) {
	if tr.t.ForEach == nil || !tr.started {
		return
	}
	tr.emitHead(c)
	for tr.relIter < len(tr.iters) && !(tr.t.FailFast && tr.relIter >= tr.stopAt) {
		it := tr.iters[tr.relIter]
		if it == nil || it.state != iterDone {
			return
		}
		c.visits++
		for _, e := range it.events {
			c.emit(e)
		}
		it.events = nil
		tr.relIter++
	}
}

// emitHead releases task_started once.
func (tr *taskRun) emitHead(c *Core) {
	if tr.hasHead {
		c.emit(tr.head)
		tr.head, tr.hasHead = event.Event{}, false
	}
}

// release emits the rest of a settled task's canonical events, in release
// order: task_started, the iterations' events in index order (under
// fail-fast, those above the failed index are dropped, D3), on_finally's,
// then the terminal event. The iterations are dropped after it: the record
// holds what remains of them, and a late report finds none (stale).
func (tr *taskRun) release(c *Core) {
	tr.emitHead(c)
	limit := len(tr.iters)
	if tr.t.ForEach != nil && tr.t.FailFast && tr.stopAt < len(tr.items) {
		limit = tr.stopAt
	}
	for i := tr.relIter; i < limit && i < len(tr.iters); i++ {
		c.visits++
		if it := tr.iters[i]; it != nil {
			for _, e := range it.events {
				c.emit(e)
			}
		}
	}
	for _, e := range tr.tail {
		c.emit(e)
	}
	c.emit(tr.terminalEv)
	tr.iters, tr.recWait, tr.items, tr.tail = nil, nil, nil, nil
	tr.soloIters[0], tr.solo = nil, iterRun{}
}

// timer handles a backoff or deadline timer.
func (tr *taskRun) timer(c *Core, t Timer) {
	it := tr.iter(t.Iteration)
	if it == nil || it.state == iterDone || it.state == iterRecoverWait || it.state == iterRecovering {
		return // the timeout does not cover recover (§3.9)
	}
	switch t.Kind {
	case TimerBackoff:
		if it.state == iterBackoff && t.Seq == it.timerSeq && !c.cancelled {
			tr.startAttempt(c, it)
		}
	case TimerDeadline:
		if it.state == iterRunning {
			c.step.Cancel = append(c.step.Cancel, it.job)
		}
		tr.setState(it, iterRunning) // leave backoff; the timeout ends the loop
		it.job = JobID{}
		err := spec.NewError("NIKA-TIMEOUT-001", fmt.Sprintf("task %q timed out after %s", tr.t.ID, tr.t.Timeout),
			map[string]any{"timeout": tr.t.Timeout.String(), "elapsed_ms": c.now.Sub(it.start).Milliseconds()})
		tr.handleError(c, it, tr.stamp(err, it.attempt, it.index))
	}
}

// userCancel applies a user cancellation to this task.
func (tr *taskRun) userCancel(c *Core) {
	switch tr.phase {
	case phaseWaiting, phaseGating, phaseReady:
		if tr.phase == phaseGating {
			c.step.Cancel = append(c.step.Cancel, tr.gateJob)
		}
		tr.skipReason = reasonUser
		tr.settle(c, StatusCancelled, nil)
	case phaseRunning, phaseRecoverWait:
		// One error for every iteration it ends; decide stamps the one
		// that becomes the task's (an error per iteration made a wide
		// for_each slow to cancel).
		cancelled := spec.NewError("NIKA-CANCEL-001", "the run was cancelled", nil)
		for _, it := range tr.iters {
			c.visits++
			if it == nil || it.state == iterDone {
				continue
			}
			if it.state == iterRunning || it.state == iterRecovering {
				c.step.Cancel = append(c.step.Cancel, it.job)
			}
			it.job = JobID{}
			tr.setState(it, iterDone)
			it.failed = true
			it.err = cancelled
		}
		tr.stopAt = tr.next
		tr.decide(c)
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
