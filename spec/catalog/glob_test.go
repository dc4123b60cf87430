package catalog

import (
	"reflect"
	"testing"
)

// ParseGlob's tokens are what nika:glob compiles: literals merged and unescaped, consecutive
// slashes one, classes as ranges, braces as nested alternatives.
func TestParseGlob(t *testing.T) {
	lit := func(s string) GlobToken { return GlobToken{Kind: GlobLiteral, Text: s} }
	slash := GlobToken{Kind: GlobSlash}
	cases := []struct {
		pattern string
		want    []GlobToken
	}{
		{"src//*.go", []GlobToken{lit("src"), slash, {Kind: GlobStar}, lit(".go")}},
		{`a\*b,c`, []GlobToken{lit("a*b,c")}},
		{"**/x?", []GlobToken{{Kind: GlobDoubleStar}, slash, lit("x"), {Kind: GlobQuestion}}},
		{"[!a-cé]", []GlobToken{{Kind: GlobClass, Negated: true, Ranges: []GlobRange{{'a', 'c'}, {'é', 'é'}}}}},
		{`[\]-]`, []GlobToken{{Kind: GlobClass, Ranges: []GlobRange{{']', ']'}, {'-', '-'}}}}},
		{"{a,{b/c,},**}", []GlobToken{{Kind: GlobAlternatives, Alts: [][]GlobToken{
			{lit("a")},
			{{Kind: GlobAlternatives, Alts: [][]GlobToken{{lit("b"), slash, lit("c")}, nil}}},
			{{Kind: GlobDoubleStar}},
		}}}},
		{"/~", []GlobToken{slash, lit("~")}},
	}
	for _, c := range cases {
		got, err := ParseGlob(c.pattern)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseGlob(%q) = %+v, %v\nwant %+v", c.pattern, got, err, c.want)
		}
	}
	// The errors, in the order of the pattern; an unclosed brace names the innermost one.
	for p, want := range map[string]string{
		"":        "the pattern is empty",
		"a[]{":    "empty character class at byte 1",
		"{a,{b":   "unclosed `{` at byte 3",
		"{a}}[":   "unmatched `}` at byte 3",
		"x/**y":   "`**` at byte 2 must be a whole path segment, as in `src/**/*.go`; use `*` inside a segment",
		"{**}/**": "",
		"[b-a]":   "bad range `b-a` in the character class at byte 0",
		"a\xff":   "invalid UTF-8 at byte 1",
		`[a\`:     "the pattern ends with a lone `\\`",
	} {
		got := ""
		if _, err := ParseGlob(p); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("ParseGlob(%q): %q, want %q", p, got, want)
		}
	}
}
