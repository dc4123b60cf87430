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
// context, then its bindings. A verb that asks a question waits for its answer (D49), which
// then is the verb's output.
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
	d.running[id] = cancel
	d.startedAt[id] = d.now()
	view := d.inspectView(&job)
	tw.Go(jctx, func(c tw.Context) {
		out := d.callVerb(c, id, &job, 0, view)
		rep := planner.Report{Outcome: out.outcome(), Emitted: emitted(out.Emitted), With: with}
		if q := rep.Outcome.Pause; q != nil && c.Err() == nil {
			rep = d.await(c, planner.Paused{Task: id.Task, Iteration: id.Iteration, Attempt: id.Attempt, Question: *q}, e, with)
		} else {
			bind(e, &rep)
		}
		d.inbox.Send(c, report{id: id, rep: rep})
	})
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
	d.running[id] = cancel
	tw.Go(jctx, func(c tw.Context) {
		out := d.callVerb(c, id, &job, wk.Timeout, nil)
		rep := planner.Report{Outcome: out.outcome(), Emitted: emitted(out.Emitted)}
		if q := rep.Outcome.Pause; q != nil { // only an attempt pauses (planner/memory.go)
			rep.Outcome = workflow.Failed(spec.NewError(spec.CodeBuiltinPrompt, "an on_finally step cannot wait for an answer: "+q.Error()+"; give the prompt a `default`",
				map[string]any{"mode": q.Mode, "message": q.Message}))
		}
		d.inbox.Send(c, report{id: id, rep: rep})
	})
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

// callVerb runs a job's verb as an activity and returns its outcome. Temporal never retries
// it (MaximumAttempts 1): a failed verb is an outcome, and nika's retry policy decides. An
// activity whose worker was lost (its heartbeat timed out) is dispatched again, as the same
// attempt: the work was not done, or not recorded (at-least-once, as a resumed local run's).
// timeout, when set, bounds the job (an on_finally step's): its expiry is NIKA-TIMEOUT-001.
func (d *driver) callVerb(c tw.Context, id planner.JobID, job *workflow.Job, timeout time.Duration, view *InspectView) JobOutcome {
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
	actx := tw.WithActivityOptions(c, tw.ActivityOptions{
		StartToCloseTimeout: bound,
		HeartbeatTimeout:    hb,
		WaitForCancellation: true, // a cancelled job ends before the run does, as a local job's goroutine
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             id.String(),
	})
	in := jobInput(d.runID, id, job)
	in.Inspect = view
	for lost := 0; ; lost++ {
		var out JobOutcome
		err := tw.ExecuteActivity(actx, JobActivity, in).Get(actx, &out)
		if err == nil {
			return out
		}
		if c.Err() != nil || isCancelled(err) {
			return JobOutcome{Err: wireError(spec.NewError(spec.CodeCancel, "the job was cancelled", nil))}
		}
		var te *temporal.TimeoutError
		if errors.As(err, &te) {
			switch {
			case te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT && lost < maxLost:
				// Its worker is gone: another one takes it, with the steps it recorded.
				var steps []json.RawMessage
				if te.HasLastHeartbeatDetails() && te.LastHeartbeatDetails(&steps) == nil && len(steps) > len(in.Recorded) {
					in.Recorded = steps
				}
				continue
			case te.TimeoutType() == enumspb.TIMEOUT_TYPE_START_TO_CLOSE && timeout > 0:
				return JobOutcome{Err: wireError(spec.NewError(spec.CodeTimeout, fmt.Sprintf("on_finally step %d of task %q timed out after %s", id.Finally, id.Task, timeout),
					map[string]any{"timeout": timeout.String()}))}
			}
		}
		return JobOutcome{Err: &Error{Category: "internal_error", Message: "the job's activity failed: " + err.Error(), Details: Value{map[string]any{}}}}
	}
}

// await keeps an attempt that asked a question waiting until an Answer for it comes (the
// answer is its verb's output, its bindings then run) or the core ends it (a cancellation,
// its task's timeout: the report is then stale).
func (d *driver) await(c tw.Context, p planner.Paused, e *planner.Eval, with map[string]any) planner.Report {
	ch := tw.NewChannel(c)
	d.waiting = append(d.waiting, waiting{Paused: p, eval: e, with: with, ch: ch})
	sel := tw.NewSelector(c)
	var rep planner.Report
	sel.AddReceive(ch, func(r tw.ReceiveChannel, _ bool) {
		var v Value
		r.Receive(c, &v)
		rep = planner.Report{Outcome: workflow.Outcome{Output: v.V}, With: with}
		bind(e, &rep)
	})
	sel.AddReceive(c.Done(), func(tw.ReceiveChannel, bool) {
		rep = planner.Report{Outcome: workflow.Failed(spec.NewError(spec.CodeCancel, "the question was withdrawn", nil)), With: with}
	})
	sel.Select(c)
	return rep
}

// answer takes an Answer signal: it answers every open question it names (TASK[i] one
// iteration's, TASK every one of the task's), parsed as `nika run --answer` parses it; an
// answer that names no open question, or that is no answer to it, is logged and dropped.
func (d *driver) answer(a Answer, step planner.Step) planner.Step {
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
		wt.ch.SendAsync(Value{v})
	}
	if !matched {
		log.Warn("nika: an answer names no open question", "name", a.Name)
	}
	return planner.Step{Done: step.Done}
}

// unpause forgets a waiting attempt the core ended; its coroutine sees its context end.
func (d *driver) unpause(id planner.JobID) {
	if id.Kind != planner.JobAttempt {
		return
	}
	for i, wt := range d.waiting {
		if wt.Task == id.Task && wt.Iteration == id.Iteration && wt.Attempt == id.Attempt {
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
