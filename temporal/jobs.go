package temporal

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	tw "go.temporal.io/sdk/workflow"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

// start starts one job of a step (planner.Step, point 3). A job of user code only (a gate, a
// recover, the outputs) is done at once in workflow code and its report queued; an attempt and
// an on_finally step evaluate their user code here too, then call their verb as an activity in a
// coroutine of their own, which reports through the inbox.
func (d *driver) start(wk planner.Work) {
	id, e := wk.ID, wk.Eval
	switch id.Kind {
	case planner.JobGate:
		d.done(id, runGate(e))
	case planner.JobRecover:
		d.done(id, runRecover(e))
	case planner.JobOutputs:
		d.done(id, runOutputs(e))
	case planner.JobAttempt:
		d.attempt(wk)
	case planner.JobFinally:
		d.finally(wk)
	}
}

// done queues the report of a job that ran in workflow code.
func (d *driver) done(id planner.JobID, rep planner.Report) {
	d.running[id] = func() {}
	d.queue = append(d.queue, report{id: id, rep: rep})
}

// attempt runs an attempt: its `with` and fields, then its verb (an activity) under the run's
// context, then its bindings (settle). A verb that asks a question waits for its answer (D49),
// which then is the verb's output.
func (d *driver) attempt(wk planner.Work) {
	id, e, job := wk.ID, wk.Eval, wk.Job
	with, err := prepare(e, &job)
	if err != nil {
		d.done(id, planner.Report{Outcome: workflow.Failed(err), With: with})
		return
	}
	if e.KeepWith {
		d.queue = append(d.queue, report{id: id, rep: planner.Report{With: with}, prepared: true})
	}
	jctx, cancel := tw.WithCancel(d.ctx)
	d.startedAt[id] = d.now()
	j := &call{id: id, eval: e, with: with, ctx: jctx, cancel: cancel, in: jobInput(d.runID, id, &job)}
	j.in.Inspect = d.inspectView(&job)
	if job.Verb == "agent" && tw.GetVersion(d.ctx, agentCoreChange, tw.DefaultVersion, 1) >= 1 {
		d.agentAttempt(j)
		return
	}
	d.dispatch(j)
}

// finally runs an on_finally step under a context the user's cancellation does not end, bounded
// by the step's timeout: its `when` and fields, then its verb.
func (d *driver) finally(wk planner.Work) {
	id, e, job := wk.ID, wk.Eval, wk.Job
	ok, err := prepareStep(e, &job)
	if err != nil {
		d.done(id, planner.Report{Outcome: workflow.Failed(err), Skipped: true})
		return
	}
	if !ok {
		d.done(id, planner.Report{Skipped: true})
		return
	}
	free, _ := tw.NewDisconnectedContext(d.ctx)
	jctx, cancel := tw.WithCancel(free)
	d.dispatch(&call{id: id, eval: e, ctx: jctx, cancel: cancel, timeout: wk.Timeout, in: jobInput(d.runID, id, &job)})
}

// call is a job whose verb runs as an activity, from its dispatch to its report.
type call struct {
	id      planner.JobID
	eval    *planner.Eval
	with    map[string]any // an attempt's evaluated `with`
	ctx     tw.Context     // the job's: cancelling it cancels the activity
	cancel  tw.CancelFunc
	timeout time.Duration // an on_finally step's own bound; 0: none
	in      JobInput
	lost    int // dispatches whose worker was lost
}

func emitted(es []Emitted) []planner.Emitted {
	if len(es) == 0 {
		return nil
	}
	out := make([]planner.Emitted, len(es))
	for i, e := range es {
		out[i] = planner.Emitted{Kind: e.Kind, Fields: orEmpty(e.Fields.Map())}
	}
	return out
}

// dispatch runs a job's verb as an activity; settle takes its end. Temporal never retries it
// (MaximumAttempts 1): a failed verb is an outcome, and nika's retry policy decides.
// WaitForCancellation: a cancelled job ends before the run does, as a local job's goroutine.
func (d *driver) dispatch(j *call) {
	d.running[j.id] = j.cancel
	d.await(ended{job: j, f: tw.ExecuteActivity(d.activityOptions(j.ctx, j.timeout, j.id.String()), JobActivity, j.in)})
}

// activityOptions are the options of an activity under ctx: the run's job bound (timeout when
// it is not 0), its heartbeat timeout, no retry by Temporal, and cancellation waited for.
func (d *driver) activityOptions(ctx tw.Context, timeout time.Duration, summary string) tw.Context {
	bound := d.in.JobTimeout
	if bound <= 0 {
		bound = DefaultJobTimeout
	}
	if timeout > 0 {
		bound = timeout
	}
	hb := d.in.HeartbeatTimeout
	if hb <= 0 {
		hb = DefaultHeartbeatTimeout
	}
	return tw.WithActivityOptions(ctx, tw.ActivityOptions{
		StartToCloseTimeout: bound,
		HeartbeatTimeout:    hb,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             summary,
	})
}

// settle takes the end of a job's activity: its report (bindings run over an attempt's output),
// a question to wait on, or, when its worker was lost (its heartbeat timed out, or it stopped
// and interrupted the job: errInterrupted), the same attempt dispatched again with the steps it recorded (at-least-once, as a resumed local run's
// jobs), at most maxLost times.
func (d *driver) settle(j *call, f tw.Future) {
	var out JobOutcome
	if err := f.Get(d.loop, &out); err != nil {
		var again bool
		if out, again = d.failed(j, err); again {
			d.dispatch(j)
			return
		}
	}
	rep := planner.Report{Outcome: out.outcome(), Emitted: emitted(out.Emitted), With: j.with}
	if j.id.Kind == planner.JobFinally {
		rep.With = nil
		if q := rep.Outcome.Pause; q != nil { // only an attempt pauses (planner/memory.go)
			rep.Outcome = workflow.Failed(spec.NewError(spec.CodeBuiltinPrompt, "an on_finally step cannot wait for an answer: "+q.Error()+"; give the prompt a `default`",
				map[string]any{"mode": q.Mode, "message": q.Message}))
		}
		d.queue = append(d.queue, report{id: j.id, rep: rep})
		return
	}
	if q := rep.Outcome.Pause; q != nil && j.ctx.Err() == nil {
		// It waits for an answer, out of the running jobs; the core still sees it running.
		j.cancel()
		delete(d.running, j.id)
		delete(d.startedAt, j.id)
		d.waiting = append(d.waiting, waiting{Paused: planner.Paused{Task: j.id.Task, Iteration: j.id.Iteration, Attempt: j.id.Attempt, Question: *q}, id: j.id, eval: j.eval, with: j.with})
		return
	}
	bind(j.eval, &rep)
	d.queue = append(d.queue, report{id: j.id, rep: rep})
}

// failed maps an activity's error to the job's outcome, or says to dispatch it again.
func (d *driver) failed(j *call, err error) (JobOutcome, bool) {
	if j.ctx.Err() != nil || isCancelled(err) {
		return JobOutcome{Err: wireError(jobCancelled())}, false
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		switch {
		case te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT && j.lost < maxLost:
			j.lost++
			var steps []json.RawMessage
			if te.HasLastHeartbeatDetails() && te.LastHeartbeatDetails(&steps) == nil && len(steps) > len(j.in.Recorded) {
				j.in.Recorded = steps
			}
			return JobOutcome{}, true
		case te.TimeoutType() == enumspb.TIMEOUT_TYPE_START_TO_CLOSE && j.timeout > 0:
			return JobOutcome{Err: wireError(spec.NewError(spec.CodeTimeout, fmt.Sprintf("on_finally step %d of task %q timed out after %s", j.id.Finally, j.id.Task, j.timeout),
				map[string]any{"timeout": j.timeout.String()}))}, false
		}
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == errInterrupted && j.lost < maxLost { // its worker stopped
		j.lost++
		var steps []json.RawMessage
		if ae.HasDetails() && ae.Details(&steps) == nil && len(steps) > len(j.in.Recorded) {
			j.in.Recorded = steps
		}
		return JobOutcome{}, true
	}
	return JobOutcome{Err: &Error{Category: "internal_error", Message: "the job's activity failed: " + err.Error(), Details: Value{map[string]any{}}}}, false
}

// answer takes an Answer signal: it answers every open question it names (TASK[i] one
// iteration's, TASK every one of the task's), parsed as `nika run --answer` parses it, as the
// verb's output, over which the attempt's bindings run; an answer that names no open question,
// or that is no answer to it, is logged and dropped.
func (d *driver) answer(a Answer) {
	log := tw.GetLogger(d.ctx)
	matched := false
	for i := 0; i < len(d.waiting); {
		wt := d.waiting[i]
		q := Question{Task: wt.Task, Iteration: wt.Iteration}
		if a.Name != q.name() && a.Name != wt.Task {
			i++
			continue
		}
		matched = true
		v, err := tools.ParseAnswer(wt.Question.Mode, wt.Question.Choices, a.Text)
		if err != nil {
			log.Warn("nika: an answer was dropped", "name", a.Name, "error", err.Error())
			i++
			continue
		}
		d.waiting = append(d.waiting[:i], d.waiting[i+1:]...)
		rep := planner.Report{Outcome: workflow.Outcome{Output: v}, With: wt.with}
		bind(wt.eval, &rep)
		d.queue = append(d.queue, report{id: wt.id, rep: rep})
	}
	if !matched {
		log.Warn("nika: an answer names no open question", "name", a.Name)
	}
}

// unpause forgets a waiting attempt the core ended (a cancellation, its task's timeout).
func (d *driver) unpause(id planner.JobID) {
	if id.Kind != planner.JobAttempt {
		return
	}
	for i, wt := range d.waiting {
		if wt.id == id {
			d.waiting = append(d.waiting[:i], d.waiting[i+1:]...)
			return
		}
	}
}

// questions are the open questions, in the order they were asked.
func (d *driver) questions() []Question {
	qs := make([]Question, 0, len(d.waiting))
	for _, wt := range d.waiting {
		qs = append(qs, Question{Task: wt.Task, Iteration: wt.Iteration, Attempt: wt.Attempt,
			Mode: wt.Question.Mode, Message: wt.Question.Message, Choices: wt.Question.Choices})
	}
	return qs
}

// inspectView answers the nika:inspect call an invoke attempt makes (LANGUAGE.md §7.2) as it
// starts: an activity cannot ask the workflow while it runs, so the view comes with the job, as
// the core and the running jobs are when the attempt starts (the local driver answers when the
// tool asks, a moment later; both depend on timing for records and threads). Nil for any other
// job; an agent's own nika:inspect calls have no view (NIKA-INVOKE-003).
func (d *driver) inspectView(job *workflow.Job) *InspectView {
	if job.Verb != "invoke" || job.Fields["tool"] != "nika:inspect" {
		return nil
	}
	args, _ := job.Fields["args"].(map[string]any)
	view, _ := args["view"].(string)
	if view == planner.ViewThreads {
		return &InspectView{View: view, Answer: Value{d.threads()}}
	}
	return &InspectView{View: view, Answer: Value{d.core.View(view)}}
}

// threads is the threads view: the attempts running now, as the local driver lists them.
func (d *driver) threads() []any {
	var ids []planner.JobID
	for _, id := range sortedJobs(d.running) {
		if id.Kind == planner.JobAttempt {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b planner.JobID) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Attempt, b.Attempt))
	})
	out := make([]any, len(ids))
	for i, id := range ids {
		var it any
		if id.Iteration >= 0 {
			it = id.Iteration
		}
		out[i] = map[string]any{"task_id": id.Task, "iteration": it, "attempt": id.Attempt,
			"started_at": d.startedAt[id].UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	}
	return out
}
