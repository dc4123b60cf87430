package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
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

// AGENT.md §13.2 / §4.2: a tool-use turn is fed back as one user message of
// tool results in request order, then the text turn completes the run.
func TestToolUseFeedsBackThenCompletes(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", hashCall("c-a", "a"), hashCall("c-b", "b"), hashCall("c-c", "c")),
		providertest.Reply("finished"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "hash things", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if out.Output != "finished" || len(out.Usage) != 2 {
		t.Fatalf("output %v usage %d", out.Output, len(out.Usage))
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// §4.2 byte for byte: opening user prompt (no system: it is empty), then
	// the assistant turn verbatim, then one user message of tool_results in
	// request order. The terminal assistant turn is never sent.
	user := provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{{Type: "text", Text: "hash things"}}}
	asst := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{
		{Type: "tool_use", ID: "c-a", Name: "nika:hash", Input: json.RawMessage(`{"content":"a"}`)},
		{Type: "tool_use", ID: "c-b", Name: "nika:hash", Input: json.RawMessage(`{"content":"b"}`)},
		{Type: "tool_use", ID: "c-c", Name: "nika:hash", Input: json.RawMessage(`{"content":"c"}`)},
	}}
	results := provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{
		{Type: "tool_result", ToolUseID: "c-a", Content: "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},
		{Type: "tool_result", ToolUseID: "c-b", Content: "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"},
		{Type: "tool_result", ToolUseID: "c-c", Content: "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"},
	}}
	want := transcript(t, []provider.Request{
		{Messages: []provider.Message{user}, Tools: []provider.ToolDef{{Name: "nika:hash"}}},
		{Messages: []provider.Message{user, asst, results}, Tools: []provider.ToolDef{{Name: "nika:hash"}}},
	})
	if got := transcript(t, reqs); !bytes.Equal(got, want) {
		t.Fatalf("transcript sent to the provider:\n%s\nwant (§4.2):\n%s", got, want)
	}
	msgs := reqs[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != provider.RoleUser || len(last.Blocks) != 3 {
		t.Fatalf("last message %+v", last)
	}
	for i, id := range []string{"c-a", "c-b", "c-c"} {
		b := last.Blocks[i]
		if b.Type != provider.BlockToolResult || b.ToolUseID != id || b.IsError {
			t.Fatalf("block %d = %+v", i, b)
		}
	}
	var invoked []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked ") {
			invoked = append(invoked, l)
		}
	}
	if len(invoked) != 3 || !strings.Contains(invoked[2], `"index":2`) || !strings.Contains(invoked[0], `"tool":"nika:hash"`) {
		t.Fatalf("events %v", invoked)
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

// §13.2: a rate-limited provider outcome at turn 2 fails NIKA-INFER-001, transient.
func TestInferenceErrorMidLoopKeepsTransience(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1")), providertest.Fail(provider.ReasonRateLimited))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != "NIKA-INFER-001" || !out.Err.Transient || provider.ReasonOf(out.Err) != provider.ReasonRateLimited {
		t.Fatalf("got %+v", out.Err)
	}
	if len(out.Usage) != 1 || len(p.Requests()) != 2 {
		t.Fatalf("usage %v, %d requests", out.Usage, len(p.Requests()))
	}
	// A non-transient reason stays non-transient.
	p = providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1")), providertest.Fail(provider.ReasonAuthFailed))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	if out := v.Run(context.Background(), job); out.Err == nil || out.Err.Transient {
		t.Fatalf("got %+v", out.Err)
	}
}

func TestMockEndToEndDeterministic(t *testing.T) {
	var first any
	var firstEv []string
	for range 3 {
		v, job, ev := setup(t, provider.NewMock(), map[string]any{"prompt": "hash it", "tools": []any{"nika:hash", "nika:done"}}, 8)
		out := v.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		if first == nil {
			first, firstEv = out.Output, ev.lines
			continue
		}
		if fmt.Sprint(out.Output) != fmt.Sprint(first) || strings.Join(ev.lines, "\n") != strings.Join(firstEv, "\n") {
			t.Fatalf("not deterministic: %v vs %v", out.Output, first)
		}
	}
	if first != "hash it" {
		t.Fatalf("output %#v", first)
	}
}
