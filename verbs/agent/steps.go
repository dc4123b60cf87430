package agent

import (
	"context"
	"encoding/json"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/workflow"
)

// Steps for a driver that runs the core elsewhere (the Temporal workflow, temporal/agent.go): it
// arms once (Arm), builds the core.Loop from the arming itself, and carries each Request out
// with Ask and each call of a Batch with Call, folding the results in request order. Nothing of
// the local driver's live stream, observer, memo or overlapped dispatch takes part.

// Arm is AGENT.md §3 for job, as Run arms it (fields, schema, tool universe with its MCP
// listing, model): the plain data core.New takes. Its error is the job's outcome.
func (v *Verb) Arm(ctx context.Context, job workflow.Job) (core.Arming, *spec.Error) {
	r, err := v.arm(ctx, job)
	if err != nil {
		return core.Arming{}, err
	}
	return r.arming, nil
}

// MaxParallelTools is the number of a batch's calls in flight at once (Config.MaxParallelTools,
// 0 → dispatch.DefaultMaxParallel), before it is bounded by the batch's size.
func (v *Verb) MaxParallelTools() int {
	return dispatch.Config{MaxParallel: v.Config.MaxParallelTools}.Effective(dispatch.MaxMaxParallel)
}

// Ask sends one model request of job's loop (a core Step's Request) as a batch of one, as the
// local driver does when nobody watches the live stream; a failure that is ctx's cancellation
// is NIKA-CANCEL-001.
func (v *Verb) Ask(ctx context.Context, job workflow.Job, req provider.Request) core.Reply {
	if v.Providers == nil {
		return core.Reply{Err: apiErr("model", "no model providers are configured")}
	}
	p, ferr := v.Providers.For(job.Model)
	if ferr != nil {
		return core.Reply{Err: paramErr("model", "%s", ferr.Message)}
	}
	job.Live = nil
	r := &run{v: v, job: job, prov: p}
	return r.ask(ctx, req, nil)
}

// Call resolves one tool call of job's loop as the local driver resolves each call of a batch:
// the task's permits, Config.ToolTimeout, a panic or an error as an is_error result, the call's
// own events (nika:log, nika:emit) in Result.Events, and the spill of §4.4 unless the result is a
// security-boundary refusal (which stops the batch: the core folds nothing of it). A done ctx
// gives the cancellation result dispatch gives.
func (v *Verb) Call(ctx context.Context, job workflow.Job, tc core.ToolCall) core.Result {
	job.Live = nil
	r := &run{v: v, job: job, byName: map[string]provider.ToolDef{}}
	if tc.InUniverse {
		r.byName[tc.Call.Name] = provider.ToolDef{Name: tc.Call.Name}
	}
	buf := &emitBuf{}
	exec := func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		return r.execute(ctx, c, tc.Turn, buf.emit)
	}
	cfg := dispatch.Config{MaxParallel: 1, CallTimeout: v.Config.ToolTimeout}
	calls := []dispatch.Call{{Index: tc.Index, ID: tc.Call.ID, Name: tc.Call.Name, Args: tc.Call.Args}}
	res := dispatch.Resolve(ctx, cfg, dispatch.ExecutorFunc(exec), calls, nil)[0]
	out := core.Result{Content: res.Content, Err: res.Err, Events: buf.close()}
	if !res.Boundary() {
		if fed := r.spill(ctx, out.Content); fed != out.Content {
			out.Spilled = fed
		}
	}
	return out
}
