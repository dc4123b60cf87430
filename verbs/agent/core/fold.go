package core

import (
	"fmt"
	"strings"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// Boundary codes: the one batch stopper (§6.5).
const (
	CodeSecPermits = spec.CodeSecPermits
	CodeSecSSRF    = spec.CodeSecSSRF
)

// Resolved reports the results of the batch out, results[i] answering its Calls[i]. A
// security-boundary refusal fails the run with nothing folded (§6.5); otherwise the fold runs in
// request order (§6.3), then the guard's verdict (§7.3), and the loop is between turns again.
func (l *Loop) Resolved(results []Result) Step {
	if l.ph != phaseBatch {
		return l.outOfProtocol("Resolved")
	}
	calls := l.pending
	if len(results) != len(calls) {
		return l.finish(Step{}, nil, spec.NewError("", fmt.Sprintf("agent core: %d results for a batch of %d calls", len(results), len(calls)), nil))
	}
	for i, res := range results {
		if e := res.Err; e != nil && (e.Code == CodeSecPermits || e.Code == CodeSecSSRF) {
			stop := spec.NewError(e.Code, e.Message, map[string]any{"tool": calls[i].Name, "call_id": calls[i].ID}).Wrap(e)
			return l.finish(Step{}, nil, stop)
		}
	}
	l.pending = nil
	var st Step
	user, sig, allErrors := l.fold(&st, calls, results)
	return l.judge(st, user, sig, allErrors)
}

// fold is phase 2 (§6.3): per call in request order, its own events, then compose_checked or
// tool_invoked and tool_completed; the router's recency ledger; the tool_result (spilled form) in
// the pending user message; the observation digest of the next routing query. It returns that
// message and the guard's input: the turn signature over full contents, and whether every real
// (non-compose) call failed.
func (l *Loop) fold(st *Step, calls []Call, results []Result) (provider.Message, guard.Signature, bool) {
	t := l.turn
	user := provider.Message{Role: provider.RoleUser}
	gcalls := make([]guard.Call, len(results))
	obs := make([]guard.Observation, len(results))
	real, realErr := 0, 0
	var digest []string
	dlen := 0
	for i, res := range results {
		name := calls[i].Name
		isErr := res.Err != nil
		for _, e := range res.Events { // a builtin's own events (nika:log, nika:emit), in request order
			st.event(e.Kind, "", 0, e.Fields)
		}
		if name == router.NameCompose {
			valid, violations := ComposeVerdict(res)
			isErr = !valid
			st.event(event.AgentComposeChecked, EventComposeChecked, t, map[string]any{"turn": t, "valid": valid, "violations": violations})
		} else {
			real++
			if isErr {
				realErr++
			}
			f := map[string]any{"tool": name, "is_error": isErr, "turn": t, "index": i}
			if res.Err != nil && res.Err.Code != "" {
				f["code"] = res.Err.Code
			}
			st.event(event.ToolInvoked, "", 0, f)
			st.event("", EventToolCompleted, t, map[string]any{"turn": t, "name": name, "is_error": isErr})
		}
		gcalls[i] = guard.Call{Name: name, Args: calls[i].Args}
		obs[i] = guard.Observation{Content: res.Content, IsError: isErr}
		l.rt.Record(t, name)
		fed := res.Content
		if res.Spilled != "" {
			fed = res.Spilled
		}
		user.Blocks = append(user.Blocks, provider.ToolResultBlock(calls[i].ID, fed, isErr))
		if dlen < digestMax {
			part := router.CutChars(fed, digestPart)
			digest = append(digest, part)
			dlen += len([]rune(part)) + 1
		}
	}
	l.digest = router.CutChars(strings.Join(digest, " "), digestMax)
	return user, guard.Sign(gcalls, obs), real > 0 && realErr == real
}

// judge applies the guard's verdict on the folded turn (§7.3): a nudge is released after the
// turn's tool events and rides on its user message; a stall fails the run and the message is
// never sent.
func (l *Loop) judge(st Step, user provider.Message, sig guard.Signature, allErrors bool) Step {
	t := l.turn
	v := l.gd.Observe(sig, allErrors)
	switch v.Kind {
	case guard.Nudge:
		if ev, ok := v.NudgeEvent(t); ok {
			st.event(event.AgentNudge, EventNudged, t, map[string]any{"turn": ev.Turn, "reason": string(ev.Reason), "period": ev.Period})
			r := string(ev.Reason)
			st.Live = append(st.Live, workflow.LiveNote{Kind: event.LiveAgentNudge, Code: r, Outcome: r, Reason: r, Turn: t})
		}
		user.Blocks = append(user.Blocks, provider.TextBlock(v.Text))
	case guard.Stalled:
		if ev, ok := v.StalledEvent(t); ok {
			st.event(event.AgentStalled, EventStalled, t, map[string]any{"turn": ev.Turn, "period": ev.Period, "repeats": ev.Repeats})
			r := string(guard.ReasonRepeatedActions)
			st.Live = append(st.Live, workflow.LiveNote{Kind: event.LiveAgentStalled, Code: CodeStalled, Outcome: r, Reason: r, IsError: true, Turn: t})
		}
		d := v.StallDetails()
		return l.finish(st, nil, spec.NewError(CodeStalled, v.StallMessage(), map[string]any{"period": d.Period, "repeats": d.Repeats, "partial_output": l.lastText}))
	}
	l.msgs = append(l.msgs, user)
	l.ph = phaseIdle
	st.Next = true
	return st
}
