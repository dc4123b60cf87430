package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nikahq/nika/verbs/internal/jsontext"
	"strings"
	"sync"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// loop is the per-turn loop of AGENT.md §5.1.
func (r *run) loop(ctx context.Context) (any, *spec.Error) {
	r.msgs = []provider.Message{provider.UserText(r.prompt)}
	for t := 1; ; t++ {
		if ctx.Err() != nil { // before r.turn: a turn that never starts is not taken (agent_finished's Turns)
			return nil, fields.Cancelled(ctx, nil)
		}
		r.turn = t
		r.observe(EventTurnStarted, t, map[string]any{"turn": t})
		offered := r.rt.Select(t, router.Query(r.prompt, r.lastText, r.digest))
		sel := router.Tally(t, offered, r.rt.Universe())
		r.emitBoth(event.AgentToolsSelected, EventToolsSelected, t, map[string]any{"turn": sel.Turn, "offered": sel.Offered, "universe": sel.Universe,
			"builtin": sel.Builtin, "mcp": sel.MCP, "other": sel.Other})
		// Admitted: the whitelist decides, not the offered set (§5.2 b), so a call to a tool the
		// router left out this turn still maps back from its wire name.
		req := provider.Request{Model: r.job.Model, System: r.system, Messages: snapshot(r.msgs), Temperature: r.temp,
			ToolChoice: provider.ChoiceNone, Admitted: r.names}
		if len(offered) > 0 {
			req.ToolChoice = provider.ChoiceAuto
			req.Tools = make([]provider.ToolDef, len(offered))
			for i, n := range offered {
				req.Tools[i] = r.byName[n]
			}
		}
		resp, err := r.ask(ctx, req)
		if err != nil {
			return nil, err
		}
		var budget any
		if r.maxTok > 0 {
			budget = r.maxTok
		}
		r.emitBoth(event.AgentBudgetCheckpoint, EventBudgetCheckpoint, t, map[string]any{"turn": t, "total_tokens": r.total, "budget": budget})

		asst := resp.Message
		asst.Role = provider.RoleAssistant
		if txt := lastAssistantText(asst); txt != "" {
			r.lastText = txt
		}
		var uses []provider.Block
		for _, b := range asst.Blocks {
			if b.Type == provider.BlockToolUse {
				uses = append(uses, b)
			}
		}
		// a: a final prose answer.
		if len(uses) == 0 {
			r.msgs = append(r.msgs, asst)
			if r.sch == nil {
				return r.lastTextOf(asst), nil
			}
			return r.finalize(ctx, r.lastTextOf(asst))
		}
		// b: whitelist and clean names.
		for _, b := range uses {
			if !clean(b.Name) || !r.admitted(b.Name) {
				tool := redact(b.Name)
				return nil, spec.NewError(CodeWhitelist, fmt.Sprintf("the model called %q, which this task's tools do not admit", tool), map[string]any{"tool": tool})
			}
		}
		// c: explicit completion.
		for _, b := range uses {
			if b.Name == router.NameDone {
				r.msgs = append(r.msgs, asst)
				return r.done(ctx, b.Input)
			}
		}
		// d: token budget.
		if r.maxTok > 0 && r.total >= r.maxTok {
			return nil, spec.NewError(CodeMaxTokens, fmt.Sprintf("max_tokens_total reached: %d tokens used (limit %d)", r.total, r.maxTok),
				map[string]any{"total_tokens": r.total, "max_tokens_total": r.maxTok, "partial_output": r.lastText})
		}
		// e: turn budget.
		if t >= r.maxTurns {
			msg := fmt.Sprintf("max_turns exhausted after %d turns (limit %d, set by this task)", t, r.maxTurns)
			if r.blame == "contract" {
				msg = fmt.Sprintf("max_turns exhausted after %d turns (limit %d is the default; set max_turns on the task to raise it)", t, r.maxTurns)
			}
			return nil, spec.NewError(CodeMaxTurns, msg, map[string]any{"turns": t, "max_turns": r.maxTurns, "blame": r.blame, "partial_output": r.lastText})
		}
		// Dispatch.
		r.msgs = append(r.msgs, asst)
		if err := r.dispatch(ctx, t, uses); err != nil {
			return nil, err
		}
	}
}

// lastTextOf is the output of a prose answer: the §5.5 last assistant text.
func (r *run) lastTextOf(asst provider.Message) string {
	if txt := lastAssistantText(asst); txt != "" {
		return txt
	}
	return r.lastText
}

// redact removes control characters and cuts to 64 characters (§5.2 b).
func redact(name string) string {
	s := strings.Map(func(c rune) rune {
		if c < 0x20 || (c >= 0x7f && c < 0xa0) {
			return -1
		}
		return c
	}, name)
	return router.CutChars(s, 64)
}

// dispatch runs phase 1 (dispatch.Resolve) and phase 2 (the fold in request order, §6.3).
func (r *run) dispatch(ctx context.Context, t int, uses []provider.Block) *spec.Error {
	calls := make([]dispatch.Call, len(uses))
	for i, b := range uses {
		calls[i] = dispatch.Call{Index: i, ID: b.ID, Name: b.Name, Args: b.Input}
	}
	cfg := dispatch.Config{MaxParallel: r.v.Config.MaxParallelTools, CallTimeout: r.v.Config.ToolTimeout}
	bufs := make([]*emitBuf, len(calls))
	for i := range bufs {
		bufs[i] = &emitBuf{}
	}
	exec := func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		return r.execute(ctx, c, t, bufs[c.Index].emit)
	}
	r.live(workflow.LiveNote{Kind: event.LiveBatchDispatched, Size: len(calls)})
	results := dispatch.Resolve(ctx, cfg, dispatch.ExecutorFunc(exec), calls, liveProgress{r})
	evs := make([][]bufEvent, len(bufs))
	for i, b := range bufs {
		evs[i] = b.close()
	}
	if ctx.Err() != nil {
		return fields.Cancelled(ctx, nil)
	}
	if i := dispatch.Stopped(results); i >= 0 {
		e := results[i].Err
		stop := spec.NewError(e.Code, e.Message, map[string]any{"tool": calls[i].Name, "call_id": calls[i].ID}).Wrap(e)
		return stop
	}
	user := provider.Message{Role: provider.RoleUser}
	gcalls := make([]guard.Call, len(results))
	obs := make([]guard.Observation, len(results))
	real, realErr := 0, 0
	var digest []string
	dlen := 0
	for i, res := range results {
		name := calls[i].Name
		isErr := res.IsError()
		for _, e := range evs[i] { // a builtin's own events (nika:log, nika:emit), in request order
			r.emit(e.kind, e.fields)
		}
		if name == router.NameCompose {
			valid, violations := composeVerdict(res)
			isErr = !valid
			r.emitBoth(event.AgentComposeChecked, EventComposeChecked, t, map[string]any{"turn": t, "valid": valid, "violations": violations})
		} else {
			real++
			if isErr {
				realErr++
			}
			f := map[string]any{"tool": name, "is_error": isErr, "turn": t, "index": i}
			if res.Err != nil && res.Err.Code != "" {
				f["code"] = res.Err.Code
			}
			r.emit(event.ToolInvoked, f)
			r.observe(EventToolCompleted, t, map[string]any{"turn": t, "name": name, "is_error": isErr})
		}
		gcalls[i] = guard.Call{Name: name, Args: calls[i].Args}
		obs[i] = guard.Observation{Content: res.Content, IsError: isErr}
		r.rt.Record(t, name)
		fed := r.spill(ctx, res.Content)
		user.Blocks = append(user.Blocks, provider.ToolResultBlock(calls[i].ID, fed, isErr))
		if dlen < digestMax {
			part := router.CutChars(fed, digestPart)
			digest = append(digest, part)
			dlen += len([]rune(part)) + 1
		}
	}
	r.digest = router.CutChars(strings.Join(digest, " "), digestMax)
	v := r.gd.Observe(guard.Sign(gcalls, obs), real > 0 && realErr == real)
	switch v.Kind {
	case guard.Nudge:
		if ev, ok := v.NudgeEvent(t); ok {
			r.emitBoth(event.AgentNudge, EventNudged, t, map[string]any{"turn": ev.Turn, "reason": string(ev.Reason), "period": ev.Period})
			r.live(workflow.LiveNote{Kind: event.LiveAgentNudge, Code: string(ev.Reason), Outcome: string(ev.Reason), Reason: string(ev.Reason)})
		}
		user.Blocks = append(user.Blocks, provider.TextBlock(v.Text))
	case guard.Stalled:
		if ev, ok := v.StalledEvent(t); ok {
			r.emitBoth(event.AgentStalled, EventStalled, t, map[string]any{"turn": ev.Turn, "period": ev.Period, "repeats": ev.Repeats})
			r.live(workflow.LiveNote{Kind: event.LiveAgentStalled, Code: CodeStalled, Outcome: string(guard.ReasonRepeatedActions), Reason: string(guard.ReasonRepeatedActions), IsError: true})
		}
		d := v.StallDetails()
		return spec.NewError(CodeStalled, v.StallMessage(), map[string]any{"period": d.Period, "repeats": d.Repeats, "partial_output": r.lastText})
	}
	r.msgs = append(r.msgs, user)
	return nil
}

// execute is the phase-1 executor: nika:compose is checked here (never run), builtins go to
// Builtins.Execute with the job's permits, run directory and emitter, and mcp: tools to the
// run's tool source.
func (r *run) execute(ctx context.Context, c dispatch.Call, turn int, emit func(string, map[string]any)) (string, json.RawMessage, error) {
	if c.Name == router.NameCompose {
		b := compose(c.Args)
		return string(b), b, nil
	}
	if _, ok := r.byName[c.Name]; ok && r.v.exec != nil {
		return r.v.exec(ctx, c)
	}
	_, known := r.byName[c.Name]
	viaMCP := strings.HasPrefix(c.Name, "mcp:") && r.v.Tools != nil
	if !known || !viaMCP && (!strings.HasPrefix(c.Name, "nika:") || r.v.Builtins == nil) {
		return "", nil, spec.NewError(CodeUnknown, "unknown tool "+c.Name, map[string]any{"tool": c.Name})
	}
	var args map[string]any
	if len(c.Args) > 0 {
		v, err := jsontext.Decode(string(c.Args))
		if err != nil {
			return "", nil, spec.NewError(CodeArgs, fmt.Sprintf("the arguments of %s are not valid JSON: %v", c.Name, err), map[string]any{"tool": c.Name})
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return "", nil, spec.NewError(CodeArgs, fmt.Sprintf("the arguments of %s must be an object", c.Name), map[string]any{"tool": c.Name})
		}
		args = m
	}
	if args == nil {
		args = map[string]any{}
	}
	var out any
	var err error
	if viaMCP {
		// The source checks the arguments against the tool's input schema and maps its result
		// as invoke does (LANGUAGE.md §5.3); the loop has already applied the whitelist and
		// permits.tools.
		out, err = r.callMCP(ctx, c, turn, args)
	} else {
		out, err = r.v.Builtins.Execute(ctx, tools.Call{Name: c.Name, Args: args, Permits: r.job.Permits, RunDir: r.job.RunDir, Emit: emit,
			Workflow: r.job.Workflow, Task: taskID(r.job), Inspect: r.job.Inspect})
	}
	if err != nil {
		return "", nil, err
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

type bufEvent struct {
	kind   string
	fields map[string]any
}

// emitBuf holds one call's builtin events until the fold replays them on the loop goroutine; a
// call abandoned by its timeout finds the buffer closed and its late events are dropped.
type emitBuf struct {
	mu     sync.Mutex
	closed bool
	evs    []bufEvent
}

func (b *emitBuf) emit(kind string, f map[string]any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.evs = append(b.evs, bufEvent{kind, f})
	}
}

func (b *emitBuf) close() []bufEvent {
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
