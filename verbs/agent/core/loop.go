package core

import (
	"fmt"
	"strings"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// phase is where the loop stands between two inputs.
type phase uint8

const (
	phaseNew      phase = iota // Start not called yet
	phaseIdle                  // between turns: Next starts one
	phaseAsking                // a turn's request is out
	phaseBatch                 // a batch is out
	phaseReasking              // a schema re-ask is out
	phaseDone
)

// Loop is the state of one attempt of an agent job. Build it with New; drive it as the package
// doc says. It is not safe for concurrent use.
type Loop struct {
	a      Arming
	sch    *schema.Schema
	names  []string // the canonical names of the universe, in its order (Request.Admitted)
	byName map[string]provider.ToolDef
	rt     *router.Router
	gd     *guard.Guard

	ph       phase
	turn     int
	msgs     []provider.Message
	usage    []workflow.Usage
	total    int
	lastText string
	digest   string
	pending  []Call // the batch out
	reasks   int    // re-asks sent
	detail   string // the last validation failure, while finalizing
	reaskSch string // the schema text of the re-asks
	fin      *Finish
}

// New builds the loop of one attempt: the schema compiled, the router over the frozen universe
// and a fresh guard (§3 step 7). Its only error is a schema that does not compile.
func New(a Arming) (*Loop, *spec.Error) {
	l := &Loop{a: a, byName: make(map[string]provider.ToolDef, len(a.Universe))}
	if a.Schema != nil {
		sch, err := CompileSchema(a.Schema)
		if err != nil {
			return nil, err
		}
		l.sch = sch
	}
	l.names = make([]string, len(a.Universe))
	defs := make([]router.Def, len(a.Universe))
	for i, d := range a.Universe {
		l.names[i] = d.Name
		l.byName[d.Name] = d
		defs[i] = router.Def{Name: d.Name, Description: d.Description}
	}
	l.rt = router.New(a.Router, defs)
	l.gd = guard.New(a.Guard)
	return l, nil
}

// Start releases run_started (§3 step 8) and asks for the first turn.
func (l *Loop) Start() Step {
	if l.ph != phaseNew {
		return l.outOfProtocol("Start")
	}
	l.ph = phaseIdle
	l.msgs = []provider.Message{provider.UserText(l.a.Prompt)}
	return Step{Next: true, Events: []Event{{Loop: EventRunStarted,
		Fields: map[string]any{"model": l.a.Model, "universe": l.rt.Universe(), "routed": l.rt.Routed()}}}}
}

// Next starts the next turn (§5.1 steps 1–3): turn_started, the router's selection and its
// tools_selected, then the turn's request.
func (l *Loop) Next() Step {
	if l.ph != phaseIdle {
		return l.outOfProtocol("Next")
	}
	l.turn++
	t := l.turn
	var st Step
	st.event("", EventTurnStarted, t, map[string]any{"turn": t})
	offered := l.rt.Select(t, router.Query(l.a.Prompt, l.lastText, l.digest))
	sel := router.Tally(t, offered, l.rt.Universe())
	st.event(event.AgentToolsSelected, EventToolsSelected, t, map[string]any{"turn": sel.Turn, "offered": sel.Offered,
		"universe": sel.Universe, "builtin": sel.Builtin, "mcp": sel.MCP, "other": sel.Other})
	// Admitted: the whitelist decides, not the offered set (§5.2 b), so a call to a tool the
	// router left out this turn still maps back from its wire name.
	req := provider.Request{Model: l.a.Model, System: l.a.System, Messages: l.snapshot(), Temperature: l.a.Temperature,
		ToolChoice: provider.ChoiceNone, Admitted: l.names}
	if len(offered) > 0 {
		req.ToolChoice = provider.ChoiceAuto
		req.Tools = make([]provider.ToolDef, len(offered))
		for i, n := range offered {
			req.Tools[i] = l.byName[n]
		}
	}
	l.ph = phaseAsking
	st.Request = &Request{Turn: t, Request: req}
	return st
}

// Replied reports the outcome of the request out: usage accounting and infer_completed, then for
// a turn its budget_checkpoint and classification (§5.1 steps 4–6, §5.2), for a re-ask the check
// of §5.4.
func (l *Loop) Replied(r Reply) Step {
	if l.ph != phaseAsking && l.ph != phaseReasking {
		return l.outOfProtocol("Replied")
	}
	var st Step
	switch {
	case r.Err != nil:
		return l.finish(st, nil, r.Err)
	case r.Response == nil:
		return l.finish(st, nil, spec.NewError("", "the provider returned an outcome with neither a response nor an error", nil))
	}
	u := r.Response.Usage
	l.usage = append(l.usage, workflow.Usage{Model: l.a.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		Reported: u.Reported, Turn: l.turn, Emitted: true})
	// D18's infer_completed, released here so the trace reads in the order things happened: the
	// turn's tool selection, its request, then its tool calls.
	st.event(event.InferCompleted, "", 0, map[string]any{"model": l.a.Model, "input_tokens": u.InputTokens,
		"output_tokens": u.OutputTokens, "usage_reported": u.Reported, "turn": l.turn})
	l.total += u.InputTokens + u.OutputTokens
	asst := r.Response.Message
	asst.Role = provider.RoleAssistant
	if l.ph == phaseReasking {
		return l.reasked(st, asst)
	}
	var budget any
	if l.a.MaxTokens > 0 {
		budget = l.a.MaxTokens
	}
	st.event(event.AgentBudgetCheckpoint, EventBudgetCheckpoint, l.turn, map[string]any{"turn": l.turn, "total_tokens": l.total, "budget": budget})
	return l.classify(st, asst)
}

// classify is §5.2: the fixed order, first match wins.
func (l *Loop) classify(st Step, asst provider.Message) Step {
	t := l.turn
	if txt := lastAssistantText(asst); txt != "" {
		l.lastText = txt
	}
	var uses []provider.Block
	for _, b := range asst.Blocks {
		if b.Type == provider.BlockToolUse {
			uses = append(uses, b)
		}
	}
	// a: a final prose answer.
	if len(uses) == 0 {
		l.msgs = append(l.msgs, asst)
		if l.sch == nil {
			return l.finish(st, l.lastTextOf(asst), nil)
		}
		return l.finalize(st, l.lastTextOf(asst))
	}
	// b: whitelist and clean names.
	for _, b := range uses {
		if !Clean(b.Name) || !l.a.Admits(b.Name) {
			tool := Redact(b.Name)
			return l.finish(st, nil, spec.NewError(CodeWhitelist, fmt.Sprintf("the model called %q, which this task's tools do not admit", tool), map[string]any{"tool": tool}))
		}
	}
	// c: explicit completion.
	for _, b := range uses {
		if b.Name == router.NameDone {
			l.msgs = append(l.msgs, asst)
			return l.done(st, b.Input)
		}
	}
	// d: token budget.
	if l.a.MaxTokens > 0 && l.total >= l.a.MaxTokens {
		return l.finish(st, nil, spec.NewError(CodeMaxTokens, fmt.Sprintf("max_tokens_total reached: %d tokens used (limit %d)", l.total, l.a.MaxTokens),
			map[string]any{"total_tokens": l.total, "max_tokens_total": l.a.MaxTokens, "partial_output": l.lastText}))
	}
	// e: turn budget.
	if t >= l.a.MaxTurns {
		msg := fmt.Sprintf("max_turns exhausted after %d turns (limit %d, set by this task)", t, l.a.MaxTurns)
		if l.a.Blame == BlameContract {
			msg = fmt.Sprintf("max_turns exhausted after %d turns (limit %d is the default; set max_turns on the task to raise it)", t, l.a.MaxTurns)
		}
		return l.finish(st, nil, spec.NewError(CodeMaxTurns, msg, map[string]any{"turns": t, "max_turns": l.a.MaxTurns, "blame": l.a.Blame, "partial_output": l.lastText}))
	}
	// Dispatch.
	l.msgs = append(l.msgs, asst)
	calls := make([]Call, len(uses))
	for i, b := range uses {
		calls[i] = Call{ID: b.ID, Name: b.Name, Args: b.Input}
	}
	l.pending = calls
	l.ph = phaseBatch
	st.Batch = &Batch{Turn: t, Calls: calls}
	return st
}

// Cancel ends the run with err, the driver's cancellation outcome (§6.6): nothing is released
// after it, whatever was out.
func (l *Loop) Cancel(err *spec.Error) Step {
	if l.ph == phaseDone {
		return Step{Done: l.fin}
	}
	return l.finish(Step{}, nil, err)
}

// finish ends the run; a success releases finished{turns, total_tokens}.
func (l *Loop) finish(st Step, out any, err *spec.Error) Step {
	l.ph = phaseDone
	l.pending = nil
	if err == nil {
		st.event("", EventFinished, 0, map[string]any{"turns": l.turn, "total_tokens": l.total})
	}
	l.fin = &Finish{Output: out, Err: err, Turns: l.turn, TotalTokens: l.total, Usage: l.usage}
	st.Done = l.fin
	return st
}

// outOfProtocol is an input the loop cannot take in its phase: the run fails, never panics.
func (l *Loop) outOfProtocol(input string) Step {
	if l.ph == phaseDone {
		return Step{Done: l.fin}
	}
	return l.finish(Step{}, nil, spec.NewError("", "agent core: "+input+" is out of protocol here", nil))
}

func (st *Step) event(wire, loop string, turn int, f map[string]any) {
	st.Events = append(st.Events, Event{Wire: wire, Loop: loop, Turn: turn, Fields: f})
}

func (l *Loop) snapshot() []provider.Message {
	return append([]provider.Message(nil), l.msgs...)
}

// lastTextOf is the output of a prose answer: the §5.5 last assistant text.
func (l *Loop) lastTextOf(asst provider.Message) string {
	if txt := lastAssistantText(asst); txt != "" {
		return txt
	}
	return l.lastText
}

// lastAssistantText is §5.5 over one message.
func lastAssistantText(m provider.Message) string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Type == provider.BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
