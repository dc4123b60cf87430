package event

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

var ts0 = time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.UTC)

func TestAppendJSONEnvelope(t *testing.T) {
	const tail = `"kind":"task_started","run_id":"r-1","seq":7`
	const ts = `"ts":"2026-11-30T12:00:00.123Z"`
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{"bare", Event{Iteration: NoIteration},
			`{"fields":{},` + tail + `,` + ts + `}`},
		{"task", Event{Task: "join", Iteration: NoIteration},
			`{"fields":{},` + tail + `,"task":"join",` + ts + `}`},
		{"task attempt", Event{Task: "join", Attempt: 2, Iteration: NoIteration},
			`{"attempt":2,"fields":{},` + tail + `,"task":"join",` + ts + `}`},
		{"task attempt iteration", Event{Task: "join", Attempt: 1, Iteration: 3},
			`{"attempt":1,"fields":{},"iteration":3,` + tail + `,"task":"join",` + ts + `}`},
		{"iteration 0 is present", Event{Task: "join", Attempt: 1, Iteration: 0},
			`{"attempt":1,"fields":{},"iteration":0,` + tail + `,"task":"join",` + ts + `}`},
		{"iteration without attempt", Event{Task: "x", Iteration: 0},
			`{"fields":{},"iteration":0,` + tail + `,"task":"x",` + ts + `}`},
		{"attempt without task", Event{Attempt: 1, Iteration: NoIteration},
			`{"attempt":1,"fields":{},` + tail + `,` + ts + `}`},
		{"negative attempt and iteration absent", Event{Attempt: -4, Iteration: -2},
			`{"fields":{},` + tail + `,` + ts + `}`},
		{"fields", Event{Task: "join", Attempt: 1, Iteration: NoIteration,
			Fields: map[string]any{"status": "success", "timing": map[string]any{"duration_ms": 12}}},
			`{"attempt":1,"fields":{"status":"success","timing":{"duration_ms":12}},` + tail + `,"task":"join",` + ts + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.Seq, e.TS, e.RunID, e.Kind = 7, ts0, "r-1", TaskStarted
			got, err := e.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("invalid JSON: %s", got)
			}
			m, err := e.MarshalJSON()
			if err != nil || !bytes.Equal(m, got) {
				t.Errorf("MarshalJSON = %s, %v; want %s", m, err, got)
			}
		})
	}
}

func TestAppendJSONTimestamp(t *testing.T) {
	plus2 := time.FixedZone("X", 2*3600)
	minus5 := time.FixedZone("Y", -5*3600-30*60)
	tests := []struct {
		ts   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 14, 0, 0, 123_456_789, plus2), "2026-11-30T12:00:00.123Z"},  // truncated, not rounded
		{time.Date(2026, 11, 30, 6, 30, 0, 999_999_999, minus5), "2026-11-30T12:00:00.999Z"}, // no carry into the second
		{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), "2026-11-30T12:00:00.000Z"},         // always three digits
		{time.Date(2026, 12, 31, 23, 59, 59, 5_000_000, time.UTC), "2026-12-31T23:59:59.005Z"},
		{time.Date(2027, 1, 1, 0, 30, 0, 0, plus2), "2026-12-31T22:30:00.000Z"}, // the date moves too
		{time.Time{}, "0001-01-01T00:00:00.000Z"},
	}
	for _, tt := range tests {
		e := Event{Seq: 1, TS: tt.ts, RunID: "r", Kind: Log, Iteration: NoIteration}
		got, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"fields":{},"kind":"log","run_id":"r","seq":1,"ts":"` + tt.want + `"}`
		if string(got) != want {
			t.Errorf("%v: got %s, want %s", tt.ts, got, want)
		}
	}
}

func TestAppendJSONFieldsCanonical(t *testing.T) {
	e := Event{Seq: 1, TS: ts0, RunID: "r", Kind: UserEvent, Iteration: NoIteration, Fields: map[string]any{
		"payload": map[string]any{
			"z": []any{map[string]any{"b": 1, "a": 2.5}, "x"},
			"a": map[string]any{"y": true, "b": nil, "B": "upper"},
			"m": "<a&b> \u2028 \"q\"\n",
		},
		"event_type": "deploy",
	}}
	got, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fields":{"event_type":"deploy","payload":{"a":{"B":"upper","b":null,"y":true},` +
		`"m":"<a&b> ` + "\u2028" + ` \"q\"\n","z":[{"a":2.5,"b":1},"x"]}},"kind":"user_event","run_id":"r","seq":1,` +
		`"ts":"2026-11-30T12:00:00.123Z"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAppendJSONNoHTMLEscaping(t *testing.T) {
	e := Event{Seq: 3, TS: ts0, RunID: "<r&1>", Kind: Log, Task: "a<b>", Iteration: NoIteration,
		Fields: map[string]any{"message": "<a&b>", "<k>": "&"}}
	got, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fields":{"<k>":"&","message":"<a&b>"},"kind":"log","run_id":"<r&1>","seq":3,"task":"a<b>",` +
		`"ts":"2026-11-30T12:00:00.123Z"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAppendJSONAppendsAndFails(t *testing.T) {
	e := Event{Seq: 1, TS: ts0, RunID: "r", Kind: Log, Iteration: NoIteration}
	got, err := e.AppendJSON([]byte("prefix "))
	if err != nil || !bytes.HasPrefix(got, []byte(`prefix {"fields":{}`)) {
		t.Fatalf("got %s, %v", got, err)
	}

	bad := e
	bad.Fields = map[string]any{"x": math.NaN()}
	dst := []byte("keep")
	out, err := bad.AppendJSON(dst)
	if err == nil {
		t.Fatal("NaN: want an error")
	}
	if string(out) != "keep" {
		t.Errorf("dst after error = %q, want it unchanged", out)
	}
	if _, err := bad.MarshalJSON(); err == nil {
		t.Error("MarshalJSON: want an error")
	}
}

func TestKinds(t *testing.T) {
	// The wire names are the contract (D18, AGENT.md §10.1); pin them.
	kinds := map[string]string{
		WorkflowStarted: "workflow_started", WorkflowCompleted: "workflow_completed",
		WorkflowFailed: "workflow_failed", WorkflowCancelled: "workflow_cancelled",
		TaskStarted: "task_started", TaskRetrying: "task_retrying", TaskCompleted: "task_completed",
		TaskFailed: "task_failed", TaskSkipped: "task_skipped", TaskCancelled: "task_cancelled",
		InferCompleted: "infer_completed", ToolInvoked: "tool_invoked", Log: "log", UserEvent: "user_event",
		AgentToolsSelected: "agent_tools_selected", AgentNudge: "agent_nudge", AgentStalled: "agent_stalled",
		AgentComposeChecked: "agent_compose_checked", AgentBudgetCheckpoint: "agent_budget_checkpoint",
	}
	if len(kinds) != 19 {
		t.Errorf("%d distinct kinds, want 19", len(kinds))
	}
	for got, want := range kinds {
		if got != want {
			t.Errorf("kind %q, want %q", got, want)
		}
	}
}
