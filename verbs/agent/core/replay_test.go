package core

import (
	"encoding/json"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// input is one journaled input of a run: what a journal replay (issue 15) or a Temporal history
// (issue 16) holds. Exactly one field is set.
type input struct {
	Reply    *Reply      `json:",omitempty"`
	Results  []Result    `json:",omitempty"`
	Cancel   *spec.Error `json:",omitempty"`
	Next     bool        `json:",omitempty"`
	Resolved bool        `json:",omitempty"`
}

// drive feeds inputs to a fresh loop armed with a and returns every Step, JSON-encoded.
func drive(t *testing.T, a Arming, inputs []input) []string {
	t.Helper()
	l, err := New(a)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	record := func(st Step) {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("a Step is not plain data: %v", err)
		}
		out = append(out, string(b))
	}
	record(l.Start())
	for _, in := range inputs {
		switch {
		case in.Next:
			record(l.Next())
		case in.Reply != nil:
			record(l.Replied(*in.Reply))
		case in.Resolved:
			record(l.Resolved(in.Results))
		case in.Cancel != nil:
			record(l.Cancel(in.Cancel))
		}
	}
	return out
}

func reply(usage int, blocks ...provider.Block) *Reply {
	return &Reply{Response: &provider.Response{Message: provider.Message{Role: provider.RoleAssistant, Blocks: blocks},
		Usage: provider.Usage{InputTokens: usage, OutputTokens: usage, Reported: true}}}
}

// The arming, the inputs and the steps are plain data: a run replayed from their JSON (as a journal
// or a workflow history holds them) makes the same decisions, byte for byte.
func TestReplayFromJournalMakesTheSameSteps(t *testing.T) {
	a := Arming{Model: "test/m", Prompt: "hash it", MaxTurns: 10, Blame: BlameContract, Tools: []string{"nika:*"},
		Schema:   map[string]any{"type": "object", "required": []any{"h"}},
		Universe: []provider.ToolDef{{Name: "nika:hash", Description: "hash"}, {Name: "nika:log"}}}
	inputs := []input{
		{Next: true},
		{Reply: reply(3, provider.TextBlock("hashing"), provider.ToolUseBlock("a", "nika:hash", json.RawMessage(`{"content":"x"}`)),
			provider.ToolUseBlock("b", "nika:log", json.RawMessage(`{}`)))},
		{Resolved: true, Results: []Result{{Content: "2d71"}, {Content: "NIKA-BUILTIN-001 · no", Err: spec.NewError("NIKA-BUILTIN-001", "no", nil),
			Events: []Emitted{{Kind: "log", Fields: map[string]any{"message": "m"}}}}}},
		{Next: true},
		{Reply: reply(4, provider.TextBlock("the hash is 2d71"))},
		{Reply: reply(5, provider.TextBlock(`{"h":"2d71"}`))},
	}
	live := drive(t, a, inputs)

	var a2 Arming
	var inputs2 []input
	for _, x := range []struct{ v, into any }{{a, &a2}, {inputs, &inputs2}} {
		b, err := json.Marshal(x.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, x.into); err != nil {
			t.Fatal(err)
		}
	}
	replayed := drive(t, a2, inputs2)
	if len(live) != len(replayed) {
		t.Fatalf("%d steps live, %d replayed", len(live), len(replayed))
	}
	for i := range live {
		if live[i] != replayed[i] {
			t.Fatalf("step %d differs:\n live %s\nreplay %s", i, live[i], replayed[i])
		}
	}
	var last Step
	if err := json.Unmarshal([]byte(live[len(live)-1]), &last); err != nil || last.Done == nil || last.Done.Err != nil || last.Done.Turns != 2 {
		t.Fatalf("last step %s", live[len(live)-1])
	}
}
