package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/verbs/internal/jsontext"
	"github.com/nikahq/nika/workflow"
)

// drive is the local driver of the core (package core's protocol): it releases each step's
// events, then carries out its action (a provider call, a batch resolved through dispatch, the
// next turn unless ctx is done) and reports the outcome back, until the core finishes. It reads
// only what the steps carry.
func (r *run) drive(ctx context.Context) *core.Finish {
	var past replay // an interrupted attempt's recorded steps (memo.go)
	if r.job.Memo != nil {
		past.steps = r.job.Memo.Recorded()
	}
	var pending *early // the early batch of the turn whose reply just came in
	st := r.loop.Start()
	for {
		r.release(st)
		switch {
		case st.Done != nil:
			return st.Done
		case st.Next:
			if ctx.Err() != nil { // a turn that never starts is not taken (agent_finished's Turns)
				st = r.loop.Cancel(fields.Cancelled(ctx, nil))
				continue
			}
			st = r.loop.Next()
		case st.Request != nil:
			r.turn = st.Request.Turn
			reply, replayed := past.reply()
			if !replayed { // a live turn streams; its calls may start early (overlap.go)
				pending = r.overlap(ctx, st.Request)
				reply = r.ask(ctx, st.Request.Request, pending)
			}
			r.recordReply(reply)
			st = r.loop.Replied(reply)
			if pending != nil && st.Batch == nil { // no batch: what started early is void
				pending.abort()
				pending = nil
			}
		case st.Batch != nil:
			e := pending
			pending = nil
			results, replayed := past.batch(len(st.Batch.Calls))
			if replayed && e != nil {
				e.abort()
			}
			if !replayed {
				var cancelled *spec.Error
				if results, cancelled = r.resolve(ctx, st.Batch, e); cancelled != nil {
					st = r.loop.Cancel(cancelled)
					continue
				}
			}
			r.recordBatch(results)
			st = r.loop.Resolved(results)
		default:
			st = r.loop.Cancel(spec.NewError("", "agent core: a step with no action", nil))
		}
	}
}

// release carries out a step's events, in order, and its live notes.
func (r *run) release(st core.Step) {
	for _, e := range st.Events {
		if e.Loop != "" && r.obs != nil {
			f := e.Fields
			if e.Wire != "" {
				f = maps.Clone(f) // the observer owns its copy; the canonical stream keeps the original
			}
			r.obs.OnEvent(Event{Kind: e.Loop, Turn: e.Turn, Fields: f})
		}
		if e.Wire != "" && r.job.Emit != nil {
			r.job.Emit(e.Wire, e.Fields)
		}
	}
	for _, n := range st.Live {
		r.live(n)
	}
}

// live reports to the live stream (D19), never to the canonical one. It is called from the
// driver's goroutine only (the dispatch progress hook runs there too).
func (r *run) live(n workflow.LiveNote) {
	if r.job.Live != nil {
		n.Turn = r.turn
		r.job.Live(n)
	}
}

// ask sends one request; a failure that is the context's cancellation becomes the cancellation
// outcome. The reply streams when someone watches the live stream (agent_text shows the text
// arriving) or e, the turn's early batch, starts its calls as they are announced; otherwise it is
// asked for as a batch of one.
func (r *run) ask(ctx context.Context, req provider.Request, e *early) core.Reply {
	start := time.Now()
	var text *liveText
	if r.job.Live != nil {
		text = &liveText{r: r}
	}
	var o provider.Outcome
	if text == nil && e == nil {
		o = complete(ctx, r.prov, []provider.Request{req})[0]
	} else {
		o = stream(ctx, r.prov, req, streamObserver(text, e))
	}
	if r.job.Live != nil {
		if o.Response != nil {
			text.final(provider.Text(o.Response.Message))
		}
		grp, _, _ := provider.SplitModel(req.Model)
		n := workflow.LiveNote{Kind: event.LiveProviderRequest, Provider: grp, Model: req.Model, Outcome: "ok", Elapsed: time.Since(start)}
		if o.Err != nil {
			n.Outcome, n.Code, n.IsError = provider.OutcomeOf(o.Err), o.Err.Code, true
			n.RateLimited = provider.ReasonOf(o.Err) == provider.ReasonRateLimited
		} else if o.Response != nil {
			n.InputTokens, n.OutputTokens = o.Response.Usage.InputTokens, o.Response.Usage.OutputTokens
		}
		r.live(n)
	}
	if o.Err != nil && ctx.Err() != nil && (provider.ReasonOf(o.Err) == provider.ReasonCancelled || o.Err.Code == "") {
		return core.Reply{Err: fields.Cancelled(ctx, o.Err)}
	}
	return core.Reply{Response: o.Response, Err: o.Err}
}

// streamObserver is what a streamed request tells: text to the live stream, calls to the early
// batch, and a restart to both (what they heard is void).
func streamObserver(text *liveText, e *early) *provider.StreamObserver {
	obs := &provider.StreamObserver{}
	if text != nil {
		obs.OnText = text.add
	}
	if e != nil {
		obs.OnToolCall = e.announce
	}
	obs.OnRestart = func(int, *spec.Error) {
		if text != nil {
			text.restart()
		}
		if e != nil {
			e.reset()
		}
	}
	return obs
}

// stream calls provider.Stream, holding the provider to its contract: no panic.
func stream(ctx context.Context, p provider.Provider, req provider.Request, obs *provider.StreamObserver) (out provider.Outcome) {
	defer func() {
		if rec := recover(); rec != nil {
			out = provider.Outcome{Err: spec.NewError("", fmt.Sprintf("the provider panicked: %v", rec), nil)}
		}
	}()
	return provider.Stream(ctx, p, req, obs)
}

// complete calls the provider, holding it to its contract: one outcome per request, no panic.
func complete(ctx context.Context, p provider.Provider, reqs []provider.Request) (out []provider.Outcome) {
	defer func() {
		if rec := recover(); rec != nil {
			out = []provider.Outcome{{Err: spec.NewError("", fmt.Sprintf("the provider panicked: %v", rec), nil)}}
		}
	}()
	out = p.Complete(ctx, reqs)
	if len(out) != len(reqs) {
		return []provider.Outcome{{Err: spec.NewError("", fmt.Sprintf("the provider returned %d outcomes for %d requests", len(out), len(reqs)), nil)}}
	}
	return out
}

// resolve is phase 1 (dispatch.Resolve) of a batch, with each call's own events buffered until
// the fold, and the spill of §4.4 applied to a batch the core will fold. e, when not nil, is the
// turn's early batch: its results are the batch's when it announced exactly these calls. A done
// ctx returns the cancellation outcome instead.
func (r *run) resolve(ctx context.Context, b *core.Batch, e *early) ([]core.Result, *spec.Error) {
	if e != nil {
		r.live(workflow.LiveNote{Kind: event.LiveBatchDispatched, Size: len(b.Calls)})
		if res, bufs, ok := e.collect(ctx, b); ok {
			return r.results(ctx, res, bufs)
		}
	}
	calls := make([]dispatch.Call, len(b.Calls))
	for i, c := range b.Calls {
		calls[i] = dispatch.Call{Index: i, ID: c.ID, Name: c.Name, Args: c.Args}
	}
	cfg := dispatch.Config{MaxParallel: r.v.Config.MaxParallelTools, CallTimeout: r.v.Config.ToolTimeout}
	bufs := make([]*emitBuf, len(calls))
	for i := range bufs {
		bufs[i] = &emitBuf{}
	}
	exec := func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		return r.execute(ctx, c, b.Turn, bufs[c.Index].emit)
	}
	if e == nil {
		r.live(workflow.LiveNote{Kind: event.LiveBatchDispatched, Size: len(calls)})
	}
	res := dispatch.Resolve(ctx, cfg, dispatch.ExecutorFunc(exec), calls, liveProgress{r})
	return r.results(ctx, res, bufs)
}

// results turns a resolved batch into the core's results: each call's buffered events, and the
// spill of a batch the core will fold. A done ctx returns the cancellation outcome instead.
func (r *run) results(ctx context.Context, res []dispatch.Result, bufs []*emitBuf) ([]core.Result, *spec.Error) {
	out := make([]core.Result, len(res))
	for i, b := range bufs {
		out[i] = core.Result{Content: res[i].Content, Err: res[i].Err, Events: b.close()}
	}
	if ctx.Err() != nil {
		return nil, fields.Cancelled(ctx, nil)
	}
	if dispatch.Stopped(res) >= 0 {
		return out, nil // the core fails the run on the refusal and folds nothing: nothing to spill
	}
	for i := range out {
		if fed := r.spill(ctx, out[i].Content); fed != out[i].Content {
			out[i].Spilled = fed
		}
	}
	return out, nil
}

// execute is the phase-1 executor: nika:compose is checked here (never run), builtins go to
// Builtins.Execute with the job's permits, run directory and emitter, and mcp: tools to the
// run's tool source.
func (r *run) execute(ctx context.Context, c dispatch.Call, turn int, emit func(string, map[string]any)) (string, json.RawMessage, error) {
	if c.Name == router.NameCompose {
		b := core.Compose(c.Args)
		return string(b), b, nil
	}
	_, known := r.byName[c.Name]
	if known && r.v.exec != nil {
		return r.v.exec(ctx, c)
	}
	viaMCP := strings.HasPrefix(c.Name, "mcp:") && r.v.Tools != nil
	if !known || !viaMCP && (!strings.HasPrefix(c.Name, "nika:") || r.v.Builtins == nil) {
		return "", nil, spec.NewError(CodeUnknown, "unknown tool "+c.Name, map[string]any{"tool": c.Name})
	}
	args, err := callArgs(c)
	if err != nil {
		return "", nil, err
	}
	var out any
	var xerr error
	if viaMCP {
		// The source checks the arguments against the tool's input schema and maps its result
		// as invoke does (LANGUAGE.md §5.3); the loop has already applied the whitelist and
		// permits.tools.
		out, xerr = r.callMCP(ctx, c, turn, args)
	} else {
		out, xerr = r.v.Builtins.Execute(ctx, tools.Call{Name: c.Name, Args: args, Permits: r.job.Permits, RunDir: r.job.RunDir, Emit: emit,
			Workflow: r.job.Workflow, Task: taskID(r.job), Inspect: r.job.Inspect})
	}
	if xerr != nil {
		return "", nil, xerr
	}
	b, merr := canon.Marshal(out)
	if merr != nil {
		return "", nil, spec.NewError(dispatch.CodeInvokeFailed, fmt.Sprintf("%s returned a value with no JSON encoding: %v", c.Name, merr), map[string]any{"tool": c.Name})
	}
	if s, ok := out.(string); ok {
		return s, b, nil
	}
	return string(b), b, nil
}

// callArgs decodes a call's arguments: a JSON object, or none.
func callArgs(c dispatch.Call) (map[string]any, *spec.Error) {
	if len(c.Args) == 0 {
		return map[string]any{}, nil
	}
	v, err := jsontext.Decode(string(c.Args))
	if err != nil {
		return nil, spec.NewError(CodeArgs, fmt.Sprintf("the arguments of %s are not valid JSON: %v", c.Name, err), map[string]any{"tool": c.Name})
	}
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, spec.NewError(CodeArgs, fmt.Sprintf("the arguments of %s must be an object", c.Name), map[string]any{"tool": c.Name})
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// liveProgress is dispatch's progress hook (AGENT.md §6.7): calls starting and finishing in real
// order, to the live stream only, with each call's index in its batch.
type liveProgress struct{ r *run }

func (p liveProgress) CallStarted(c dispatch.Call) {
	p.r.live(workflow.LiveNote{Kind: event.LiveToolCallStarted, Tool: c.Name, Index: c.Index})
}

func (p liveProgress) CallFinished(res dispatch.Result) {
	n := workflow.LiveNote{Kind: event.LiveToolCallFinished, Tool: res.Call.Name, Index: res.Call.Index, Outcome: "ok", Elapsed: res.Elapsed}
	if res.Err != nil {
		n.Outcome, n.Code, n.IsError = res.Err.Code, res.Err.Code, true
	}
	p.r.live(n)
}

// emitBuf holds one call's builtin events until the fold releases them on the driver's
// goroutine; a call abandoned by its timeout finds the buffer closed and its late events are
// dropped.
type emitBuf struct {
	mu     sync.Mutex
	closed bool
	evs    []core.Emitted
}

func (b *emitBuf) emit(kind string, f map[string]any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.evs = append(b.evs, core.Emitted{Kind: kind, Fields: f})
	}
}

func (b *emitBuf) close() []core.Emitted {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.evs
}

// taskID is the id of the job's task, "" when the job carries none.
func taskID(job workflow.Job) string {
	if job.Task == nil {
		return ""
	}
	return job.Task.ID
}

// cutText cuts s to at most n bytes at a rune boundary, marking the cut with "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
