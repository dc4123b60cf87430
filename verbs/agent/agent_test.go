package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rec struct{ lines []string }

func (r *rec) emit(kind string, f map[string]any) {
	b, err := canon.Marshal(f)
	if err != nil {
		panic(err)
	}
	r.lines = append(r.lines, kind+" "+string(b))
}

func setup(t *testing.T, p provider.Provider, fields map[string]any, par int) (*Verb, workflow.Job, *rec) {
	t.Helper()
	reg := provider.NewRegistry()
	reg.Register("test", p)
	reg.Register("mock", provider.NewMock())
	model := "test/m"
	if _, ok := p.(*provider.Mock); ok {
		model = provider.MockModel
	}
	r := &rec{}
	v := &Verb{Providers: reg, Builtins: tools.NewBuiltins(), Config: Config{MaxParallelTools: par}}
	job := workflow.Job{Verb: "agent", Fields: fields, Model: model, Attempt: 1, Iteration: -1, Emit: r.emit}
	return v, job, r
}

func hashCall(id, content string) providertest.Call {
	return providertest.Call{ID: id, Name: "nika:hash", Input: fmt.Sprintf(`{"content":%q}`, content)}
}

func transcript(t *testing.T, reqs []provider.Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range reqs {
		if err := enc.Encode(r.Messages); err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(r.Tools))
		for i, d := range r.Tools {
			names[i] = d.Name
		}
		if err := enc.Encode(names); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
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

func TestByteIdenticalAcrossParallelism(t *testing.T) {
	script := func() *providertest.Scripted {
		var turn1, turn2 []providertest.Call
		for i := range 7 {
			turn1 = append(turn1, hashCall(fmt.Sprintf("a%d", i), fmt.Sprintf("x%d", i)))
		}
		turn2 = append(turn2, hashCall("b0", "y"), providertest.Call{ID: "b1", Name: "nika:hash", Input: `{"nope":1}`},
			providertest.Call{ID: "b2", Name: "nika:jq", Input: `{"filter":".a","input":{"a":1}}`})
		return providertest.NewScripted(providertest.ToolCalls("t1", turn1...), providertest.ToolCalls("", turn2...), providertest.Reply("ok"))
	}
	var ref, refEv []byte
	for _, par := range []int{1, 2, 8, 64} {
		p := script()
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*"}}, par)
		out := v.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		tr := transcript(t, p.Requests())
		evb := []byte(strings.Join(ev.lines, "\n"))
		if ref == nil {
			ref, refEv = tr, evb
			continue
		}
		if !bytes.Equal(tr, ref) {
			t.Fatalf("P=%d transcript differs", par)
		}
		if !bytes.Equal(evb, refEv) {
			t.Fatalf("P=%d events differ:\n%s\n---\n%s", par, evb, refEv)
		}
	}
}

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

// AGENT.md §13.2: batch [allowed, denied] fails NIKA-SEC-002 and dispatches neither call.
func TestWhitelistViolationOnSecondCallDispatchesNone(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"),
		providertest.Call{ID: "b", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:read" {
		t.Fatalf("got %v", out.Err)
	}
	if execs.Load() != 0 {
		t.Fatalf("%d executor calls, want 0", execs.Load())
	}
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked") {
			t.Fatalf("dispatched: %s", l)
		}
	}
}

func TestComposeBrokenDraft(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "k", Name: "nika:compose", Input: `{"workflow_yaml":"nika: v1\ntasks:\n  - id: a\n    infer: {prompt: hi}\n    depends_on: [missing]\n"}`}),
		providertest.Reply("done"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := p.Requests()
	msgs := reqs[1].Messages
	res := msgs[len(msgs)-1].Blocks[0]
	if !res.IsError || !strings.HasPrefix(res.Content, `{"valid":false`) || !strings.Contains(res.Content, "NIKA-") {
		t.Fatalf("compose result %+v", res)
	}
	found := false
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "agent_compose_checked") && strings.Contains(l, `"valid":false`) {
			found = true
		}
		if strings.HasPrefix(l, "tool_invoked") {
			t.Fatalf("compose emitted tool_invoked: %s", l)
		}
	}
	if !found {
		t.Fatalf("no compose event: %v", ev.lines)
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

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, job, _ := setup(t, providertest.NewScripted(providertest.Reply("x")), map[string]any{"prompt": "p"}, 8)
	out := v.Run(ctx, job)
	if out.Err == nil || out.Err.Code != CodeCancel {
		t.Fatalf("got %v", out.Err)
	}
}

// A batch runs its jobs under one context; Job.Cancelled stops one job
// alone (a fail-fast sibling, a timeout) while the others finish.
func TestRunBatchCancelsOneJobAlone(t *testing.T) {
	v, job, _ := setup(t, provider.NewMock(), map[string]any{"prompt": "hash it", "tools": []any{"nika:hash", "nika:done"}}, 8)
	stopped := make(chan struct{})
	close(stopped)
	a, b := job, job
	a.Emit = func(string, map[string]any) {} // each job has its own emitter
	b.Emit = func(string, map[string]any) {}
	a.Cancelled = stopped
	out := v.RunBatch(context.Background(), []workflow.Job{a, b})
	if out[0].Err == nil || out[0].Err.Code != "NIKA-CANCEL-001" {
		t.Errorf("cancelled job: %+v, want NIKA-CANCEL-001", out[0])
	}
	if out[1].Err != nil || out[1].Output != "hash it" {
		t.Errorf("sibling: %+v, want success", out[1])
	}
}
