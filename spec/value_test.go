package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The D12 limits bound every literal value, so a file without a single
// alias can pass them: the message then says what the value has and what
// the limit is, and mentions aliases only when expanding them is what
// passed it.
func TestValueLimitMessages(t *testing.T) {
	list := "[" + strings.Repeat("1,", 10000) + "1]" // 10,001 items
	huge := strings.Repeat("z", 1<<20+1)
	laughs := "  l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i < 6; i++ {
		n := string(rune('0' + i))
		p := string(rune('0' + i - 1))
		laughs += "  l" + n + ": &a" + n + " [*a" + p + ", *a" + p + ", *a" + p + ", *a" + p + ", *a" + p + ", *a" + p + ", *a" + p + ", *a" + p + ", *a" + p + "]\n"
	}
	const limits = "; a literal value may have at most 10,000 nodes and 1 MiB, nested at most 1,000 deep"
	for _, tc := range []struct {
		name, src, path, message, detail string
	}{
		{"var default, no aliases", "nika: v1\nworkflow: w\nvars:\n  big: " + list + "\ntasks:\n  - id: a\n    exec: { command: [\"true\"] }\n",
			"vars.big", "the value has more than 10,000 nodes" + limits, "Make the value smaller, or keep the data in a file"},
		{"with value, no aliases", "nika: v1\nworkflow: w\ntasks:\n  - id: a\n    with: { k: " + list + " }\n    exec: { command: [\"echo\", \"${{ with.k }}\"] }\n",
			"tasks[0].with.k", "the value has more than 10,000 nodes" + limits, "Make the value smaller"},
		{"env value over 1 MiB", "nika: v1\nworkflow: w\nenv:\n  BIG: " + huge + "\ntasks:\n  - id: a\n    exec: { command: [\"true\"] }\n",
			"env.BIG", "the value has more than 1 MiB of strings, keys and numbers" + limits, "Make the value smaller"},
		{"with value over 1 MiB", "nika: v1\nworkflow: w\ntasks:\n  - id: a\n    with: { k: " + huge + " }\n    exec: { command: [\"echo\", \"${{ with.k }}\"] }\n",
			"tasks[0].with.k", "the value has more than 1 MiB of strings, keys and numbers" + limits, "Make the value smaller"},
		{"aliases in a var default", "nika: v1\nworkflow: lol\nvars:\n" + laughs + "tasks:\n  - id: a\n    exec: { command: [\"true\"] }\n",
			"vars.l5", "with its aliases expanded, the value has more than 10,000 nodes" + limits, "Reuse smaller anchors"},
		{"aliases in a with value", "nika: v1\nworkflow: lol\nvars:\n" + laughs + "tasks:\n  - id: a\n    with: { bomb: *a5 }\n    exec: { command: [\"echo\", \"${{ with.bomb }}\"] }\n",
			"tasks[0].with.bomb", "with its aliases expanded, the value has more than 10,000 nodes" + limits, "Reuse smaller anchors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := CheckSource("limit.nika.yaml", []byte(tc.src), CheckOptions{})
			var found *Finding
			for i, f := range a.Findings {
				if f.Code == CodeParseSyntax && f.Path == tc.path {
					found = &a.Findings[i]
				}
			}
			if found == nil {
				t.Fatalf("no NIKA-PARSE-001 at %s in %v", tc.path, a.Findings)
			}
			if found.Message != tc.message || !strings.HasPrefix(found.Detail, tc.detail) {
				t.Errorf("finding = %q — %q\nwant      %q — %q…", found.Message, found.Detail, tc.message, tc.detail)
			}
			if !strings.Contains(tc.src, "*a") && strings.Contains(found.Message+found.Detail, "alias") {
				t.Errorf("a file without aliases is told about aliases: %q — %q", found.Message, found.Detail)
			}
		})
	}
}

// A self-referencing anchor stops at the nesting limit, and it is the
// alias that passed it.
func TestValueLimitSelfReference(t *testing.T) {
	seq := &Node{Kind: KindSeq}
	seq.Items = []*Node{{Kind: KindAlias, Alias: "x", Target: seq}}
	_, err := seq.Value()
	if err == nil || err.Error() != "with its aliases expanded, the value has more than 1,000 levels of nesting; a literal value may have at most 10,000 nodes and 1 MiB, nested at most 1,000 deep" {
		t.Errorf("Value of a self-referencing anchor: %v", err)
	}
}

// ValueWithin counts what Value counts under the caller's limits: every node one, a string or
// a key its length, a number 8 bytes, aliases expanded; a dangling alias is null unless the
// caller refuses it.
func TestValueWithin(t *testing.T) {
	f, findings := Parse("data", []byte("a: *nowhere\nb: [x, yy]\n"))
	if f == nil || f.Root == nil || HasErrors(findings) {
		t.Fatalf("parse: %v", findings)
	}
	// 5 nodes (the map, null, the list, x, yy), 5 bytes (a, b, x, yy), 2 levels below the root.
	ok := ValueLimits{Nodes: 5, Bytes: 5, Depth: 2}
	v, err := f.Root.ValueWithin(ok)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"a": nil, "b": []any{"x", "yy"}}) {
		t.Fatalf("within the limits: %#v, %v", v, err)
	}
	for _, c := range []struct {
		lim  ValueLimits
		want string
	}{
		{ValueLimits{Nodes: 4, Bytes: 5, Depth: 2}, limitNodes},
		{ValueLimits{Nodes: 5, Bytes: 4, Depth: 2}, limitBytes}, // the last string passes it
		{ValueLimits{Nodes: 5, Bytes: 5, Depth: 1}, limitDepth},
	} {
		_, err := f.Root.ValueWithin(c.lim)
		var le *ValueLimitError
		if !errors.As(err, &le) || le.Limit != c.want {
			t.Errorf("%+v: %v, want the %s limit", c.lim, err, c.want)
		}
	}
	ok.NoDanglingAliases = true
	if _, err := f.Root.ValueWithin(ok); !errors.Is(err, ErrUnknownAnchor) {
		t.Errorf("NoDanglingAliases: %v, want ErrUnknownAnchor", err)
	}
}
