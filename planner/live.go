package planner

// The live stream (D19) of a run: what the driver reports as it happens,
// never read by the core.

import (
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// liveNotes forwards a verb's live observations (from any goroutine) to the
// live stream, stamped with the job; nil when nobody watches.
func (d *driver) liveNotes(id JobID) func(workflow.LiveNote) {
	if d.opts.Live == nil {
		return nil
	}
	return func(n workflow.LiveNote) {
		d.live(event.Live{Kind: n.Kind, Task: id.Task, Iteration: id.Iteration, Attempt: id.Attempt,
			Provider: n.Provider, Model: n.Model, Tool: n.Tool, Outcome: n.Outcome, Code: n.Code, IsError: n.IsError,
			RateLimited: n.RateLimited, InputTokens: n.InputTokens, OutputTokens: n.OutputTokens, Elapsed: n.Elapsed,
			Turn: n.Turn, Index: n.Index, Size: n.Size, Turns: n.Turns, Reason: n.Reason,
			Progress: n.Progress, Total: n.Total, Message: n.Message})
	}
}

// liveJob is what task_finished needs from its task_started.
type liveJob struct {
	verb     string
	at       time.Time
	timedOut bool // cancelled by its task's timeout
}

// liveStarted reports a job starting; called on the driver goroutine only.
func (d *driver) liveStarted(id JobID, verb string) {
	if d.opts.Live == nil {
		return
	}
	if d.jobs == nil {
		d.jobs = map[JobID]liveJob{}
	}
	d.jobs[id] = liveJob{verb: verb, at: d.opts.Clock()}
	d.live(event.Live{Kind: event.LiveTaskStarted, Task: id.Task, Verb: verb, Iteration: id.Iteration, Attempt: id.Attempt})
}

// liveStep reports an on_finally step starting, from its goroutine once
// its `when` let it run, and returns the time.
func (d *driver) liveStep(id JobID, verb string) time.Time {
	if d.opts.Live == nil {
		return time.Time{}
	}
	at := d.opts.Clock()
	d.live(event.Live{Kind: event.LiveTaskStarted, Task: id.Task, Verb: verb, Iteration: id.Iteration, Attempt: id.Attempt})
	return at
}

// liveFinished reports a job's end with the verb and start time of its task_started; a job that
// ran no verb (a recover, a gate, the outputs, an on_finally step its `when` skipped) had none.
func (d *driver) liveFinished(r jobResult) {
	if d.opts.Live == nil {
		return
	}
	id, out := r.id, r.rep.Outcome
	var j liveJob
	switch {
	case id.Kind == JobAttempt:
		j = d.jobs[id]
		delete(d.jobs, id)
	case id.Kind == JobFinally && r.step != nil:
		j = *r.step
	default:
		return
	}
	st, c := status(out), code(out)
	if j.timedOut && st == StatusCancelled { // the verb saw a cancellation; the task failed with a timeout
		st, c = StatusFailure, spec.CodeTimeout
	}
	d.live(event.Live{Kind: event.LiveTaskFinished, Task: id.Task, Verb: j.verb, Iteration: id.Iteration, Attempt: id.Attempt,
		Status: string(st), Code: c, Elapsed: d.opts.Clock().Sub(j.at)})
}

// liveTimedOut marks the job a task's deadline timer cancels, so that its task_finished says failure
// with NIKA-TIMEOUT-001, as the task does, and not the cancellation the verb saw.
func (d *driver) liveTimedOut(t Timer, s Step) {
	if d.opts.Live == nil || t.Kind != TimerDeadline {
		return
	}
	for _, id := range s.Cancel {
		if j, ok := d.jobs[id]; ok && id.Task == t.Task && id.Iteration == t.Iteration && id.Finally < 0 {
			j.timedOut = true
			d.jobs[id] = j
		}
	}
}

// liveRetrying reports task_retrying in real time for each retry the step decided (Step.Retrying):
// its canonical task_retrying may wait in the release buffer.
func (d *driver) liveRetrying(s Step) {
	if d.opts.Live == nil {
		return
	}
	for _, r := range s.Retrying {
		d.live(event.Live{Kind: event.LiveTaskRetrying, Task: r.Task, Verb: r.Verb, Iteration: r.Iteration, Attempt: r.Attempt, Code: r.Code})
	}
}

func (d *driver) live(l event.Live) {
	if d.opts.Live != nil {
		l.Workflow = d.workflow
		l.At = d.opts.Clock()
		d.opts.Live.Observe(l)
	}
}

func status(o workflow.Outcome) Status {
	switch {
	case o.Err == nil:
		return StatusSuccess
	case o.Err.Code == spec.CodeCancel:
		return StatusCancelled
	}
	return StatusFailure
}

func code(o workflow.Outcome) string {
	if o.Err != nil {
		return o.Err.Code
	}
	return ""
}
