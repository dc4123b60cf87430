package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
)

// §13.3: three identical turns draw one nudge with the exact text, after the tool results.
func TestNudgeLandsOnceAndLoopRecovers(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a")), providertest.ToolCalls("", sameHash("b")),
		providertest.ToolCalls("", sameHash("c")), providertest.Reply("recovered"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "recovered" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if len(last.Blocks) != 2 || last.Blocks[0].Type != provider.BlockToolResult || last.Blocks[1].Type != provider.BlockText ||
		last.Blocks[1].Text != guard.RepeatedActionsText(1) || !strings.HasPrefix(last.Blocks[1].Text, "[loop-guard]") {
		t.Fatalf("request 4 last message %+v", last.Blocks)
	}
	var nudges []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, event.AgentNudge+" ") {
			nudges = append(nudges, l)
		}
	}
	if len(nudges) != 1 || nudges[0] != `agent_nudge {"period":1,"reason":"repeated_actions","turn":3}` {
		t.Fatalf("nudges %v", nudges)
	}
}

// §10.1: a nudge closes its turn, after every tool_invoked; a budget is reported when set.
func TestNudgeIsLastEventOfItsTurn(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a")), providertest.ToolCalls("", sameHash("b")),
		providertest.ToolCalls("", sameHash("c")), providertest.Reply("ok"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 1000}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	k := kindsOf(ev)
	i := slices.Index(k, event.AgentNudge)
	if i < 0 || k[i-1] != event.ToolInvoked || k[i+1] != event.AgentToolsSelected {
		t.Fatalf("kinds %v", k)
	}
	if !slices.Contains(ev.lines, `agent_budget_checkpoint {"budget":1000,"total_tokens":0,"turn":1}`) {
		t.Fatalf("events %v", ev.lines)
	}
}

// §13.3: identical cycles stall at the fifth repeat; the stall follows the nudge.
func TestIdenticalCyclesStallAtFifthRepeat(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("working", sameHash(fmt.Sprint("s", i))))
	}
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["period"] != 1 || out.Err.Details["repeats"] != 5 ||
		out.Err.Details["partial_output"] != "working" {
		t.Fatalf("got %v", out.Err)
	}
	if n := len(p.Requests()); n != 5 {
		t.Fatalf("%d requests, want 5", n)
	}
	k := kindsOf(ev)
	if countPrefix(ev.lines, event.AgentNudge) != 1 || k[len(k)-1] != event.AgentStalled ||
		ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":5,"turn":5}` {
		t.Fatalf("events %v", ev.lines)
	}
}

// §13.3 / §7.1: the same call polled with results that change every time never trips the guard.
func TestPollingWithChangingResultsNeverTrips(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("polling", providertest.Call{ID: fmt.Sprint("p", i), Name: "nika:hash", Input: `{"content":"status"}`}))
	}
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_turns": 4}, 8)
	var n atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		return fmt.Sprintf("progress %d%%", n.Add(1)*25), nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeMaxTurns {
		t.Fatalf("got %v", out.Err)
	}
	if countPrefix(ev.lines, event.AgentNudge) != 0 || countPrefix(ev.lines, event.AgentStalled) != 0 {
		t.Fatalf("guard tripped: %v", ev.lines)
	}
	if got := len(p.Requests()); got != 4 || n.Load() != 3 {
		t.Fatalf("%d requests, %d calls", got, n.Load())
	}
}

// §13.3 / §7.3-7.5: two all-error turns with different args draw the error-streak nudge, exact text,
// period 0; the run completes in 3 turns.
func TestErrorStreakDrawsNudge(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "e1", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", providertest.Call{ID: "e2", Name: "nika:jq", Input: `{"bad":2}`}),
		providertest.Reply("gave up"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:jq"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "gave up" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if len(last.Blocks) != 2 || last.Blocks[0].Type != provider.BlockToolResult || !last.Blocks[0].IsError ||
		last.Blocks[1].Type != provider.BlockText || last.Blocks[1].Text != guard.ErrorStreakText {
		t.Fatalf("request 3 last message %+v", last.Blocks)
	}
	if prev := reqs[1].Messages[len(reqs[1].Messages)-1]; len(prev.Blocks) != 1 {
		t.Fatalf("nudge after one failing turn: %+v", prev.Blocks)
	}
	var nudges []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, event.AgentNudge+" ") {
			nudges = append(nudges, l)
		}
	}
	if !slices.Equal(nudges, []string{`agent_nudge {"period":0,"reason":"error_streak","turn":2}`}) {
		t.Fatalf("nudges %v", nudges)
	}
}

// §13.3 / §7.3: stall is checked first, so a preceding nudge never masks it: with NudgeAfter >=
// StallAfter the stall fires at NudgeAfter+1, and an error-streak nudge does not postpone the
// default stall at the fifth repeat.
func TestStallIsNeverMaskedByNudge(t *testing.T) {
	t.Run("NudgeAfterAtLeastStallAfter", func(t *testing.T) {
		p := providertest.NewScripted()
		for i := range 9 {
			p.Push(providertest.ToolCalls("working", sameHash(fmt.Sprint("s", i))))
		}
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_turns": 20}, 8)
		v.Config.Guard = guard.Config{NudgeAfter: 5, StallAfter: 3}
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["repeats"] != 6 || out.Err.Details["period"] != 1 {
			t.Fatalf("got %v", out.Err)
		}
		if n := len(p.Requests()); n != 6 {
			t.Fatalf("%d requests, want 6", n)
		}
		k := kindsOf(ev)
		if countPrefix(ev.lines, `agent_nudge {"period":1,"reason":"repeated_actions","turn":5}`) != 1 ||
			countPrefix(ev.lines, event.AgentNudge) != 1 || k[len(k)-1] != event.AgentStalled ||
			ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":6,"turn":6}` {
			t.Fatalf("events %v", ev.lines)
		}
	})
	t.Run("AfterErrorStreakNudge", func(t *testing.T) {
		p := providertest.NewScripted()
		for i := range 7 {
			p.Push(providertest.ToolCalls("trying", providertest.Call{ID: fmt.Sprint("e", i), Name: "nika:jq", Input: `{"bad":1}`}))
		}
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:jq"}}, 8)
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["repeats"] != 5 {
			t.Fatalf("got %v", out.Err)
		}
		if n := len(p.Requests()); n != 5 {
			t.Fatalf("%d requests, want 5", n)
		}
		if countPrefix(ev.lines, `agent_nudge {"period":0,"reason":"error_streak","turn":2}`) != 1 ||
			countPrefix(ev.lines, event.AgentNudge) != 1 ||
			ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":5,"turn":5}` {
			t.Fatalf("events %v", ev.lines)
		}
	})
}
