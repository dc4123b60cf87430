package temporal

import (
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	tw "go.temporal.io/sdk/workflow"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
)

// The agent core in workflow code (issue 16, Deliver 1).
//
// An agent attempt does not run as one activity: the workflow arms it (AgentArmActivity: the
// fields, schema, tool universe and model, and the worker's max_parallel_tools), builds the
// agent core (verbs/agent/core, deterministic, no I/O) from the arming, and drives it as the
// local driver does (verbs/agent/driver.go), with each model request an activity
// (AgentAskActivity) and each tool call of a batch an activity (AgentCallActivity), at most
// max_parallel_tools of them in flight, started in request order and folded in request order
// whatever order they end in. The loop's canonical events are the attempt's Emitted, released
// with its report as a whole job's are. So a step once recorded is never carried out again:
// a worker lost mid-loop costs the one step it was running, which goes to another worker
// (heartbeat timeout, at most maxLost times), and a replay never re-bills a model request.
//
// What differs from a local agent: no live stream (text as it arrives, calls starting early
// while a reply streams); each request and result crosses the history, so one model request
// must stay under maxStepBytes (an agent whose transcript outgrows it fails with that said); an
// on_finally step's agent, bounded by its own timeout, still runs whole in one activity.
//
// Runs begun before this change ran the agent whole (their histories hold one JobActivity): they
// go on that way, behind workflow.GetVersion(agentCoreChange).
const agentCoreChange = "agent-core"

// maxStepBytes bounds one step activity's input: Temporal refuses a payload over 2 MiB.
const maxStepBytes = 3 << 19 // 1.5 MiB

// agentAttempt runs an agent attempt's loop in a coroutine of its own; its outcome ends a future
// that the driver takes as it takes a job's activity (settle).
func (d *driver) agentAttempt(j *call) {
	d.running[j.id] = j.cancel
	f, set := tw.NewFuture(d.loop)
	d.await(ended{job: j, f: f})
	tw.Go(d.loop, func(c tw.Context) {
		out, err := d.runAgent(c, j)
		set.Set(out, err)
	})
}

// agentRun is one agent attempt's loop in workflow code.
type agentRun struct {
	d        *driver
	j        *call
	c        tw.Context // the coroutine's
	in       JobInput   // the step activities' job: the attempt's, without its fields
	loop     *core.Loop
	par      int             // calls of a batch in flight at most
	universe map[string]bool // the arming's tool names
	emitted  []Emitted
}

// runAgent arms the attempt and drives its core to the end. Its error is only a whole job's
// (a worker whose agent verb does not run in steps): settle maps it as a JobActivity's.
func (d *driver) runAgent(c tw.Context, j *call) (JobOutcome, error) {
	var arm ArmOutcome
	if err := d.step(c, j.ctx, AgentArmActivity, j.in, &arm, j.id.String()+" arm"); err != nil {
		return JobOutcome{Err: wireError(stepError(j, "arming", err))}, nil
	}
	if arm.Whole {
		var out JobOutcome
		err := tw.ExecuteActivity(d.activityOptions(j.ctx, j.timeout, j.id.String()), JobActivity, j.in).Get(c, &out)
		return out, err
	}
	if arm.Err != nil {
		return JobOutcome{Err: arm.Err}, nil
	}
	if arm.Arming == nil {
		return JobOutcome{Err: wireError(spec.NewError("", "the agent's arming came back empty", nil))}, nil
	}
	loop, err := core.New(arm.Arming.core())
	if err != nil {
		return JobOutcome{Err: wireError(err)}, nil
	}
	a := &agentRun{d: d, j: j, c: c, in: j.in, loop: loop, par: max(1, arm.MaxParallel), universe: map[string]bool{}}
	a.in.Fields = Value{}
	for _, t := range arm.Arming.Universe {
		a.universe[t.Name] = true
	}
	return a.drive(), nil
}

// drive is the core's protocol (verbs/agent/core/doc.go) on Temporal's primitives.
func (a *agentRun) drive() JobOutcome {
	st := a.loop.Start()
	for {
		for _, e := range st.Events {
			if e.Wire != "" {
				a.emitted = append(a.emitted, Emitted{Kind: e.Wire, Fields: Value{e.Fields}})
			}
		}
		switch {
		case st.Done != nil:
			o := JobOutcome{Usage: st.Done.Usage, Emitted: a.emitted, Err: wireError(st.Done.Err)}
			if st.Done.Err == nil {
				o.Output = Value{st.Done.Output}
			}
			return o
		case st.Next:
			if a.j.ctx.Err() != nil { // a turn that never starts is not taken
				st = a.loop.Cancel(jobCancelled())
				continue
			}
			st = a.loop.Next()
		case st.Request != nil:
			st = a.ask(st.Request)
		case st.Batch != nil:
			st = a.batch(st.Batch)
		default:
			st = a.loop.Cancel(spec.NewError("", "agent core: a step with no action", nil))
		}
	}
}

// ask sends one model request as an activity and feeds its reply to the core.
func (a *agentRun) ask(r *core.Request) core.Step {
	in := AskInput{Job: a.in, Request: r.Request, Schema: Value{r.Request.Schema}}
	in.Request.Schema = nil
	if b, _ := json.Marshal(in); len(b) > maxStepBytes {
		return a.loop.Cancel(spec.NewError("", fmt.Sprintf("the model request of turn %d is %d bytes, more than a Temporal payload carries (%d): on Temporal an agent's transcript must stay under it; keep tool results smaller, or run the workflow locally", r.Turn, len(b), maxStepBytes),
			map[string]any{"turn": r.Turn, "bytes": len(b), "limit": maxStepBytes}))
	}
	var out AskOutcome
	summary := fmt.Sprintf("%s ask turn %d", a.j.id, r.Turn)
	if err := a.d.step(a.c, a.j.ctx, AgentAskActivity, in, &out, summary); err != nil {
		return a.loop.Cancel(stepError(a.j, "model request", err))
	}
	return a.loop.Replied(out.reply())
}

// called is one call's end, as its coroutine reports it.
type called struct {
	i   int
	out CallOutcome
	err error
}

// batch resolves a batch's calls, each its own activity: at most a.par in flight, started in
// request order, each in a coroutine that reports its end on one channel; the results go to
// the core in request order. As dispatch.Resolve does, a security-boundary refusal stops the
// batch (nothing more starts, the calls in flight are cancelled) and so does the job's
// cancellation, which the core then gets instead of the results.
func (a *agentRun) batch(b *core.Batch) core.Step {
	n := len(b.Calls)
	results := make([]core.Result, n)
	answered := make([]bool, n)
	bctx, stop := tw.WithCancel(a.j.ctx)
	defer stop()
	ends := tw.NewChannel(a.c)
	started, finished, stopped := 0, 0, false
	var failed *spec.Error // a call's activity failed: the attempt ends with it
	for {
		if !stopped && bctx.Err() == nil && started < n && started-finished < a.par {
			i := started
			started++
			c := b.Calls[i]
			in := CallInput{Job: a.in, Call: core.ToolCall{Turn: b.Turn, Index: i, Call: c, InUniverse: a.universe[c.Name]}}
			summary := fmt.Sprintf("%s call turn %d #%d %s", a.j.id, b.Turn, i, c.Name)
			tw.Go(a.c, func(cc tw.Context) {
				var out CallOutcome
				err := a.d.step(cc, bctx, AgentCallActivity, in, &out, summary)
				ends.Send(cc, called{i: i, out: out, err: err})
			})
			continue
		}
		if finished == started {
			break
		}
		var e called
		ends.Receive(a.c, &e)
		finished++
		switch {
		case e.err == nil:
			results[e.i], answered[e.i] = e.out.result(), true
			if err := results[e.i].Err; err != nil && (err.Code == spec.CodeSecPermits || err.Code == spec.CodeSecSSRF) {
				stopped = true // §6.5
				stop()
			}
		case bctx.Err() != nil || isCancelled(e.err):
		default:
			if failed == nil {
				failed = stepError(a.j, "tool call", e.err)
			}
			stopped = true
			stop()
		}
	}
	switch {
	case failed != nil:
		return a.loop.Cancel(failed)
	case a.j.ctx.Err() != nil:
		return a.loop.Cancel(jobCancelled())
	}
	for i := range results {
		if !answered[i] { // the batch was stopped: the core folds nothing of it
			results[i] = errResult(spec.NewError(spec.CodeCancel, "cancelled: the batch was stopped by a security-boundary refusal", nil))
		}
	}
	return a.loop.Resolved(results)
}

// step runs one step activity under parent and waits for its result in out, dispatching it
// again when its worker was lost (its heartbeat timed out) or it was interrupted (the worker
// stopped), at most maxLost times: the steps recorded before it are not carried out again.
func (d *driver) step(c, parent tw.Context, name string, in, out any, summary string) error {
	for lost := 0; ; lost++ {
		err := tw.ExecuteActivity(d.activityOptions(parent, 0, summary), name, in).Get(c, out)
		if err == nil || lost >= maxLost || parent.Err() != nil || !workerLost(err) {
			return err
		}
	}
}

// workerLost reports whether an activity's error says its worker went away before it ended:
// its heartbeat timed out, or it was interrupted (errInterrupted).
func workerLost(err error) bool {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT
	}
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == errInterrupted
}

// stepError is the attempt's error when a step activity failed: its cancellation, or an internal
// error that says which step failed.
func stepError(j *call, what string, err error) *spec.Error {
	if j.ctx.Err() != nil || isCancelled(err) {
		return jobCancelled()
	}
	return &spec.Error{Category: "internal_error", Message: fmt.Sprintf("the agent's %s activity failed: %v", what, err), Details: map[string]any{}}
}

// jobCancelled is the outcome of a job its run cancelled (the core decides what it means: the
// user's cancellation, a timeout, a fail-fast).
func jobCancelled() *spec.Error { return spec.NewError(spec.CodeCancel, "the job was cancelled", nil) }
