package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/workflow"
)

// obsRec is a per-run Observer that records every event it receives.
type obsRec struct{ evs []Event }

func (o *obsRec) OnEvent(e Event) { o.evs = append(o.evs, e) }

// AGENT.md §13.6: first run_started, last finished with the output's turns and tokens; every turn
// has turn_started, tools_selected, budget_checkpoint; tool_completed{name: nika:read, is_error: false}.
func TestObserverSeesBracketedDecisionSequence(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := providertest.NewScripted(
		usageOf(providertest.ToolCalls("", providertest.Call{ID: "c-1", Name: "nika:read", Input: `{"path":"notes.txt"}`}), 10, 5),
		usageOf(providertest.Reply("it says hello"), 20, 7),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "read notes.txt", "tools": []any{"nika:read"}}, 8)
	job.RunDir = dir
	var runs []*obsRec
	v.Observe = func(workflow.Job) Observer {
		o := &obsRec{}
		runs = append(runs, o)
		return o
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if out.Output != "it says hello" {
		t.Fatalf("output %v", out.Output)
	}
	if len(runs) != 1 {
		t.Fatalf("Observe called %d times, want 1", len(runs))
	}
	evs := runs[0].evs
	kinds := make([]string, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
	}
	t.Logf("observed: %s", strings.Join(kinds, " "))

	// The output's turns and tokens: one usage entry per request, each stamped with its turn.
	turns, tokens := 0, 0
	for _, u := range out.Usage {
		tokens += u.InputTokens + u.OutputTokens
		turns = max(turns, u.Turn)
	}
	if turns != 2 || tokens != 42 {
		t.Fatalf("output usage: turns %d tokens %d (%+v)", turns, tokens, out.Usage)
	}

	if len(evs) < 2 || evs[0].Kind != EventRunStarted || evs[len(evs)-1].Kind != EventFinished {
		t.Fatalf("not bracketed run_started … finished: %v", kinds)
	}
	rs := evs[0].Fields
	if rs["model"] != job.Model || rs["universe"] == nil || rs["routed"] == nil {
		t.Fatalf("run_started fields %v", rs)
	}
	for i, e := range evs {
		if i > 0 && e.Kind == EventRunStarted || i < len(evs)-1 && e.Kind == EventFinished {
			t.Fatalf("%s at position %d: %v", e.Kind, i, kinds)
		}
	}
	fin := evs[len(evs)-1].Fields
	if fin["turns"] != turns || fin["total_tokens"] != tokens {
		t.Fatalf("finished %v, want turns %d total_tokens %d", fin, turns, tokens)
	}

	// Every turn has turn_started, tools_selected, budget_checkpoint, in that order.
	for turn := 1; turn <= turns; turn++ {
		var seq []string
		for _, e := range evs {
			if e.Turn == turn {
				seq = append(seq, e.Kind)
			}
		}
		if len(seq) < 3 || seq[0] != EventTurnStarted || seq[1] != EventToolsSelected || seq[2] != EventBudgetCheckpoint {
			t.Fatalf("turn %d events %v", turn, seq)
		}
	}

	var completed []map[string]any
	for _, e := range evs {
		if e.Kind == EventToolCompleted {
			completed = append(completed, e.Fields)
		}
	}
	if len(completed) != 1 || completed[0]["name"] != "nika:read" || completed[0]["is_error"] != false || completed[0]["turn"] != 1 {
		t.Fatalf("tool_completed %v", completed)
	}

	// The canonical stream is unchanged: no loop-only kinds reach job.Emit.
	for _, l := range ev.lines {
		for _, k := range []string{EventRunStarted, EventTurnStarted, EventFinished, EventToolCompleted} {
			if strings.HasPrefix(l, k+" ") {
				t.Fatalf("loop event %q reached the canonical stream", l)
			}
		}
	}
}
