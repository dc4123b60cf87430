package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec/canon"
)

func complete1(t *testing.T, req Request) *Response {
	t.Helper()
	out := NewMock().Complete(context.Background(), []Request{req})
	if len(out) != 1 {
		t.Fatalf("%d outcomes for 1 request", len(out))
	}
	if out[0].Err != nil || out[0].Response == nil {
		t.Fatalf("unexpected outcome: err=%v resp=%v", out[0].Err, out[0].Response)
	}
	return out[0].Response
}

func assistantJSON(t *testing.T, r *Response) string {
	t.Helper()
	b, err := canon.Marshal(r.Message)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	readTool = ToolDef{Name: "nika:read", Description: "Read a file.",
		Parameters: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string","minLength":1}}}`)}
	grepTool = ToolDef{Name: "nika:grep", Description: "Search.",
		Parameters: json.RawMessage(`{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string"}}}`)}
	doneDef = ToolDef{Name: "nika:done", Description: "Finish.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"result":{"description":"The final answer, any JSON value."}}}`)}
)

func TestMockRule1Schema(t *testing.T) {
	req := Request{
		Model:    MockModel,
		System:   "ignored",
		Messages: []Message{UserText("give me a thing")},
		Tools:    []ToolDef{readTool, doneDef}, // a schema wins over tools
		Schema: map[string]any{"type": "object", "required": []any{"name", "tags"}, "properties": map[string]any{
			"name": map[string]any{"type": "string", "minLength": 2},
			"tags": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string", "format": "email"}},
		}},
	}
	r := complete1(t, req)
	want := `{"blocks":[{"text":"{\"name\":\"xx\",\"tags\":[\"user@example.com\"]}","type":"text"}],"role":"assistant"}`
	if got := assistantJSON(t, r); got != want {
		t.Errorf("message = %s, want %s", got, want)
	}
	if r.StopReason != StopEndTurn {
		t.Errorf("stop = %q", r.StopReason)
	}
	// input: "ignored"(7) + "give me a thing"(15) = 22 → 6; output: 41 bytes → 11.
	if r.Usage != (Usage{InputTokens: 6, OutputTokens: 11, Reported: true}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	// A schema that admits only null still gets rule 1.
	r = complete1(t, Request{Model: MockModel, Messages: []Message{UserText("x")}, Schema: true})
	if Text(r.Message) != "null" || len(r.Message.Blocks) != 1 {
		t.Errorf("schema true: %+v", r.Message)
	}
	if !NewMock().SupportsSchema(MockModel) || NewMock().SupportsSchema("mock/other") {
		t.Error("SupportsSchema")
	}
	var _ NativeSchema = NewMock()
}

func TestMockRule2ToolCall(t *testing.T) {
	req := Request{
		Model:    MockModel,
		Messages: []Message{UserText("Find the bug."), {Role: RoleUser, Blocks: []Block{TextBlock("later")}}},
		Tools:    []ToolDef{grepTool, readTool, doneDef},
	}
	r := complete1(t, req)
	got := assistantJSON(t, r)
	want := `{"blocks":[{"text":"Find the bug.","type":"text"},{"id":"mock-call-1","input":{"pattern":""},"name":"nika:grep","type":"tool_use"}],"role":"assistant"}`
	if got != want {
		t.Errorf("message = %s\nwant        %s", got, want)
	}
	if r.StopReason != StopToolUse {
		t.Errorf("stop = %q", r.StopReason)
	}
	// The list order decides: read first now.
	req.Tools = []ToolDef{readTool, grepTool}
	r = complete1(t, req)
	if b := r.Message.Blocks[1]; b.Name != "nika:read" || string(b.Input) != `{"path":"x"}` {
		t.Errorf("call = %+v", b)
	}
	// Tools without parameters: S(nothing) is null.
	req.Tools = []ToolDef{{Name: "mcp:x/ping"}}
	r = complete1(t, req)
	if b := r.Message.Blocks[1]; b.Name != "mcp:x/ping" || string(b.Input) != `null` {
		t.Errorf("call = %+v", b)
	}
}

// transcript builds an agent transcript: the prompt, then per turn an assistant message with the
// given calls and a user message with their results.
type turn struct {
	calls   []Block
	results []Block
}

func transcript(prompt string, turns ...turn) []Message {
	msgs := []Message{UserText(prompt)}
	for _, tr := range turns {
		msgs = append(msgs, Message{Role: RoleAssistant, Blocks: append([]Block{TextBlock(prompt)}, tr.calls...)})
		msgs = append(msgs, Message{Role: RoleUser, Blocks: tr.results})
	}
	return msgs
}

func TestMockRule2DoneSwitch(t *testing.T) {
	use := func(id, name, input string) Block { return ToolUseBlock(id, name, json.RawMessage(input)) }
	res := func(id string, isErr bool) Block { return ToolResultBlock(id, "content of "+id, isErr) }
	tools := []ToolDef{readTool, grepTool, doneDef}

	tests := []struct {
		name     string
		tools    []ToolDef
		turns    []turn
		wantName string
		wantArgs string
		wantID   string
	}{
		{"first turn", tools, nil, "nika:read", `{"path":"x"}`, "mock-call-1"},
		{"latest result for candidate is error", tools,
			[]turn{{[]Block{use("a", "nika:read", `{"path":"other"}`)}, []Block{res("a", true)}}},
			"nika:done", `{}`, "mock-call-2"},
		{"earlier error, latest ok", tools,
			[]turn{
				{[]Block{use("a", "nika:read", `{"path":"p1"}`)}, []Block{res("a", true)}},
				{[]Block{use("b", "nika:read", `{"path":"p2"}`)}, []Block{res("b", false)}},
			},
			"nika:read", `{"path":"x"}`, "mock-call-3"},
		{"earlier ok, latest error", tools,
			[]turn{
				{[]Block{use("a", "nika:read", `{"path":"p1"}`)}, []Block{res("a", false)}},
				{[]Block{use("b", "nika:read", `{"path":"p2"}`)}, []Block{res("b", true)}},
			},
			"nika:done", `{}`, "mock-call-3"},
		{"latest within one message is the last block", tools,
			[]turn{{[]Block{use("a", "nika:read", `{"path":"p1"}`), use("b", "nika:read", `{"path":"p2"}`)},
				[]Block{res("a", false), res("b", true)}}},
			"nika:done", `{}`, "mock-call-3"},
		{"last block ok wins over earlier error in same message", tools,
			[]turn{{[]Block{use("a", "nika:read", `{"path":"p1"}`), use("b", "nika:read", `{"path":"p2"}`)},
				[]Block{res("a", true), res("b", false)}}},
			"nika:read", `{"path":"x"}`, "mock-call-3"},
		{"error for another tool does not switch", tools,
			[]turn{{[]Block{use("a", "nika:grep", `{"pattern":"q"}`)}, []Block{res("a", true)}}},
			"nika:read", `{"path":"x"}`, "mock-call-2"},
		{"identical call already made", tools,
			[]turn{{[]Block{use("a", "nika:read", `{"path":"x"}`)}, []Block{res("a", false)}}},
			"nika:done", `{}`, "mock-call-2"},
		{"identical after canonicalization", tools,
			[]turn{{[]Block{use("a", "nika:read", "{ \"path\" : \"x\" }")}, []Block{res("a", false)}}},
			"nika:done", `{}`, "mock-call-2"},
		{"same args other tool is not identical", tools,
			[]turn{{[]Block{use("a", "nika:grep", `{"path":"x"}`)}, []Block{res("a", false)}}},
			"nika:read", `{"path":"x"}`, "mock-call-2"},
		{"no done offered: error does not switch", []ToolDef{readTool, grepTool},
			[]turn{{[]Block{use("a", "nika:read", `{"path":"p"}`)}, []Block{res("a", true)}}},
			"nika:read", `{"path":"x"}`, "mock-call-2"},
		{"no done offered: repeat does not switch", []ToolDef{readTool},
			[]turn{{[]Block{use("a", "nika:read", `{"path":"x"}`)}, []Block{res("a", false)}}},
			"nika:read", `{"path":"x"}`, "mock-call-2"},
		{"done first in list", []ToolDef{doneDef, readTool}, nil, "nika:done", `{}`, "mock-call-1"},
		{"unanswered call is not an error", tools,
			[]turn{{[]Block{use("a", "nika:read", `{"path":"p"}`)}, nil}},
			"nika:read", `{"path":"x"}`, "mock-call-2"},
		{"numbering counts every call", tools,
			[]turn{
				{[]Block{use("a", "nika:grep", `{"pattern":"1"}`), use("b", "nika:grep", `{"pattern":"2"}`)}, []Block{res("a", false), res("b", false)}},
				{[]Block{use("c", "nika:grep", `{"pattern":"3"}`)}, []Block{res("c", false)}},
			},
			"nika:read", `{"path":"x"}`, "mock-call-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := complete1(t, Request{Model: MockModel, Messages: transcript("Do it.", tt.turns...), Tools: tt.tools})
			if len(r.Message.Blocks) != 2 {
				t.Fatalf("blocks = %+v", r.Message.Blocks)
			}
			if b := r.Message.Blocks[0]; b.Type != BlockText || b.Text != "Do it." {
				t.Errorf("text block = %+v", b)
			}
			b := r.Message.Blocks[1]
			if b.Type != BlockToolUse || b.Name != tt.wantName || string(b.Input) != tt.wantArgs || b.ID != tt.wantID {
				t.Errorf("call = {%s %s %s %s}, want {tool_use %s %s %s}", b.Type, b.ID, b.Name, b.Input, tt.wantID, tt.wantName, tt.wantArgs)
			}
		})
	}
}

func TestMockRule3Echo(t *testing.T) {
	prompt := "  Résumé:\n\tline 2 — ünïcødé 🙂 \n"
	r := complete1(t, Request{Model: MockModel, System: "sys", Messages: []Message{UserText(prompt)}})
	if got := Text(r.Message); got != prompt {
		t.Errorf("reply = %q, want the prompt verbatim", got)
	}
	if r.Message.Role != RoleAssistant || r.StopReason != StopEndTurn || len(r.Message.Blocks) != 1 {
		t.Errorf("response = %+v", r)
	}
	// The LAST user message, all its text blocks concatenated, other block types skipped.
	msgs := []Message{
		UserText("first"),
		{Role: RoleAssistant, Blocks: []Block{TextBlock("answer")}},
		{Role: RoleUser, Blocks: []Block{TextBlock("a"), ToolResultBlock("id", "skip", false), TextBlock("b")}},
		{Role: RoleAssistant, Blocks: []Block{TextBlock("trailing assistant")}},
	}
	if got := Text(complete1(t, Request{Model: MockModel, Messages: msgs}).Message); got != "ab" {
		t.Errorf("reply = %q, want %q", got, "ab")
	}
	if got := Text(complete1(t, Request{Model: MockModel}).Message); got != "" {
		t.Errorf("no messages: reply = %q", got)
	}
}

func TestMockUsage(t *testing.T) {
	// System "é" = 2 bytes; prompt "日本" = 6 bytes; assistant text "ok" = 2; tool_use input canonical
	// {"a":"€","b":1} = 17 bytes (the wire had spaces and other key order); tool_result "ü" = 2;
	// assistant ProviderData, tool names, ids and tool definitions do not count. Total 29 → 8.
	msgs := []Message{
		UserText("日本"),
		{Role: RoleAssistant, ProviderData: json.RawMessage(`{"sig":"xxxxxxxxxxxxxxxx"}`), Blocks: []Block{
			TextBlock("ok"),
			ToolUseBlock("id-1", "nika:grep", json.RawMessage(`{ "b": 1, "a": "€" }`)),
		}},
		{Role: RoleUser, Blocks: []Block{ToolResultBlock("id-1", "ü", false)}},
	}
	base := Request{Model: MockModel, System: "é", Messages: msgs}

	r := complete1(t, base) // rule 3: reply "" (last user message has no text) → 0
	if r.Usage != (Usage{InputTokens: 8, OutputTokens: 0, Reported: true}) {
		t.Errorf("rule 3 usage = %+v", r.Usage)
	}

	withTools := base
	withTools.Tools = []ToolDef{readTool, {Name: "x", Description: strings.Repeat("long ", 1000)}}
	r = complete1(t, withTools) // rule 2: text "日本" (6) + {"path":"x"} (12) = 18 → 5
	if r.Usage != (Usage{InputTokens: 8, OutputTokens: 5, Reported: true}) {
		t.Errorf("rule 2 usage = %+v", r.Usage)
	}

	withSchema := base
	withSchema.Schema = map[string]any{"const": "ß€"} // reply "ß€" quoted = 2+2+3 = 7 → 2
	r = complete1(t, withSchema)
	if r.Usage != (Usage{InputTokens: 8, OutputTokens: 2, Reported: true}) || Text(r.Message) != `"ß€"` {
		t.Errorf("rule 1 usage = %+v, reply %q", r.Usage, Text(r.Message))
	}

	// Exact multiples and the ceiling.
	for n, want := range map[int]int{0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 8: 2, 9: 3} {
		r := complete1(t, Request{Model: MockModel, Messages: []Message{UserText(strings.Repeat("a", n))}})
		if r.Usage.InputTokens != want || r.Usage.OutputTokens != want {
			t.Errorf("%d bytes: usage %+v, want %d", n, r.Usage, want)
		}
	}
}

func TestMockModelNotFound(t *testing.T) {
	for _, model := range []string{"mock/other", "mock/echo2", "mock/", "openai/gpt-4o", ""} {
		out := NewMock().Complete(context.Background(), []Request{{Model: model, Messages: []Message{UserText("x")}}})
		e := out[0].Err
		if out[0].Response != nil || e == nil {
			t.Fatalf("%q: outcome %+v", model, out[0])
		}
		if e.Code != "NIKA-INFER-001" || e.Category != "provider_error" || e.Transient || ReasonOf(e) != ReasonModelNotFound {
			t.Errorf("%q: %+v", model, e)
		}
		if e.Details["model"] != model || e.Details["status"] != nil || e.Details["retry_after_ms"] != nil {
			t.Errorf("%q: details %v", model, e.Details)
		}
	}
	e := NewMock().Complete(context.Background(), []Request{{Model: "mock/other"}})[0].Err
	if e.Details["provider"] != "mock" || !strings.Contains(e.Message, `"mock/other"`) {
		t.Errorf("details %v, message %q", e.Details, e.Message)
	}
}

func TestMockBatchOrder(t *testing.T) {
	reqs := []Request{
		{Model: MockModel, Messages: []Message{UserText("zero")}},
		{Model: "mock/nope", Messages: []Message{UserText("one")}},
		{Model: MockModel, Messages: []Message{UserText("two")}, Schema: map[string]any{"type": "integer", "minimum": 2}},
		{Model: MockModel, Messages: []Message{UserText("three")}, Tools: []ToolDef{grepTool}},
		{Model: MockModel, Messages: []Message{UserText("four")}},
	}
	out := NewMock().Complete(context.Background(), reqs)
	if len(out) != len(reqs) {
		t.Fatalf("%d outcomes for %d requests", len(out), len(reqs))
	}
	if Text(out[0].Response.Message) != "zero" || out[1].Err == nil || Text(out[2].Response.Message) != "2" ||
		out[3].Response.Message.Blocks[0].Text != "three" || Text(out[4].Response.Message) != "four" {
		t.Errorf("outcomes out of order: %+v", out)
	}
	for i, o := range out {
		if (o.Response == nil) == (o.Err == nil) {
			t.Errorf("outcome %d: exactly one of Response and Err must be set", i)
		}
	}
	if out := NewMock().Complete(context.Background(), nil); out == nil || len(out) != 0 {
		t.Errorf("empty batch: %#v", out)
	}
}

func TestMockCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reqs := []Request{{Model: MockModel, Messages: []Message{UserText("a")}}, {Model: "mock/other"}}
	out := NewMock().Complete(ctx, reqs)
	if len(out) != 2 {
		t.Fatalf("%d outcomes", len(out))
	}
	for i, o := range out {
		if o.Err == nil || ReasonOf(o.Err) != ReasonCancelled || o.Err.Transient || !errors.Is(o.Err, context.Canceled) {
			t.Errorf("outcome %d: %+v", i, o)
		}
	}
}

// TestMockByteStable: identical requests give byte-identical outcomes, whatever the concurrency.
func TestMockByteStable(t *testing.T) {
	req := Request{Model: MockModel, Messages: transcript("p", turn{
		calls:   []Block{ToolUseBlock("a", "nika:grep", json.RawMessage(`{"pattern":"q"}`))},
		results: []Block{ToolResultBlock("a", "r", false)},
	}), Tools: []ToolDef{readTool, doneDef}}
	m := NewMock()
	first := ""
	done := make(chan string, 16)
	for range 16 {
		go func() {
			b, _ := json.Marshal(m.Complete(context.Background(), []Request{req, req}))
			done <- string(b)
		}()
	}
	for range 16 {
		got := <-done
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("outcomes differ:\n%s\n%s", first, got)
		}
	}
}
