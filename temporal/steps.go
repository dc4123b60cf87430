package temporal

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/workflow"
)

// Names of the agent core's step activities (agent.go).
const (
	AgentArmActivity  = "nika.agent.arm"
	AgentAskActivity  = "nika.agent.ask"
	AgentCallActivity = "nika.agent.call"
)

// AgentSteps is an agent verb whose loop another driver runs: it arms a job, sends one model
// request, resolves one tool call, and says how many of a batch's calls may be in flight. The
// engine's agent verb (verbs/agent's Verb) is one; a worker whose "agent" verb is not runs each
// agent job whole, as one JobActivity.
type AgentSteps interface {
	Arm(ctx context.Context, job workflow.Job) (core.Arming, *spec.Error)
	MaxParallelTools() int
	Ask(ctx context.Context, job workflow.Job, req provider.Request) core.Reply
	Call(ctx context.Context, job workflow.Job, tc core.ToolCall) core.Result
}

func (a *Activities) agentSteps() AgentSteps {
	s, _ := a.Verbs["agent"].(AgentSteps)
	return s
}

// ArmAgent arms an agent job (AGENT.md §3: its fields, schema, tool universe and model): the
// plain data the workflow builds the agent core from, and the worker's max_parallel_tools, which
// the history then holds, so every replay schedules the batches alike.
func (a *Activities) ArmAgent(ctx context.Context, in JobInput) (out ArmOutcome, _ error) {
	s := a.agentSteps()
	if s == nil {
		return ArmOutcome{Whole: true}, nil
	}
	defer beat(ctx, a.Heartbeat, func() { heartbeat(ctx) })()
	defer func() {
		if r := recover(); r != nil {
			out = ArmOutcome{Err: wireError(panicError("arming the agent", r))}
		}
	}()
	arming, err := s.Arm(ctx, in.job())
	if err := interrupted(ctx); err != nil {
		return ArmOutcome{}, err
	}
	if err != nil {
		return ArmOutcome{Err: wireError(err)}, nil
	}
	return ArmOutcome{Arming: &Arming{Arming: arming, Schema: Value{arming.Schema}}, MaxParallel: max(1, s.MaxParallelTools())}, nil
}

// AskAgent sends one model request of an agent's loop and returns its reply; a provider's
// failure is the reply's error, never the activity's.
func (a *Activities) AskAgent(ctx context.Context, in AskInput) (out AskOutcome, _ error) {
	s := a.agentSteps()
	if s == nil {
		return AskOutcome{Err: wireError(noSteps())}, nil
	}
	defer beat(ctx, a.Heartbeat, func() { heartbeat(ctx) })()
	defer func() {
		if r := recover(); r != nil {
			out = AskOutcome{Err: wireError(panicError("the model request", r))}
		}
	}()
	req := in.Request
	req.Schema = in.Schema.V
	req.Tools = toolDefs(req.Tools)
	r := s.Ask(ctx, in.Job.job(), req)
	if err := interrupted(ctx); err != nil {
		return AskOutcome{}, err
	}
	out = AskOutcome{Response: r.Response, Err: wireError(r.Err)}
	return out, fits(out, "the model's reply")
}

// CallAgent resolves one tool call of an agent's batch: its content, its error as an is_error
// result, and the events it emitted, which the workflow folds in request order.
func (a *Activities) CallAgent(ctx context.Context, in CallInput) (out CallOutcome, _ error) {
	s := a.agentSteps()
	if s == nil {
		return callOutcome(errResult(noSteps())), nil
	}
	defer beat(ctx, a.Heartbeat, func() { heartbeat(ctx) })()
	defer func() {
		if r := recover(); r != nil {
			out = callOutcome(errResult(panicError("tool "+in.Call.Call.Name, r)))
		}
	}()
	r := s.Call(ctx, in.Job.job(), in.Call)
	if err := interrupted(ctx); err != nil {
		return CallOutcome{}, err
	}
	out = callOutcome(r)
	return out, fits(out, "the result of "+in.Call.Call.Name)
}

// Application error types of the step activities.
const (
	// errInterrupted: the step's context ended, but not because the workflow cancelled it (the
	// worker is stopping, or Temporal paused the activity). Its result is no answer: the
	// workflow carries the step out again, as after a lost worker.
	errInterrupted = "nika.interrupted"
	errTooLarge    = "nika.too-large" // the step's result is more than a payload carries
)

// interrupted is errInterrupted when ctx ended for another reason than the workflow's
// cancellation (whose cause the SDK makes a CanceledError), nil otherwise.
func interrupted(ctx context.Context) error {
	if ctx.Err() == nil || temporal.IsCanceledError(context.Cause(ctx)) {
		return nil
	}
	return temporal.NewApplicationError(fmt.Sprintf("the step was interrupted: %v", context.Cause(ctx)), errInterrupted)
}

// fits is errTooLarge when out is more than maxStepBytes of JSON: Temporal would refuse the
// payload, so the attempt fails saying so instead.
func fits(out any, what string) error {
	b, err := json.Marshal(out)
	if err != nil || len(b) <= maxStepBytes {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s is %d bytes, more than a Temporal payload carries (%d): on Temporal a tool result or a reply must stay under it; ask for less (a tool's max_bytes, say), or run the workflow locally", what, len(b), maxStepBytes),
		errTooLarge, nil)
}

// noSteps is the error of a step sent to a worker whose agent verb does not run in steps
// (workers of one task queue are built alike, so only a misconfigured deployment sees it).
func noSteps() *spec.Error {
	return spec.NewError("", "this worker's agent verb cannot run an agent's steps; every worker of a task queue must be built alike", nil)
}

// errResult is a call's failure as the model is fed it (AGENT.md §6.4).
func errResult(e *spec.Error) core.Result {
	return core.Result{Content: fmt.Sprintf("%s · %s", e.Code, e.Message), Err: e}
}

func heartbeat(ctx context.Context) { activity.RecordHeartbeat(ctx) }
