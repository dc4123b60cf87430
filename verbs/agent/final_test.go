package agent

import (
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

func TestDoneWithResult(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("h", "z"),
		providertest.Call{ID: "d", Name: "nika:done", Input: `{"result":{"answer":42}}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:done"},
		"schema": map[string]any{"type": "object", "required": []any{"answer"}}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	m, ok := out.Output.(map[string]any)
	if !ok || m["answer"] != 42 {
		t.Fatalf("output %#v", out.Output)
	}
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked") {
			t.Fatalf("sibling dispatched: %s", l)
		}
	}
}

// §5.3: a result that is a value is the output as it is.
func TestDoneWithResultIsExplicitStructured(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("prose", doneCall(`{"result":{"n":[1,2]}}`)))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}}, 8)
	out := v.Run(context.Background(), job)
	m, ok := out.Output.(map[string]any)
	if out.Err != nil || !ok || fmt.Sprint(m["n"]) != "[1 2]" {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
}

// §5.3: no result (or input not an object) → the last assistant text, also from an earlier turn.
func TestDoneWithoutResultUsesLastText(t *testing.T) {
	for _, in := range []string{`{}`, `[1]`, `"x"`} {
		p := providertest.NewScripted(
			providertest.ToolCalls("the answer is 7", hashCall("a", "1")),
			providertest.ToolCalls("", doneCall(in)))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done", "nika:hash"}}, 8)
		out := v.Run(context.Background(), job)
		if out.Err != nil || out.Output != "the answer is 7" {
			t.Fatalf("input %s: %#v %v", in, out.Output, out.Err)
		}
	}
}

// §5.3: a string result holding JSON is replaced by the parsed value; other strings stay strings.
func TestDoneJSONStringIsUnwrapped(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", doneCall(`{"result":"{\"answer\": 42}"}`)))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if m, ok := out.Output.(map[string]any); out.Err != nil || !ok || m["answer"] != 42 {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
	p = providertest.NewScripted(providertest.ToolCalls("", doneCall(`{"result":"plain words"}`)))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil || out.Output != "plain words" {
		t.Fatalf("%#v %v", out.Output, out.Err)
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

func TestDoneResultInvalidFailsStageDone(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", providertest.Call{ID: "d", Name: "nika:done", Input: `{"result":{"answer":"x"}}`}))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageDone {
		t.Fatalf("got %v", out.Err)
	}
	if len(p.Requests()) != 1 {
		t.Fatalf("%d requests", len(p.Requests()))
	}
}

// §13.2 / §3 step 2: a schema that does not compile is NIKA-INFER-002 stage compile, no request.
func TestSchemaCompileFailsBeforeAnyRequest(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("x"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": map[string]any{"type": 12}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageCompile {
		t.Fatalf("got %v", out.Err)
	}
	if len(p.Requests()) != 0 || len(ev.lines) != 0 {
		t.Fatalf("%d requests, events %v", len(p.Requests()), ev.lines)
	}
}

// §13.2 / §5.4: a prose answer under schema is re-asked tools-off with the exact text.
func TestSchemaReaskIsToolsOffThenValid(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("I think it is forty-two"), providertest.Reply(`{"answer": 42}`))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if m, ok := out.Output.(map[string]any); !ok || m["answer"] != 42 {
		t.Fatalf("output %#v", out.Output)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	re := reqs[1]
	if len(re.Tools) != 0 || re.ToolChoice != provider.ChoiceNone {
		t.Fatalf("re-ask offers tools: %v %v", len(re.Tools), re.ToolChoice)
	}
	last := re.Messages[len(re.Messages)-1]
	prefix := "Your previous reply does not match the required output schema. Validation error: "
	if last.Role != provider.RoleUser || len(last.Blocks) != 1 || !strings.HasPrefix(last.Blocks[0].Text, prefix) ||
		!strings.Contains(last.Blocks[0].Text, "Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n{") {
		t.Fatalf("re-ask text %+v", last.Blocks)
	}
}

// §13.2 / §5.4: the re-ask is tools-off, carries Request.Schema iff the provider reports native
// support, and the re-ask text is exact.
func TestSchemaReaskIsToolsOffWithNativeFormat(t *testing.T) {
	for _, native := range []bool{true, false} {
		sp := providertest.NewScripted(providertest.Reply("forty-two"), providertest.Reply(`{"answer":42}`))
		var p provider.Provider = sp
		if native {
			p = nativeScripted{sp}
		}
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": answerSchema}, 8)
		out := v.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		reqs := sp.Requests()
		if len(reqs) != 2 {
			t.Fatalf("native=%v: %d requests", native, len(reqs))
		}
		re := reqs[1]
		if len(re.Tools) != 0 || re.ToolChoice != provider.ChoiceNone {
			t.Fatalf("native=%v: re-ask offers tools", native)
		}
		if native {
			if b, _ := json.Marshal(re.Schema); re.Schema == nil || !strings.Contains(string(b), `"required":["answer"]`) {
				t.Fatalf("native re-ask schema %s", b)
			}
		} else if re.Schema != nil {
			t.Fatalf("non-native re-ask carries a schema: %v", re.Schema)
		}
		want := "Your previous reply does not match the required output schema. Validation error: no JSON value found in the reply. " +
			"Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n" +
			`{"properties":{"answer":{"type":"integer"}},"required":["answer"],"type":"object"}`
		last := re.Messages[len(re.Messages)-1]
		if len(last.Blocks) != 1 || last.Blocks[0].Text != want {
			t.Fatalf("re-ask text %q", last.Blocks[0].Text)
		}
	}
}

func TestSchemaReaskBudgetExhaustedFails(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("no"), providertest.Reply("still no"), providertest.Reply("never"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageFinalize {
		t.Fatalf("got %v", out.Err)
	}
	if n := len(p.Requests()); n != 1+SchemaRetryBudget {
		t.Fatalf("%d requests, want %d", n, 1+SchemaRetryBudget)
	}
}

// §13.2 / §5.4 step 2: nika:done among siblings under schema, with a prose answer: the re-ask
// transcript holds no tool_use without a result, keeps the prose, and nothing was dispatched.
func TestDoneAmongSiblingsUnderSchemaStripsOrphanToolUse(t *testing.T) {
	sp := providertest.NewScripted(
		providertest.ToolCalls("the answer is forty-two", hashCall("h1", "x"),
			providertest.Call{ID: "d", Name: "nika:done", Input: `{}`}, hashCall("h2", "y")),
		providertest.Reply(`{"answer":42}`))
	v, job, ev := setup(t, nativeScripted{sp}, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:done"}, "schema": answerSchema}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if m, ok := out.Output.(map[string]any); !ok || m["answer"] != 42 {
		t.Fatalf("output %#v", out.Output)
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatal("a sibling of nika:done was dispatched")
	}
	reqs := sp.Requests()
	if len(reqs) != 2 || reqs[1].Schema == nil || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d requests; re-ask schema %v tools %d", len(reqs), reqs[1].Schema, len(reqs[1].Tools))
	}
	uses, results := map[string]bool{}, map[string]bool{}
	for _, m := range reqs[1].Messages {
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockToolUse:
				uses[b.ID] = true
			case provider.BlockToolResult:
				results[b.ToolUseID] = true
			}
		}
	}
	for id := range uses {
		if !results[id] {
			t.Fatalf("orphan tool_use %q in the re-ask transcript", id)
		}
	}
	asst := reqs[1].Messages[1]
	if asst.Role != provider.RoleAssistant || len(asst.Blocks) != 1 || asst.Blocks[0].Text != "the answer is forty-two" {
		t.Fatalf("stripped assistant message %+v", asst)
	}
}
