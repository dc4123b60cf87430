package planner

// on_error (LANGUAGE.md §3.10): skip, fail, or recover, whose job may wait
// for the tasks its value reads (D2) without holding a slot (D4).

import (
	"sort"

	"github.com/nikahq/nika/spec"
)

// handleError applies on_error (§3.10) to the error that ended the loop.
func (tr *taskRun) handleError(c *Core, it *iterRun, err *spec.Error) {
	oe := tr.t.OnError
	if oe == nil || oe.FailWorkflow || err.Code == spec.CodeCancel || !codeListed(oe.OnCodes, err.Code) {
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
	it.live = true
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
