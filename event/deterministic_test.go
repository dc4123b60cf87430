package event

import (
	"testing"
	"time"
)

func TestDeterministic(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"envelope",
			`{"attempt":1,"fields":{"status":"success"},"iteration":0,"kind":"task_completed","run_id":"r-1","seq":4,"task":"a","ts":"2026-11-30T12:00:00.123Z"}`,
			`{"attempt":1,"fields":{"status":"success"},"iteration":0,"kind":"task_completed","seq":4,"task":"a"}`},
		{"chain dropped, at its place after attempt or first",
			`{"attempt":2,"chain":"00ff","fields":{"chain":"data"},"kind":"task_started","run_id":"r","seq":2,"ts":"x"}`,
			`{"attempt":2,"fields":{"chain":"data"},"kind":"task_started","seq":2}`},
		{"chain dropped first",
			`{"chain":"00ff","fields":{},"kind":"log","seq":1}`,
			`{"fields":{},"kind":"log","seq":1}`},
		{"trailing newline",
			`{"fields":{},"kind":"log","run_id":"r","seq":1,"ts":"x"}` + "\n",
			`{"fields":{},"kind":"log","seq":1}`},
		{"top-level timing",
			`{"fields":{"state":"success","timing":{"duration_ms":12,"queued_ms":3}},"kind":"workflow_completed","run_id":"r","seq":9,"ts":"x"}`,
			`{"fields":{"state":"success"},"kind":"workflow_completed","seq":9}`},
		{"timing at depth, in objects and arrays",
			`{"fields":{"payload":{"a":{"timing":{"x":1},"keep":2},"l":[{"timing":{}},{"b":{"timing":{"y":[1]}}}]}},"kind":"user_event","seq":1}`,
			`{"fields":{"payload":{"a":{"keep":2},"l":[{},{"b":{}}]}},"kind":"user_event","seq":1}`},
		{"timing that is not an object is data",
			`{"fields":{"timing":"fast","n":{"timing":5},"z":{"timing":null},"l":{"timing":[1]}},"kind":"user_event","seq":1}`,
			`{"fields":{"l":{"timing":[1]},"n":{"timing":5},"timing":"fast","z":{"timing":null}},"kind":"user_event","seq":1}`},
		{"ts and run_id inside fields are data",
			`{"fields":{"ts":"t","run_id":"r","payload":{"ts":1,"run_id":2}},"kind":"user_event","run_id":"r","seq":1,"ts":"t"}`,
			`{"fields":{"payload":{"run_id":2,"ts":1},"run_id":"r","ts":"t"},"kind":"user_event","seq":1}`},
		{"timing outside fields is kept",
			`{"fields":{},"kind":"log","seq":1,"timing":{"x":1}}`,
			`{"fields":{},"kind":"log","seq":1,"timing":{"x":1}}`},
		{"unknown envelope keys kept, numbers verbatim",
			`{"extra":[1.50,1e3],"fields":{"big":12345678901234567890,"f":0.1},"kind":"log","seq":1}`,
			`{"extra":[1.50,1e3],"fields":{"big":12345678901234567890,"f":0.1},"kind":"log","seq":1}`},
		{"non-canonical input comes out canonical",
			`{ "seq" : 1, "kind":"log", "fields": {"b":"<&>","a":1}, "ts":"x" }`,
			`{"fields":{"a":1,"b":"<&>"},"kind":"log","seq":1}`},
		{"no fields", `{"kind":"log","seq":1,"ts":"x","run_id":"r"}`, `{"kind":"log","seq":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Deterministic([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDeterministicOfEncodedEvents(t *testing.T) {
	// Two runs that differ only in timing and identity compare equal; any other difference shows.
	a := Event{Seq: 2, TS: ts0, RunID: "r-a", Kind: TaskCompleted, Task: "t", Attempt: 1, Iteration: NoIteration,
		Fields: map[string]any{"status": "success", "timing": map[string]any{"duration_ms": 5}}}
	b := a
	b.TS, b.RunID = ts0.Add(time.Hour), "r-b"
	b.Fields = map[string]any{"status": "success", "timing": map[string]any{"duration_ms": 999}}
	c := b
	c.Attempt = 2
	da, db, dc := det(t, a), det(t, b), det(t, c)
	if da != db {
		t.Errorf("timing-only difference shows:\n%s\n%s", da, db)
	}
	if da == dc {
		t.Errorf("attempt difference hidden: %s", dc)
	}
}

func det(t *testing.T, e Event) string {
	t.Helper()
	line, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Deterministic(line)
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

func TestDeterministicErrors(t *testing.T) {
	for _, in := range []string{``, `null`, `[1]`, `"s"`, `{"a":1} {"b":2}`, `{"a":`, `{"a":1} x`} {
		if got, err := Deterministic([]byte(in)); err == nil {
			t.Errorf("Deterministic(%q) = %s, want an error", in, got)
		}
	}
}
