package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

// AGENT.md §13.2: no tools → one request, no tool defs sent, success.
func TestNoToolsSingleTurnCompletes(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("plain answer"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p"}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "plain answer" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Fatalf("%d requests, tools %v", len(reqs), reqs)
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("dispatched: %v", ev.lines)
	}
}

// AGENT.md §13.2: a tool returning structured output alongside its content
// string is fed back as the content string.
func TestFeedsContentStringNotStructured(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1")), providertest.Reply("fin"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		return "the content string", json.RawMessage(`{"structured":true}`), nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := p.Requests()
	msgs := reqs[1].Messages
	res := msgs[len(msgs)-1].Blocks[0]
	if res.Content != "the content string" || res.IsError || strings.Contains(res.Content, "structured") {
		t.Fatalf("fed back %+v", res)
	}
}

// AGENT.md §13.1: a coded tool error that is not a boundary refusal
// (NIKA-MCP-002, NIKA-BUILTIN-FETCH-001) is fed back and the loop continues.
func TestCodedNonBoundaryErrorStaysFeedback(t *testing.T) {
	for _, code := range []string{"NIKA-MCP-002", "NIKA-BUILTIN-FETCH-001"} {
		p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), hashCall("b", "2")), providertest.Reply("recovered"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
		v.exec = func(_ context.Context, c dispatch.Call) (string, json.RawMessage, error) {
			if c.Index == 0 {
				return "", nil, spec.NewError(code, "upstream said no", nil)
			}
			return "fine", nil, nil
		}
		out := v.Run(context.Background(), job)
		if out.Err != nil || out.Output != "recovered" {
			t.Fatalf("%s: %v %v", code, out.Output, out.Err)
		}
		reqs := p.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests", code, len(reqs))
		}
		blocks := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks
		if len(blocks) != 2 || !blocks[0].IsError || !strings.Contains(blocks[0].Content, code) || blocks[1].IsError || blocks[1].Content != "fine" {
			t.Fatalf("%s: fed back %+v", code, blocks)
		}
	}
}

// AGENT.md §13.2: batch [read, done, glob] completes explicitly and runs no tool.
func TestDoneAmongSiblingsDispatchesNone(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("",
		providertest.Call{ID: "r", Name: "nika:read", Input: `{"path":"x"}`},
		providertest.Call{ID: "d", Name: "nika:done", Input: `{"result":"finished"}`},
		providertest.Call{ID: "g", Name: "nika:glob", Input: `{"pattern":"*"}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:read", "nika:done", "nika:glob"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "finished" {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 || len(p.Requests()) != 1 {
		t.Fatalf("execs %d, %d requests, events %v", execs.Load(), len(p.Requests()), ev.lines)
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

// AGENT.md §13.5 as amended by D31/D40: a broken draft, then a valid one,
// then text — 3 turns, nothing executed, round 1 names a NIKA- code, round 2
// is valid (D31 shape: no certificate), compose events [false, true].
func TestComposeRepairLoopConvergesAndNeverExecutes(t *testing.T) {
	broken := "nika: v1\ntasks:\n  - id: a\n    infer: {prompt: hi}\n    depends_on: [missing]\n"
	valid := "nika: v1\nworkflow: draft\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: {prompt: hi}\n"
	arg := func(y string) string {
		b, _ := json.Marshal(map[string]string{"workflow_yaml": y})
		return string(b)
	}
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "k1", Name: "nika:compose", Input: arg(broken)}),
		providertest.ToolCalls("", providertest.Call{ID: "k2", Name: "nika:compose", Input: arg(valid)}),
		providertest.Reply("converged"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "converged" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d turns", len(reqs))
	}
	r1 := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks[0]
	r2 := reqs[2].Messages[len(reqs[2].Messages)-1].Blocks[0]
	if !r1.IsError || !strings.Contains(r1.Content, "NIKA-") {
		t.Fatalf("round 1 %+v", r1)
	}
	if r2.IsError || !strings.Contains(r2.Content, `"valid":true`) || strings.Contains(r2.Content, "certificate") {
		t.Fatalf("round 2 %+v", r2)
	}
	var flags []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "agent_compose_checked") {
			if strings.Contains(l, `"valid":true`) {
				flags = append(flags, "true")
			} else {
				flags = append(flags, "false")
			}
		}
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 || strings.Join(flags, ",") != "false,true" {
		t.Fatalf("execs %d, compose flags %v, events %v", execs.Load(), flags, ev.lines)
	}
}

// AGENT.md §13.1 as amended by D32 (order, not milliseconds): with
// cooperative calls in flight, cancelling the run makes it return
// NIKA-CANCEL-001; the 5 s guard only turns a hang into a failure.
func TestCancelReturnsPromptly(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), hashCall("b", "2"), hashCall("c", "3")), providertest.Reply("never"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	entered := make(chan struct{}, 3)
	v.exec = func(ctx context.Context, _ dispatch.Call) (string, json.RawMessage, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *spec.Error, 1)
	go func() { done <- v.Run(ctx, job).Err }()
	for range 3 {
		<-entered
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || err.Code != CodeCancel {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if len(p.Requests()) != 1 {
		t.Fatalf("%d requests after cancel", len(p.Requests()))
	}
}
