package event

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/nikahq/nika/spec/canon"
)

// Masker replaces secrets in a string (D24).
//
// JSON artefacts are masked per string value, and a record is never corrupted by it: the keys the engine
// writes — the D17 envelope, the D18 field names, the D22 report's structure (tasks, status, output, error,
// code, message, usage, …) — are never masked, whatever the secrets are (a secret "stat" must not turn
// "status" into "••••••us"). Every string value is masked, and so is every key of user data (a secret can
// be an object key, LANGUAGE.md §2.3). User data is what came from the workflow or a tool, and it sits at
// known places only:
//
//   - in the report (MaskReport): each task's output, the workflow's outputs, and the model names that
//     key usage (the task ids that key tasks are kept: they are identifiers, like the envelope's task);
//   - in an event (the sinks' masker): the fields vars (workflow_started), payload (user_event, from
//     nika:emit) and data (log, from nika:log);
//   - in an error's details, partial_output; the other details are the engine's (their codes define
//     them, violations' path and message included);
//   - anything given to MaskValue (stdout's outputs): all of it.
//
// The envelope itself is not masked, values included (task ids and run ids are not secrets). A field that
// starts carrying user data must be added to these places (reportPart, errorPart, fieldsPart); until then its
// keys are kept (its values are masked anyway).
type Masker func(string) string

// MaskValue returns a copy of v, all of it user data, in which every string value and every map key, at any
// depth, has gone through m; v is not modified. A nil m returns v itself. It is for values of the workflow
// (its outputs on stdout); a record the engine builds around such values goes through MaskReport or a
// sink's masker instead, which keep the engine's own keys.
//
// Two distinct keys of one map that mask to the same text are both kept: taking the original keys in
// sorted order, the first keeps the masked text and each later one gets "#2", "#3", … appended (a
// suffix that another key of the map masks to is skipped). The result therefore depends only on the
// map's content, never on iteration order, and no entry is silently dropped.
//
// The JSON shapes (map[string]any, []any, []string, map[string]string, scalars, json.Number) keep their
// types. Any other type (a struct, a typed slice, json.RawMessage, time.Time…) is first turned into
// its canonical JSON value — exactly what the encoder would write — so no string escapes the mask; such a
// value that cannot be encoded is returned as is (encoding it fails anyway). []byte is copied unmasked:
// it is written as base64, in which a secret would not be recognised anyway.
func MaskValue(v any, m Masker) any {
	if m == nil {
		return v
	}
	return maskValue(v, m, userData, 0)
}

// MaskReport returns a masked copy of a D22 report (planner.Result.Report): every string value is masked;
// the report's keys are kept, and the keys of the user data in it (task outputs, outputs, usage's model
// names) are masked as MaskValue does. rep is not modified; a nil m returns rep itself.
func MaskReport(rep map[string]any, m Masker) map[string]any {
	if m == nil || rep == nil {
		return rep
	}
	out, _ := maskValue(rep, m, reportPart, 0).(map[string]any)
	return out
}

// MaskRecords returns a masked copy of the task records nika:inspect's records view answers (LANGUAGE.md
// §7.2: task id to its §3.13 record): every string value is masked; the task ids, the record's keys
// (status, output, error, started_at, …) and its binding names are kept, and the keys of the user data
// in it (the output, the bindings' values, the error's partial_output) are masked as MaskValue does. recs
// is not modified; a nil m returns recs itself.
func MaskRecords(recs map[string]any, m Masker) map[string]any {
	if m == nil || recs == nil {
		return recs
	}
	out, _ := maskValue(recs, m, recordsPart, 0).(map[string]any)
	return out
}

// maskFields masks an event's payload (its keys are the engine's; see Masker for the user data in it);
// nil in, nil out.
func maskFields(f map[string]any, m Masker) map[string]any {
	if m == nil || f == nil {
		return f
	}
	return maskValue(f, m, fieldsPart, 0).(map[string]any)
}

// part says which keys of a value are user data. A nil *part is the engine's, all the way down: its keys are
// kept, its values masked.
type part struct {
	keys   bool             // this object's keys are user data: masked, colliding ones suffixed
	fields map[string]*part // the part under each of these keys…
	other  *part            // …and under any other key (and under every key when keys is set)
}

// at is the part under key k of an object of part p.
func (p *part) at(k string) *part {
	if p == nil {
		return nil
	}
	if f, ok := p.fields[k]; ok {
		return f
	}
	return p.other
}

var (
	// userData is a value of the workflow or a tool: every key at any depth is masked.
	userData = func() *part { p := &part{keys: true}; p.other = p; return p }()

	errorPart = &part{fields: map[string]*part{"details": {fields: map[string]*part{"partial_output": userData}}}}
	usagePart = &part{keys: true} // {"<model>": {requests, input_tokens, …}}

	reportPart = &part{fields: map[string]*part{
		"tasks": {other: &part{fields: map[string]*part{ // "<task id>": the task's entry
			"output": userData, "error": errorPart, "usage": usagePart,
		}}},
		"outputs": userData,
		"usage":   usagePart,
		"error":   errorPart,
	}}

	// recordsPart is "<task id>": its record; a record's keys are the engine's and the binding names (the
	// workflow's identifiers), and everything under them but the error is user data.
	recordsPart = &part{other: &part{fields: map[string]*part{"error": errorPart}, other: userData}}

	fieldsPart = &part{fields: map[string]*part{"vars": userData, "payload": userData, "data": userData}}
)

func maskValue(v any, m Masker, p *part, depth int) any {
	if depth >= canon.MaxDepth {
		return v // a cycle or absurd depth: left for the encoder to refuse
	}
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
		float32, float64, json.Number:
		return x
	case string:
		return m(x)
	case map[string]any:
		if x == nil {
			return x
		}
		if p != nil && p.keys {
			return maskMap(x, m, func(e any) any { return maskValue(e, m, p.other, depth+1) })
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = maskValue(e, m, p.at(k), depth+1)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e, m, p, depth+1)
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = m(e)
		}
		return out
	case map[string]string:
		if x == nil {
			return x
		}
		if p != nil && p.keys {
			return maskMap(x, m, func(e string) string { return m(e) })
		}
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = m(e)
		}
		return out
	case []byte:
		if x == nil {
			return x
		}
		return bytes.Clone(x)
	default:
		b, err := canon.Marshal(x)
		if err != nil {
			return x
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var g any
		if err := dec.Decode(&g); err != nil {
			return x
		}
		return maskValue(g, m, p, depth)
	}
}

// maskMap masks x's keys with m and its values with val (see MaskValue for colliding keys).
func maskMap[V any](x map[string]V, m Masker, val func(V) V) map[string]V {
	out := make(map[string]V, len(x))
	for k, e := range x {
		mk := m(k)
		if _, dup := out[mk]; dup {
			return maskMapColliding(x, m, val) // rare: redo in sorted key order
		}
		out[mk] = val(e)
	}
	return out
}

// maskMapColliding is maskMap for a map in which two keys mask to the same text: keys are taken in
// sorted order, and a masked key already used gets the first free "#n" suffix (n ≥ 2) that is neither
// used nor the masked text of another key.
func maskMapColliding[V any](x map[string]V, m Masker, val func(V) V) map[string]V {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	masked := make([]string, len(keys))
	natural := make(map[string]bool, len(keys))
	for i, k := range keys {
		masked[i] = m(k)
		natural[masked[i]] = true
	}
	out := make(map[string]V, len(x))
	for i, k := range keys {
		mk := masked[i]
		if _, used := out[mk]; used {
			for n := 2; ; n++ {
				c := mk + "#" + strconv.Itoa(n)
				if _, taken := out[c]; !taken && !natural[c] {
					mk = c
					break
				}
			}
		}
		out[mk] = val(x[k])
	}
	return out
}
