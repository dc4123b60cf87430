package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/workflow"
)

func maxTurnsRun(t *testing.T, fields map[string]any) workflow.Outcome {
	t.Helper()
	p := providertest.NewScripted()
	for i := range 12 {
		p.Push(providertest.ToolCalls(fmt.Sprintf("step %d", i), hashCall(fmt.Sprintf("c%d", i), fmt.Sprint(i))))
	}
	fields["prompt"] = "p"
	fields["tools"] = []any{"nika:hash"}
	v, job, _ := setup(t, p, fields, 8)
	return v.Run(context.Background(), job)
}

// AGENT.md §13.2 / §12: a max_turns written on the task blames the caller.
func TestWrittenMaxTurnsBlamesCaller(t *testing.T) {
	out := maxTurnsRun(t, map[string]any{"max_turns": 2})
	if out.Err == nil || out.Err.Code != CodeMaxTurns || out.Err.Message != "max_turns exhausted after 2 turns (limit 2, set by this task)" {
		t.Fatalf("got %v", out.Err)
	}
	if out.Err.Details["partial_output"] == "" {
		t.Fatal("empty partial_output")
	}
}

// AGENT.md §13.2 / §12: the default max_turns blames the contract and says how to raise it.
func TestDefaultMaxTurnsBlamesContract(t *testing.T) {
	out := maxTurnsRun(t, map[string]any{})
	if out.Err == nil || out.Err.Code != CodeMaxTurns || out.Err.Message != "max_turns exhausted after 10 turns (limit 10 is the default; set max_turns on the task to raise it)" {
		t.Fatalf("got %v", out.Err)
	}
	if out.Err.Details["partial_output"] == "" {
		t.Fatal("empty partial_output")
	}
}

// AGENT.md §13.2: max_turns exhausted is NIKA-AGENT-001 with a non-empty
// partial_output; with max_turns 1, the tool call of the only turn is never run.
func TestMaxTurnsFailsWithPartialOutput(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("thinking about it", hashCall("a", "1")), providertest.Reply("never"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_turns": 1}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeMaxTurns {
		t.Fatalf("got %v", out.Err)
	}
	if po, _ := out.Err.Details["partial_output"].(string); po == "" {
		t.Fatalf("partial_output %#v", out.Err.Details["partial_output"])
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 || len(p.Requests()) != 1 {
		t.Fatalf("execs %d, %d requests", execs.Load(), len(p.Requests()))
	}
}

// §13.2: max_turns out of range fails at arming, before any request; 1 and 1000 are accepted.
func TestMaxTurnsRangeIsEnforced(t *testing.T) {
	for _, n := range []any{0, 1001, -1} {
		p := providertest.NewScripted(providertest.Reply("x"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "max_turns": n}, 8)
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Details["field"] != "max_turns" || len(p.Requests()) != 0 {
			t.Fatalf("max_turns %v: %v, %d requests", n, out.Err, len(p.Requests()))
		}
	}
	for _, n := range []any{1, 1000} {
		p := providertest.NewScripted(providertest.Reply("x"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "max_turns": n}, 8)
		if out := v.Run(context.Background(), job); out.Err != nil {
			t.Fatalf("max_turns %v: %v", n, out.Err)
		}
	}
	t.Run("check", maxTurnsRangeByCheck)
}

// maxTurnsCheckErrors reports whether `nika check` (spec.CheckSource) finds
// an error on the max_turns field for the given literal.
func maxTurnsCheckErrors(t *testing.T, lit string) bool {
	t.Helper()
	src := "nika: v1\nworkflow: w\nmodel: mock/echo\nvars:\n  n: {type: integer, default: 3}\ntasks:\n  - id: a\n    agent:\n      prompt: hi\n      max_turns: " + lit + "\n"
	a := spec.CheckSource("w.nika.yaml", []byte(src), spec.CheckOptions{})
	for _, f := range a.Findings {
		if f.IsError() && strings.Contains(f.Path, "max_turns") {
			return true
		}
	}
	return false
}

// maxTurnsRangeByCheck is the check half of AGENT.md §13.2's max_turns range — 0, 1001 and an
// expression are rejected by check; 1 and 1000 pass.
func maxTurnsRangeByCheck(t *testing.T) {
	for _, lit := range []string{"0", "1001", `"${{ vars.n }}"`} {
		if !maxTurnsCheckErrors(t, lit) {
			t.Errorf("max_turns %s accepted by check", lit)
		}
	}
	for _, lit := range []string{"1", "1000"} {
		if maxTurnsCheckErrors(t, lit) {
			t.Errorf("max_turns %s rejected by check", lit)
		}
	}
}

// §13.2: the budget stops before the second batch; exact boundary counts.
func TestTokenBudgetAtExactBoundaryStopsBeforeDispatch(t *testing.T) {
	p := providertest.NewScripted(
		usageOf(providertest.ToolCalls("first", hashCall("a", "1")), 50, 10),
		usageOf(providertest.ToolCalls("second", hashCall("b", "2")), 30, 10),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 100}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeMaxTokens {
		t.Fatalf("got %v", out.Err)
	}
	if out.Err.Details["partial_output"] != "second" || out.Err.Details["total_tokens"] != 100 {
		t.Fatalf("details %v", out.Err.Details)
	}
	if n := countPrefix(ev.lines, "tool_invoked"); n != 1 {
		t.Fatalf("%d tool_invoked, want 1 (second batch not run)", n)
	}
	// 99 tokens: dispatch happens.
	p = providertest.NewScripted(
		usageOf(providertest.ToolCalls("first", hashCall("a", "1")), 50, 10),
		usageOf(providertest.ToolCalls("second", hashCall("b", "2")), 29, 10),
		usageOf(providertest.Reply("end"), 500, 10),
	)
	v, job, ev = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 100}, 8)
	out = v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "end" || countPrefix(ev.lines, "tool_invoked") != 2 {
		t.Fatalf("99 tokens: %v %v (completion over budget is success)", out.Output, out.Err)
	}
}

// AGENT.md §13.2: a final text answer whose usage takes the total past the
// token budget is still a success (the budget stops dispatch, not completion).
func TestCompletionOverBudgetIsSuccess(t *testing.T) {
	p := providertest.NewScripted(usageOf(providertest.Reply("answer"), 400, 200))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 100}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "answer" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
}
