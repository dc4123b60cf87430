package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func upper(s string) string { return strings.ToUpper(s) }

func TestMaskValueDeep(t *testing.T) {
	in := map[string]any{
		"s":   "secret",
		"n":   1,
		"f":   2.5,
		"b":   true,
		"nil": nil,
		"num": json.Number("1.50"),
		"m": map[string]any{
			"inner": []any{"a", 1, map[string]any{"deep": "x", "k": []string{"y"}}},
			"ss":    map[string]string{"key": "v"},
		},
		"bytes": []byte("raw"),
	}
	got := MaskValue(in, upper)
	// Keys are masked too: a secret can be an object key (§2.3).
	want := map[string]any{
		"S":   "SECRET",
		"N":   1,
		"F":   2.5,
		"B":   true,
		"NIL": nil,
		"NUM": json.Number("1.50"),
		"M": map[string]any{
			"INNER": []any{"A", 1, map[string]any{"DEEP": "X", "K": []string{"Y"}}},
			"SS":    map[string]string{"KEY": "V"},
		},
		"BYTES": []byte("raw"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	// The input is untouched.
	if in["s"] != "secret" || in["m"].(map[string]any)["inner"].([]any)[0] != "a" ||
		in["m"].(map[string]any)["ss"].(map[string]string)["key"] != "v" {
		t.Errorf("input modified: %#v", in)
	}
	// A new value: changing the result does not reach the input.
	got.(map[string]any)["M"].(map[string]any)["INNER"].([]any)[1] = "changed"
	got.(map[string]any)["BYTES"].([]byte)[0] = 'X'
	if in["m"].(map[string]any)["inner"].([]any)[1] != 1 || string(in["bytes"].([]byte)) != "raw" {
		t.Error("result shares storage with the input")
	}
}

type payload struct {
	Name  string            `json:"name"`
	Tags  []string          `json:"tags"`
	Inner map[string]string `json:"inner"`
}

type label string

func TestMaskValueOtherTypes(t *testing.T) {
	in := map[string]any{
		"struct": payload{Name: "n", Tags: []string{"t"}, Inner: map[string]string{"k": "v"}},
		"raw":    json.RawMessage(`{"a":["x",1.0]}`),
		"typed":  []int{1, 2},
		"named":  label("l"),
		"time":   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	got := MaskValue(in, upper)
	want := map[string]any{
		"STRUCT": map[string]any{"NAME": "N", "TAGS": []any{"T"}, "INNER": map[string]any{"K": "V"}},
		"RAW":    map[string]any{"A": []any{"X", json.Number("1.0")}},
		"TYPED":  []any{json.Number("1"), json.Number("2")},
		"NAMED":  "L",
		"TIME":   "2026-01-02T03:04:05Z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestMaskValueNilMaskerIsIdentity(t *testing.T) {
	in := map[string]any{"s": "x"}
	got := MaskValue(in, nil)
	got.(map[string]any)["s"] = "y"
	if in["s"] != "y" {
		t.Error("nil masker: want v itself")
	}
	if MaskValue("s", nil) != "s" || MaskValue(nil, upper) != nil {
		t.Error("scalars")
	}
}

func TestMaskValueUnencodable(t *testing.T) {
	ch := make(chan int)
	if got := MaskValue(ch, upper); got != any(ch) {
		t.Errorf("got %v, want the value as is", got)
	}
	// A cycle does not hang or overflow the stack.
	cyc := map[string]any{}
	cyc["self"] = cyc
	_ = MaskValue(cyc, upper)
}

// dots masks two secrets the way the engine does (LANGUAGE.md §2.3): textually, by six U+2022.
func dots(s string) string {
	return strings.NewReplacer("hunter22", "••••••", "swordfish", "••••••").Replace(s)
}

// A secret that is a map key, or inside one, is masked at any depth and in both map shapes.
func TestMaskValueMasksSecretKeys(t *testing.T) {
	in := map[string]any{
		"hunter22":       "v",
		"token=hunter22": map[string]string{"swordfish": "hunter22"},
		"list":           []any{map[string]any{"x-swordfish": 1}},
	}
	got := MaskValue(in, dots)
	want := map[string]any{
		"••••••":       "v",
		"token=••••••": map[string]string{"••••••": "••••••"},
		"list":         []any{map[string]any{"x-••••••": 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
	b, err := json.Marshal(got)
	if err != nil || strings.Contains(string(b), "hunter22") || strings.Contains(string(b), "swordfish") {
		t.Fatalf("a secret leaked: %s %v", b, err)
	}
}

// Two distinct keys that mask to the same text both survive: in sorted order of the original keys the
// first keeps the masked text, the next ones get #2, #3, …, skipping a suffix that another key masks
// to. The result is the same whatever the map's iteration order.
func TestMaskValueCollidingKeysAllKept(t *testing.T) {
	want := map[string]any{
		"id-••••••":    "first",  // "id-hunter22" sorts before "id-swordfish"
		"id-••••••#3":  "second", // #2 is the literal key below
		"id-••••••#2":  "literal",
		"other":        "o",
		"••••••":       map[string]string{"••••••": "a", "••••••#2": "b"},
		"••••••#2":     "second top-level",
		"plain-••••••": "kept",
	}
	for range 50 { // fresh maps: Go randomises their iteration order
		in := map[string]any{
			"id-hunter22":  "first",
			"id-swordfish": "second",
			"id-••••••#2":  "literal",
			"other":        "o",
			"hunter22":     map[string]string{"hunter22": "a", "swordfish": "b"},
			"swordfish":    "second top-level",
			"plain-••••••": "kept",
		}
		got := MaskValue(in, dots)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got  %#v\nwant %#v", got, want)
		}
	}
	// map[string]string too, with every key colliding.
	if got := MaskValue(map[string]string{"a": "x", "b": "y"}, func(string) string { return "k" }); !reflect.DeepEqual(got, map[string]string{"k": "k", "k#2": "k"}) {
		t.Fatalf("constant masker: %#v", got)
	}
}

// short masks the secrets "task" and "stat" (LANGUAGE.md §2.3: any value of 4 bytes or more is a secret),
// which are inside the engine's own keys tasks and status.
func short(s string) string {
	return strings.NewReplacer("task", "••••••", "stat", "••••••").Replace(s)
}

// The report's structure is never masked, whatever the secrets: only its values, and the keys of the user
// data in it (a task's output, the outputs, usage's model names), colliding ones suffixed as MaskValue does.
func TestMaskReportKeepsEngineKeys(t *testing.T) {
	errValue := func() map[string]any {
		return map[string]any{"code": "NIKA-INVOKE-002", "category": "tool_error", "message": "bad task", "transient": false,
			"task_id": "fetch", "attempt": 1, "details": map[string]any{
				"tool":           "nika:stat",
				"violations":     []any{map[string]any{"path": "/task", "message": "stat"}},
				"partial_output": map[string]any{"task": "stat"},
			}}
	}
	rep := map[string]any{
		"run_id": "r-1", "workflow": "w", "workflow_state": "failure", "seed": uint64(0),
		"tasks": map[string]any{
			"fetch": map[string]any{"status": "success", "error": nil,
				"output": map[string]any{"task": "stat", "tasks": []any{"status"}, "••••••s": 1, "n": map[string]any{"stat": true}}},
			"other": map[string]any{"status": "failure", "output": nil, "error": errValue(),
				"usage": map[string]any{"mock/task": map[string]any{"requests": 1, "input_tokens": 2, "output_tokens": 3, "unreported": 0}}},
		},
		"outputs": map[string]any{"stats": "a task"},
		"usage":   map[string]any{"mock/task": map[string]any{"requests": 1, "input_tokens": 2, "output_tokens": 3, "unreported": 0}},
		"error":   errValue(),
	}
	maskedErr := map[string]any{"code": "NIKA-INVOKE-002", "category": "tool_error", "message": "bad ••••••", "transient": false,
		"task_id": "fetch", "attempt": 1, "details": map[string]any{
			"tool":           "nika:••••••",
			"violations":     []any{map[string]any{"path": "/••••••", "message": "••••••"}},
			"partial_output": map[string]any{"••••••": "••••••"},
		}}
	usage := map[string]any{"mock/••••••": map[string]any{"requests": 1, "input_tokens": 2, "output_tokens": 3, "unreported": 0}}
	want := map[string]any{
		"run_id": "r-1", "workflow": "w", "workflow_state": "failure", "seed": uint64(0),
		"tasks": map[string]any{
			"fetch": map[string]any{"status": "success", "error": nil,
				// "tasks" masks to "••••••s", like the literal key "••••••s" after it in sorted order
				// (U+2022 is above ASCII), which therefore becomes "••••••s#2".
				"output": map[string]any{"••••••": "••••••", "••••••s": []any{"••••••us"}, "••••••s#2": 1, "n": map[string]any{"••••••": true}}},
			"other": map[string]any{"status": "failure", "output": nil, "error": maskedErr, "usage": usage},
		},
		"outputs": map[string]any{"••••••s": "a ••••••"},
		"usage":   usage,
		"error":   maskedErr,
	}
	for range 20 { // Go randomises map order; the result must not depend on it
		if got := MaskReport(rep, short); !reflect.DeepEqual(got, want) {
			t.Fatalf("got  %#v\nwant %#v", got, want)
		}
	}
	if rep["tasks"].(map[string]any)["fetch"].(map[string]any)["output"].(map[string]any)["task"] != "stat" {
		t.Error("the report was modified")
	}
	if MaskReport(rep, nil)["tasks"] == nil || MaskReport(nil, short) != nil {
		t.Error("nil masker or nil report")
	}
}

// An event's field names are the engine's (D18) and are never masked; the keys of the user data in it
// (workflow_started's vars, user_event's payload, log's data) are.
func TestSinkMaskKeepsFieldKeys(t *testing.T) {
	var out bytes.Buffer
	s := NewNDJSON(&out).WithMasker(short)
	mem := NewMemory().WithMasker(short)
	sink := Fanout{s, mem}
	sink.Emit(Event{Seq: 1, TS: ts0, RunID: "r", Kind: WorkflowStarted, Iteration: NoIteration,
		Fields: map[string]any{"workflow": "w", "tasks": 2, "seed": 0, "vars": map[string]any{"stat_dir": "/tmp/stat"}}})
	sink.Emit(Event{Seq: 2, TS: ts0, RunID: "r", Kind: TaskCompleted, Task: "task_a", Iteration: NoIteration,
		Fields: map[string]any{"status": "success", "timing": map[string]any{"duration_ms": 1}}})
	sink.Emit(Event{Seq: 3, TS: ts0, RunID: "r", Kind: TaskFailed, Task: "t", Attempt: 1, Iteration: 0,
		Fields: map[string]any{"code": "NIKA-EXEC-001", "category": "exec_error", "transient": false, "message": "task stat", "timing": map[string]any{"duration_ms": 1}}})
	sink.Emit(Event{Seq: 4, TS: ts0, RunID: "r", Kind: UserEvent, Task: "t", Iteration: NoIteration,
		Fields: map[string]any{"event_type": "status", "payload": map[string]any{"task": 1, "stat": 2, "x": map[string]any{"tasks": "ok"}}}})
	sink.Emit(Event{Seq: 5, TS: ts0, RunID: "r", Kind: Log, Task: "t", Iteration: NoIteration,
		Fields: map[string]any{"level": "info", "message": "m", "data": map[string]any{"status": "stat"}}})
	want := `{"fields":{"seed":0,"tasks":2,"vars":{"••••••_dir":"/tmp/••••••"},"workflow":"w"},"kind":"workflow_started","run_id":"r","seq":1,"ts":"2026-11-30T12:00:00.123Z"}
{"fields":{"status":"success","timing":{"duration_ms":1}},"kind":"task_completed","run_id":"r","seq":2,"task":"task_a","ts":"2026-11-30T12:00:00.123Z"}
{"attempt":1,"fields":{"category":"exec_error","code":"NIKA-EXEC-001","message":"•••••• ••••••","timing":{"duration_ms":1},"transient":false},"iteration":0,"kind":"task_failed","run_id":"r","seq":3,"task":"t","ts":"2026-11-30T12:00:00.123Z"}
{"fields":{"event_type":"••••••us","payload":{"x":{"••••••s":"ok"},"••••••":2,"••••••#2":1}},"kind":"user_event","run_id":"r","seq":4,"task":"t","ts":"2026-11-30T12:00:00.123Z"}
{"fields":{"data":{"••••••us":"••••••"},"level":"info","message":"m"},"kind":"log","run_id":"r","seq":5,"task":"t","ts":"2026-11-30T12:00:00.123Z"}
`
	if got := unchain(t, out.String()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var joined bytes.Buffer
	for _, l := range mem.Lines() {
		joined.Write(l)
		joined.WriteByte('\n')
	}
	if joined.String() != out.String() {
		t.Errorf("Memory.Lines:\n%s\nNDJSON:\n%s", joined.String(), out.String())
	}
}

// nika:inspect's records keep the task ids, the record keys and the binding names; the output, the
// bindings' values and an error's partial_output are user data.
func TestMaskRecordsKeepsRecordKeys(t *testing.T) {
	recs := map[string]any{"task": map[string]any{
		"status": "failure", "started_at": "stat", "output": map[string]any{"stat": 1},
		"stats": map[string]any{"task": "x"},
		"error": map[string]any{"code": "NIKA-EXEC-001", "message": "stat", "details": map[string]any{
			"stat": 1, "partial_output": map[string]any{"task": "y"}}},
	}}
	want := map[string]any{"task": map[string]any{
		"status": "failure", "started_at": "••••••", "output": map[string]any{"••••••": 1},
		"stats": map[string]any{"••••••": "x"},
		"error": map[string]any{"code": "NIKA-EXEC-001", "message": "••••••", "details": map[string]any{
			"stat": 1, "partial_output": map[string]any{"••••••": "y"}}},
	}}
	if got := MaskRecords(recs, short); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
	if MaskRecords(nil, short) != nil || MaskRecords(recs, nil)["task"] == nil {
		t.Error("nil masker or nil records")
	}
}
