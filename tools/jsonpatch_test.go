package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// jv decodes a JSON text into the nika value model (integers as int).
func jv(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	n, err := normalize(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestJSONDiffRules(t *testing.T) {
	cases := []struct {
		name          string
		before, after string
		want          string // the expected patch, as JSON
	}{
		{"equal scalars", `1`, `1`, `[]`},
		{"equal documents", `{"a":[1,{"b":null}],"c":"x"}`, `{"c":"x","a":[1,{"b":null}]}`, `[]`},
		{"int and float are one number", `{"n":1,"m":[2.0]}`, `{"n":1.0,"m":[2]}`, `[]`},
		{"root scalar change", `1`, `2`, `[{"op":"replace","path":"","value":2}]`},
		{"root kind change", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","value":[1]}]`},
		{"null to value is a kind change", `{"a":null}`, `{"a":0}`, `[{"op":"replace","path":"/a","value":0}]`},
		{"string to number", `{"a":"1"}`, `{"a":1}`, `[{"op":"replace","path":"/a","value":1}]`},
		{"bool change", `[true]`, `[false]`, `[{"op":"replace","path":"/0","value":false}]`},
		{"keys in sorted order", `{"b":1,"d":1,"a":1}`, `{"c":2,"a":2,"d":1}`,
			`[{"op":"replace","path":"/a","value":2},{"op":"remove","path":"/b"},{"op":"add","path":"/c","value":2}]`},
		{"nested recursion", `{"x":{"y":{"z":1,"w":2}}}`, `{"x":{"y":{"z":3}}}`,
			`[{"op":"remove","path":"/x/y/w"},{"op":"replace","path":"/x/y/z","value":3}]`},
		{"added object is added whole", `{}`, `{"o":{"p":[1]}}`, `[{"op":"add","path":"/o","value":{"p":[1]}}]`},
		{"array grows: ascending adds", `[1,2]`, `[1,3,4,5]`,
			`[{"op":"replace","path":"/1","value":3},{"op":"add","path":"/2","value":4},{"op":"add","path":"/3","value":5}]`},
		{"array shrinks: removes from the top", `[1,2,3,4]`, `[0]`,
			`[{"op":"replace","path":"/0","value":0},{"op":"remove","path":"/3"},{"op":"remove","path":"/2"},{"op":"remove","path":"/1"}]`},
		{"array emptied", `{"a":[1,2]}`, `{"a":[]}`, `[{"op":"remove","path":"/a/1"},{"op":"remove","path":"/a/0"}]`},
		{"array filled", `[]`, `["x","y"]`, `[{"op":"add","path":"/0","value":"x"},{"op":"add","path":"/1","value":"y"}]`},
		{"no move detection: a shift rewrites", `[1,2,3]`, `[2,3]`,
			`[{"op":"replace","path":"/0","value":2},{"op":"replace","path":"/1","value":3},{"op":"remove","path":"/2"}]`},
		{"pointer escaping", `{"a/b":1,"m~n":1,"~1":1}`, `{"a/b":2,"m~n":2,"~1":2}`,
			`[{"op":"replace","path":"/a~1b","value":2},{"op":"replace","path":"/m~0n","value":2},{"op":"replace","path":"/~01","value":2}]`},
		{"empty key", `{"":1}`, `{"":2}`, `[{"op":"replace","path":"/","value":2}]`},
		{"object to array in a member", `{"a":{}}`, `{"a":[]}`, `[{"op":"replace","path":"/a","value":[]}]`},
		{"float change", `1.5`, `1.25`, `[{"op":"replace","path":"","value":1.25}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:json_diff", Args: map[string]any{"before": jv(t, c.before), "after": jv(t, c.after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkCatalogOutput(t, "nika:json_diff", out)
			if want := jv(t, c.want); !reflect.DeepEqual(out, want) {
				got, _ := json.Marshal(out)
				t.Errorf("patch = %s, want %s", got, c.want)
			}
		})
	}
}

func TestJSONDiffBytesAndLargeNumbers(t *testing.T) {
	cases := []struct {
		name          string
		before, after any
		want          []any
	}{
		{"equal bytes", []byte{1, 2}, []byte{1, 2}, []any{}},
		{"different bytes", []byte{1, 2}, []byte{1, 3}, []any{patchOp("replace", "", []byte{1, 3})}},
		{"bytes vs string is a kind change", []byte("a"), "a", []any{patchOp("replace", "", "a")}},
		// 2^53+1 is not representable as a float64: the float 2^53 differs from it.
		{"large int vs rounded float", 9007199254740993, 9007199254740992.0, []any{patchOp("replace", "", 9007199254740992.0)}},
		{"large int equals its exact float", 9007199254740992, 9007199254740992.0, []any{}},
		{"2^63 float is no int", 9223372036854775807, 9223372036854775808.0, []any{patchOp("replace", "", 9223372036854775808.0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:json_diff", Args: map[string]any{"before": c.before, "after": c.after}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, c.want) {
				t.Errorf("patch = %#v, want %#v", out, c.want)
			}
		})
	}
}

func TestJSONDiffArgs(t *testing.T) {
	for name, args := range map[string]map[string]any{
		"missing after":  {"before": 1},
		"missing before": {"after": 1},
		"unknown arg":    {"before": 1, "after": 2, "extra": 3},
	} {
		if _, err := exec(t, Call{Name: "nika:json_diff", Args: args}); codeOf(t, err) != "NIKA-INVOKE-002" {
			t.Errorf("%s: err = %v, want NIKA-INVOKE-002", name, err)
		}
	}
	// null is a value like any other.
	out, err := exec(t, Call{Name: "nika:json_diff", Args: map[string]any{"before": nil, "after": nil}})
	if err != nil || !reflect.DeepEqual(out, []any{}) {
		t.Errorf("null vs null: %v, %v", out, err)
	}
}

// TestJSONDiffRoundTrip: over random pairs of values, applying the produced patch to `before`
// with an independent RFC 6902 applier yields `after`, and diffing a value with itself is [].
func TestJSONDiffRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 902))
	for i := range 3000 {
		before := randomValue(rng, 4)
		var after any
		if i%3 == 0 {
			after = randomValue(rng, 4)
		} else {
			after = mutate(rng, before, 4)
		}
		out, err := exec(t, Call{Name: "nika:json_diff", Args: map[string]any{"before": before, "after": after}})
		if err != nil {
			t.Fatal(err)
		}
		ops := out.([]any)
		got, err := applyPatch(before, ops)
		if err != nil {
			t.Fatalf("case %d: the patch does not apply: %v\nbefore %s\nafter  %s\npatch  %s", i, err, js(before), js(after), js(ops))
		}
		if !sameValue(got, after) {
			t.Fatalf("case %d: patched %s, want %s\nbefore %s\npatch  %s", i, js(got), js(after), js(before), js(ops))
		}
		if self, _ := exec(t, Call{Name: "nika:json_diff", Args: map[string]any{"before": before, "after": before}}); len(self.([]any)) != 0 {
			t.Fatalf("case %d: diff with itself = %s", i, js(self))
		}
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var randomKeys = []string{"a", "b", "c", "a/b", "~", "~1", "", "é"}

func randomValue(rng *rand.Rand, depth int) any {
	n := 8
	if depth <= 0 {
		n = 6
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return rng.IntN(5) - 2
	case 3:
		return float64(rng.IntN(5)) / 2 // 0, 0.5, 1, 1.5, 2: some equal an int
	case 4:
		return randomKeys[rng.IntN(len(randomKeys))]
	case 5:
		return []byte{byte(rng.IntN(3))}
	case 6:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomValue(rng, depth-1)
		}
		return a
	default:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[randomKeys[rng.IntN(len(randomKeys))]] = randomValue(rng, depth-1)
		}
		return m
	}
}

// mutate returns a copy of v with random local changes, so that diffs recurse deeply.
func mutate(rng *rand.Rand, v any, depth int) any {
	if rng.IntN(6) == 0 {
		return randomValue(rng, depth)
	}
	switch x := v.(type) {
	case []any:
		out := make([]any, 0, len(x)+2)
		for _, e := range x {
			switch rng.IntN(5) {
			case 0: // dropped
			case 1:
				out = append(out, mutate(rng, e, depth-1))
			default:
				out = append(out, e)
			}
		}
		for range rng.IntN(3) {
			out = append(out, randomValue(rng, depth-1))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch rng.IntN(5) {
			case 0: // dropped
			case 1:
				out[k] = mutate(rng, e, depth-1)
			default:
				out[k] = e
			}
		}
		if rng.IntN(2) == 0 {
			out[randomKeys[rng.IntN(len(randomKeys))]] = randomValue(rng, depth-1)
		}
		return out
	}
	return v
}

// sameValue is deep equality with numbers compared by value.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !sameValue(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case int:
		switch y := b.(type) {
		case int:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	}
	return a == b
}

// applyPatch is a small, strict RFC 6902 applier for add, remove and replace (the only
// operations json_diff produces): a missing target of remove or replace is an error, and add
// into an array inserts at the index (len allowed), shifting the rest. It never modifies doc.
func applyPatch(doc any, ops []any) (any, error) {
	for i, o := range ops {
		op, _ := o.(map[string]any)
		name, _ := op["op"].(string)
		p, ok := op["path"].(string)
		if !ok {
			return nil, fmt.Errorf("op %d: no path", i)
		}
		value, hasValue := op["value"]
		if (name == "remove") == hasValue {
			return nil, fmt.Errorf("op %d: value present=%v for %s", i, hasValue, name)
		}
		tokens, err := parsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("op %d: %w", i, err)
		}
		if doc, err = applyAt(doc, tokens, name, value); err != nil {
			return nil, fmt.Errorf("op %d (%s %s): %w", i, name, p, err)
		}
	}
	return doc, nil
}

func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("pointer %q does not start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("bad escape in %q", s)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// applyAt returns a copy of doc with the operation applied at tokens.
func applyAt(doc any, tokens []string, op string, value any) (any, error) {
	if len(tokens) == 0 {
		switch op {
		case "add", "replace":
			return value, nil
		}
		return nil, fmt.Errorf("cannot %s the root", op)
	}
	tok, rest := tokens[0], tokens[1:]
	switch x := doc.(type) {
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		for k, v := range x {
			out[k] = v
		}
		cur, exists := x[tok]
		if len(rest) > 0 {
			if !exists {
				return nil, fmt.Errorf("no member %q", tok)
			}
			v, err := applyAt(cur, rest, op, value)
			out[tok] = v
			return out, err
		}
		switch op {
		case "add":
			out[tok] = value
		case "replace":
			if !exists {
				return nil, fmt.Errorf("replace of a missing member %q", tok)
			}
			out[tok] = value
		case "remove":
			if !exists {
				return nil, fmt.Errorf("remove of a missing member %q", tok)
			}
			delete(out, tok)
		}
		return out, nil
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || (tok != "0" && strings.HasPrefix(tok, "0")) {
			return nil, fmt.Errorf("bad array index %q", tok)
		}
		out := append([]any(nil), x...)
		if len(rest) > 0 {
			if i >= len(x) {
				return nil, fmt.Errorf("index %d out of range", i)
			}
			v, err := applyAt(x[i], rest, op, value)
			out[i] = v
			return out, err
		}
		switch op {
		case "add":
			if i > len(x) {
				return nil, fmt.Errorf("add at %d beyond the end %d", i, len(x))
			}
			out = append(out[:i], append([]any{value}, x[i:]...)...)
		case "replace":
			if i >= len(x) {
				return nil, fmt.Errorf("replace at %d out of range", i)
			}
			out[i] = value
		case "remove":
			if i >= len(x) {
				return nil, fmt.Errorf("remove at %d out of range", i)
			}
			out = append(out[:i], x[i+1:]...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot descend into %s", kindOf(doc))
}

// TestJSONMergePatchRFC7396 runs the examples of RFC 7396 Appendix A.
func TestJSONMergePatchRFC7396(t *testing.T) {
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, c := range cases {
		t.Run(c.target+" + "+c.patch, func(t *testing.T) {
			target := jv(t, c.target)
			out, err := exec(t, Call{Name: "nika:json_merge_patch", Args: map[string]any{"target": target, "patch": jv(t, c.patch)}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, jv(t, c.want)) {
				t.Errorf("merged = %s, want %s", js(out), c.want)
			}
		})
	}
}

func TestJSONMergePatchDoesNotAliasTheTarget(t *testing.T) {
	// Execute copies its arguments while normalizing them, so the merge itself is called here.
	inner := map[string]any{"x": 1}
	target := map[string]any{"a": inner, "keep": []any{1}}
	out := mergePatch(target, map[string]any{"a": map[string]any{"x": nil, "y": 2}, "keep": nil})
	if want := map[string]any{"a": map[string]any{"y": 2}}; !reflect.DeepEqual(out, want) {
		t.Errorf("merged = %s", js(out))
	}
	if !reflect.DeepEqual(target, map[string]any{"a": map[string]any{"x": 1}, "keep": []any{1}}) || len(inner) != 1 {
		t.Errorf("the target was modified: %v", target)
	}
	if _, err := exec(t, Call{Name: "nika:json_merge_patch", Args: map[string]any{"target": 1}}); codeOf(t, err) != "NIKA-INVOKE-002" {
		t.Errorf("missing patch: %v", err)
	}
}
