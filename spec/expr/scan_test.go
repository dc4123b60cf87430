package expr

import (
	"reflect"
	"testing"
)

func lit(text string, off int) Segment { return Segment{Text: text, Offset: off, TextOffset: off} }
func ph(text string, off, textOff int) Segment {
	return Segment{Expr: true, Text: text, Offset: off, TextOffset: textOff}
}

func TestScan(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []Segment
		whole bool
	}{
		{"empty", "", nil, false},
		{"plain", "hello", []Segment{lit("hello", 0)}, false},
		{"dollar without braces", "cost: $5 {x}", []Segment{lit("cost: $5 {x}", 0)}, false},
		{"whole", "${{ vars.limit }}", []Segment{ph("vars.limit", 0, 4)}, true},
		{"whole without spaces", "${{vars.limit}}", []Segment{ph("vars.limit", 0, 3)}, true},
		{"leading space is not whole", " ${{ a }}", []Segment{lit(" ", 0), ph("a", 1, 5)}, false},
		{"trailing newline is not whole", "${{ a }}\n", []Segment{ph("a", 0, 4), lit("\n", 8)}, false},
		{"mixed", "limit=${{ vars.limit }}!", []Segment{lit("limit=", 0), ph("vars.limit", 6, 10), lit("!", 23)}, false},
		{"two placeholders", "${{a}}${{b}}", []Segment{ph("a", 0, 3), ph("b", 6, 9)}, false},
		{"escape", `\${{ x }}`, []Segment{lit("${{ x }}", 0)}, false},
		{"escape merged with text", `a \${{ x }} b ${{ y }}`, []Segment{lit("a ${{ x }} b ", 0), ph("y", 14, 18)}, false},
		{"double backslash still escapes", `\\${{ x }}`, []Segment{lit(`\${{ x }}`, 0)}, false},
		{"other backslashes kept", `a\nb \$ \{{`, []Segment{lit(`a\nb \$ \{{`, 0)}, false},
		{"nested braces", "${{ {a: {b: 1}} }}", []Segment{ph("{a: {b: 1}}", 0, 4)}, true},
		{"map literal closing at once", "${{ {a: 1}}}", []Segment{ph("{a: 1}", 0, 4)}, true},
		{"first }} at depth 0 ends", "${{ a }}}", []Segment{ph("a", 0, 4), lit("}", 8)}, false},
		{"stray } at depth 0", "${{ a } b }}", []Segment{ph("a } b", 0, 4)}, true},
		{"}} in double-quoted string", `${{ "}}" + x }}`, []Segment{ph(`"}}" + x`, 0, 4)}, true},
		{"}} in single-quoted string", `${{ '}}' }}`, []Segment{ph(`'}}'`, 0, 4)}, true},
		{"}} in backquoted string", "${{ `}}` }}", []Segment{ph("`}}`", 0, 4)}, true},
		{"escaped quote in string", `${{ "a\"}}" }}`, []Segment{ph(`"a\"}}"`, 0, 4)}, true},
		{"backslash is literal in backquotes", "${{ `a\\` }}", []Segment{ph("`a\\`", 0, 4)}, true},
		{"braces in string do not count", `${{ "{" }}`, []Segment{ph(`"{"`, 0, 4)}, true},
		{"${{ inside expression string", `${{ "${{" }}`, []Segment{ph(`"${{"`, 0, 4)}, true},
		{"multi-line expression", "${{\n  a +\n  b\n}}", []Segment{ph("a +\n  b", 0, 6)}, true},
		{"utf-8 offsets", "é ${{ x }}", []Segment{lit("é ", 0), ph("x", 3, 7)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tt.in)
			if err != nil {
				t.Fatalf("Scan(%q) error %v", tt.in, err)
			}
			if !reflect.DeepEqual(got.Segments, tt.want) {
				t.Fatalf("Scan(%q)\n got %#v\nwant %#v", tt.in, got.Segments, tt.want)
			}
			if got.Whole() != tt.whole {
				t.Errorf("Whole() = %v, want %v", got.Whole(), tt.whole)
			}
			hasExpr := false
			for _, s := range tt.want {
				hasExpr = hasExpr || s.Expr
			}
			if got.HasExpr() != hasExpr {
				t.Errorf("HasExpr() = %v, want %v", got.HasExpr(), hasExpr)
			}
			for _, s := range got.Segments {
				if s.Expr && tt.in[s.TextOffset:s.TextOffset+len(s.Text)] != s.Text {
					t.Errorf("TextOffset %d does not locate %q in %q", s.TextOffset, s.Text, tt.in)
				}
			}
		})
	}
}

func TestScanErrors(t *testing.T) {
	tests := []struct {
		in     string
		code   string
		offset int
	}{
		{"${{ a", CodeUnclosed, 0},
		{"x ${{ a }", CodeUnclosed, 2},
		{"${{ a }} and ${{ b", CodeUnclosed, 13},
		{`${{ "}} `, CodeUnclosed, 0},         // the string never closes
		{"${{ {a: 1} }", CodeUnclosed, 0},     // `} }` is not `}}`
		{"${{ {{a}} }", CodeUnclosed, 0},      // depth 2 swallows the inner `}}`
		{`\${{ a }} ${{ b`, CodeUnclosed, 10}, // an escape does not protect later ones
		{"${{}}", CodeInvalid, 0},
		{"${{ }}", CodeInvalid, 0},
		{"a ${{ \n\t }} b", CodeInvalid, 2},
	}
	for _, tt := range tests {
		_, err := Scan(tt.in)
		if err == nil {
			t.Errorf("Scan(%q): no error, want %s", tt.in, tt.code)
			continue
		}
		if err.Code != tt.code || err.Offset != tt.offset {
			t.Errorf("Scan(%q) = %s at %d, want %s at %d", tt.in, err.Code, err.Offset, tt.code, tt.offset)
		}
		if err.Message == "" {
			t.Errorf("Scan(%q): empty message", tt.in)
		}
	}
}

func TestContainsPlaceholder(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"plain", false},
		{"${{ a }}", true},
		{"x ${{ a", true}, // unclosed counts
		{`\${{ a }}`, false},
		{`\\${{ a }}`, false},
		{`\${{ a }} ${{ b }}`, true},
		{"$ {{", false},
		{"${", false},
		{"$${{a}}", true},
	}
	for _, tt := range tests {
		if got := ContainsPlaceholder(tt.in); got != tt.want {
			t.Errorf("ContainsPlaceholder(%q) = %v, want %v", tt.in, got, tt.want)
		}
		tpl, err := Scan(tt.in)
		if scanned := err != nil || tpl.HasExpr(); scanned != tt.want {
			t.Errorf("Scan(%q) disagrees with ContainsPlaceholder", tt.in)
		}
	}
}
