package expr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${{ a }}", "x ${{ a }} y ${{ b }}", `\${{ a }}`, `\\${{ a }}`, "${{ {a: {b: 1}} }}",
		`${{ "}}" }}`, "${{ '}}' }}", "${{ `}}` }}", `${{ "a\"}}" }}`, "${{", "${{ }}", "${{ a }", "${{ { }}",
		"é ${{ é }} é", "$${{a}}}", "${{${{a}}}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := Scan(s)
		contains := ContainsPlaceholder(s)
		if err != nil {
			if err.Offset < 0 || err.Offset+3 > len(s) || s[err.Offset:err.Offset+3] != "${{" {
				t.Fatalf("Scan(%q): error offset %d does not point at ${{", s, err.Offset)
			}
			if err.Code != CodeUnclosed && err.Code != CodeInvalid {
				t.Fatalf("Scan(%q): code %s", s, err.Code)
			}
			if !contains {
				t.Fatalf("Scan(%q) failed but ContainsPlaceholder is false", s)
			}
			return
		}
		if tpl.HasExpr() != contains {
			t.Fatalf("Scan(%q).HasExpr() = %v, ContainsPlaceholder = %v", s, tpl.HasExpr(), contains)
		}
		prevEnd := 0
		for i, seg := range tpl.Segments {
			if seg.Offset < prevEnd || seg.Offset > len(s) {
				t.Fatalf("Scan(%q): segment %d offset %d out of order", s, i, seg.Offset)
			}
			if seg.Expr {
				if s[seg.Offset:seg.Offset+3] != "${{" || strings.TrimSpace(seg.Text) != seg.Text || seg.Text == "" {
					t.Fatalf("Scan(%q): bad placeholder %+v", s, seg)
				}
				if s[seg.TextOffset:seg.TextOffset+len(seg.Text)] != seg.Text {
					t.Fatalf("Scan(%q): TextOffset %d does not locate %q", s, seg.TextOffset, seg.Text)
				}
				prevEnd = seg.TextOffset + len(seg.Text)
			} else {
				if seg.Text == "" {
					t.Fatalf("Scan(%q): empty literal segment", s)
				}
				if i > 0 && !tpl.Segments[i-1].Expr {
					t.Fatalf("Scan(%q): adjacent literal segments", s)
				}
				prevEnd = seg.Offset + 1
			}
		}
		// Without any "${{" the string is one literal segment, unchanged.
		if !strings.Contains(s, "${{") && s != "" && (len(tpl.Segments) != 1 || tpl.Segments[0].Text != s) {
			t.Fatalf("Scan(%q) changed a string without placeholders: %+v", s, tpl.Segments)
		}
	})
}

var fuzzValues = map[string]any{
	"vars":  map[string]any{"limit": 3, "name": "n", "list": []any{1, "a", nil}, "cfg": map[string]any{"a": []any{}}},
	"env":   map[string]any{"HOME": "/h"},
	"tasks": map[string]any{"a": map[string]any{"status": "success", "output": map[string]any{"x": 1.5}}},
	"with":  map[string]any{"b": []byte("x"), "n": nil, "m": map[string]any{"k": true}},
	"item":  map[string]any{"id": 7},
	"index": 0,
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"tasks.t12.output.title + with.x", "vars.limit > 3", `"n=" + 1`, "now()", "has(with.m.k)", "has(1)",
		"foo", "a == b == c", "with.a < with.b < with.c", "size(vars.name)", "vars.name.size()", `"x".contains("y")`,
		"1 in [1.0]", "{a: 1} == {a: 1.0}", "with.n?.x ?? 1", "vars.list[-1]", "vars.list[1.5]", "vars.list[1:]",
		`"abc" matches "b"`, "7 / 2", `fromJSON("[1, 2.5]")`, "filter(vars.list, # != null)", "map(1..3, # * 2)",
		"let x = 1; x + 1", "if true { 1 } else { 2 }", "tasks[item.id]", "keys(with.m)", `date("2020-01-01")`,
		"reduce(1..5, #acc + #, 0)", "with.b", "item.id | string()", "toJSON(vars.cfg)", "[1, 2][::]", "$env",
		"(((1)))", "!!true", "-vars.limit", "vars.limit ** 2", "#", "1..", "{", "'", "`", "\"\\", "é + 1",
		"sortBy([3, 1], #)", "groupBy([1, 2], # % 2)", "get(with.m, 'k')", "uniq([1, 1.0])", "null.x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, issues := Compile(src, testEnv)
		for _, is := range issues {
			if is.Code != CodeInvalid && is.Code != CodeUnknownName {
				t.Fatalf("Compile(%q): code %s", src, is.Code)
			}
			if is.Offset < 0 || is.Offset > len(src) {
				t.Fatalf("Compile(%q): offset %d out of range", src, is.Offset)
			}
			if utf8.ValidString(src) && is.Offset < len(src) && !utf8.RuneStart(src[is.Offset]) {
				t.Fatalf("Compile(%q): offset %d splits a character", src, is.Offset)
			}
			if strings.HasPrefix(is.Message, "internal error") || strings.HasPrefix(is.Message, "cannot compile expression") {
				t.Fatalf("Compile(%q): %v", src, is)
			}
		}
		if p == nil {
			return
		}
		for _, r := range p.Refs {
			if !isRoot(r.Root) || r.Offset < 0 || r.Offset+len(r.Root) > len(src) || src[r.Offset:r.Offset+len(r.Root)] != r.Root {
				t.Fatalf("Compile(%q): bad ref %+v", src, r)
			}
		}
		if len(issues) > 0 {
			return
		}
		v, err := p.Eval(fuzzValues)
		if err != nil {
			if _, ok := err.(*EvalError); !ok {
				t.Fatalf("Eval(%q): error of type %T", src, err)
			}
			return
		}
		if _, err := Normalize(v); err != nil {
			t.Fatalf("Eval(%q) returned a value that does not normalize: %v", src, err)
		}
	})
}
