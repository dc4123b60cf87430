package planner

// Retries (LANGUAGE.md §3.8) and the task timeout (§3.9): the back-off and
// deadline timers of an attempt loop.

import (
	"fmt"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
)

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
	if err.Code == spec.CodeTimeout || err.Code == spec.CodeCancel {
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
			c.step.Cancel = append(c.step.Cancel, tr.jobOf(it))
		}
		tr.setState(it, iterRunning) // leave backoff; the timeout ends the loop
		it.live = false
		err := spec.NewError(spec.CodeTimeout, fmt.Sprintf("task %q timed out after %s", tr.t.ID, tr.t.Timeout),
			map[string]any{"timeout": tr.t.Timeout.String(), "elapsed_ms": c.now.Sub(it.start).Milliseconds()})
		tr.handleError(c, it, tr.stamp(err, it.attempt, it.index))
	}
}
