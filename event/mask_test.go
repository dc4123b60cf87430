package event

import (
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
