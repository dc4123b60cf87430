package planner

// Settlement: an attempt loop ends (iterDone, with fail-fast, D3), the task's
// record is decided, its on_finally steps run (§3.11), it settles, and its
// canonical events are released in order (stream, release); and the user's
// cancellation of one task.

import (
	"fmt"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
)

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
				if o.live && (o.state == iterRunning || o.state == iterRecovering) {
					c.step.Cancel = append(c.step.Cancel, tr.jobOf(o))
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
			if it.err != nil && it.err.Code == spec.CodeCancel {
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
			if it.err != nil && it.err.Code == spec.CodeCancel {
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
		if e.Code == spec.CodeCancel {
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
		id := tr.finallyJob()
		job := c.job(tr, step.Verb, 0, -1)
		if step.Model != "" { // the step's own model (§6.1), not its task's: an exec task has none
			job.Model = step.Model
		}
		c.step.Start = append(c.step.Start, Work{ID: id, Job: job, Timeout: step.Timeout,
			Eval: &Eval{Scope: c.scope(tr, scopeFinally, nil), When: step.When, Body: step.Body}})
		return
	}
	tr.settle(c, tr.status, tr.err)
}

// finallyDone takes an on_finally step's report: its events, and a warning
// for a step that failed or whose `when` or fields did not evaluate; a
// step whose `when` was false leaves nothing.
func (tr *taskRun) finallyDone(c *Core, id JobID, r Report) {
	if r.Restored {
		tr.tail = append(tr.tail, tr.event(event.TaskRestored, -1, 0, map[string]any{"on_finally": id.Finally}))
	}
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
	tr.end = terminalEvent{kind: ev.Kind, attempt: ev.Attempt, fields: ev.Fields}
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
		c.emit(tr.event(event.TaskStarted, -1, 0, c.startedFields(tr.t.Verb)))
		tr.hasHead = false
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
	c.emit(tr.event(tr.end.kind, -1, tr.end.attempt, tr.end.fields))
	tr.iters, tr.recWait, tr.items, tr.tail = nil, nil, nil, nil
	tr.soloIters[0], tr.solo = nil, iterRun{}
}

// userCancel applies a user cancellation to this task.
func (tr *taskRun) userCancel(c *Core) {
	switch tr.phase {
	case phaseWaiting, phaseGating, phaseReady:
		if tr.phase == phaseGating {
			c.step.Cancel = append(c.step.Cancel, tr.gateJob())
		}
		tr.skipReason = reasonUser
		tr.settle(c, StatusCancelled, nil)
	case phaseRunning, phaseRecoverWait:
		// One error for every iteration it ends; decide stamps the one
		// that becomes the task's (an error per iteration made a wide
		// for_each slow to cancel).
		cancelled := spec.NewError(spec.CodeCancel, "the run was cancelled", nil)
		for _, it := range tr.iters {
			c.visits++
			if it == nil || it.state == iterDone {
				continue
			}
			if it.live && (it.state == iterRunning || it.state == iterRecovering) {
				c.step.Cancel = append(c.step.Cancel, tr.jobOf(it))
			}
			it.live = false
			tr.setState(it, iterDone)
			it.failed = true
			it.err = cancelled
		}
		tr.stopAt = tr.next
		tr.decide(c)
	}
}
