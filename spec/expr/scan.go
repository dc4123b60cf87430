package expr

import (
	"strings"
	"unicode"

	"github.com/nikahq/nika/spec/internal/codes"
)

// Codes reported by this package: its names for rows of the code registry
// (spec/codes.go), which this package cannot import (spec imports it).
const (
	// CodeUnknownName is an unknown root or function name.
	CodeUnknownName = codes.VarUnresolved
	// CodeInvalid is a static error in an expression (syntax, types, purity…).
	CodeInvalid = codes.VarStatic
	// CodeRuntime is a run-time evaluation failure; Eval's *EvalError maps to it.
	CodeRuntime = codes.VarRuntime
	// CodeBytes is a bytes value rendered into a string (a caller's check).
	CodeBytes = codes.VarBytes
	// CodeUnclosed is a `${{` without its `}}`.
	CodeUnclosed = codes.VarUnclosed
)

const (
	openDelim    = "${{"
	escapedDelim = `\${{`
)

// Segment is one piece of a scanned string: literal text or a placeholder.
type Segment struct {
	// Expr is true for a placeholder.
	Expr bool
	// Text is the literal text, with every `\${{` already turned into `${{`,
	// or, for a placeholder, the expression source between `${{` and `}}`
	// with leading and trailing white space trimmed.
	Text string
	// Offset is the byte offset in the input where the segment starts; for a
	// placeholder, the offset of its "${{".
	Offset int
	// TextOffset is, for a placeholder, the byte offset in the input of the
	// first byte of Text, so that an offset o reported by Compile on Text is
	// TextOffset+o in the input. For literal text it equals Offset (offsets
	// inside literal text are not linear because of unescaping).
	TextOffset int
}

// Template is a scanned string.
type Template struct {
	Segments []Segment
}

// Whole reports whether the string is exactly one placeholder and nothing
// else, not even white space: its value then keeps its type (LANGUAGE.md §4.7).
func (t Template) Whole() bool {
	return len(t.Segments) == 1 && t.Segments[0].Expr
}

// HasExpr reports whether the template contains at least one placeholder.
func (t Template) HasExpr() bool {
	for _, s := range t.Segments {
		if s.Expr {
			return true
		}
	}
	return false
}

// ScanError is a malformed placeholder. It is a finding, not an error value.
type ScanError struct {
	// Offset is the byte offset of the offending "${{".
	Offset int
	// Code is NIKA-VAR-008 (unclosed) or NIKA-VAR-005 (empty expression).
	Code    string
	Message string
}

// ContainsPlaceholder reports whether s contains an unescaped "${{", that is,
// whether Scan would find a placeholder or report an unclosed one. It is the
// test for `${{` in a literal-only position.
func ContainsPlaceholder(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], openDelim)
		if j < 0 {
			return false
		}
		j += i
		if j == 0 || s[j-1] != '\\' {
			return true
		}
		i = j + len(openDelim)
	}
}

// Scan splits s into literal text and placeholders (LANGUAGE.md §4.1).
//
// Scanning is a single left-to-right pass. `\${{` yields a literal `${{`
// (the backslash is dropped); no other backslash processing happens in
// literal text. After `${{` the expression ends at the first `}}` found at
// brace depth 0 outside string literals ('…' and "…" with backslash escapes,
// `…` without), so `${{ {a: {b: 1}} }}` is one placeholder. A missing `}}`
// is NIKA-VAR-008 and a blank expression NIKA-VAR-005; Scan stops at the
// first error. Adjacent literal pieces are merged into one segment and empty
// literal segments are omitted.
func Scan(s string) (Template, *ScanError) {
	if !strings.Contains(s, openDelim) {
		if s == "" {
			return Template{}, nil
		}
		return Template{Segments: []Segment{{Text: s}}}, nil
	}
	var (
		segs    []Segment
		lit     strings.Builder
		litFrom = 0
		litOpen = false
	)
	flush := func() {
		if litOpen && lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String(), Offset: litFrom, TextOffset: litFrom})
		}
		lit.Reset()
		litOpen = false
	}
	addLit := func(at int, text string) {
		if !litOpen {
			litOpen = true
			litFrom = at
		}
		lit.WriteString(text)
	}
	i := 0
	for i < len(s) {
		j := strings.Index(s[i:], openDelim)
		if j < 0 {
			addLit(i, s[i:])
			break
		}
		j += i
		if j > 0 && s[j-1] == '\\' {
			// `\${{`: everything before the backslash, then a literal "${{".
			addLit(i, s[i:j-1])
			addLit(j-1, openDelim)
			i = j + len(openDelim)
			continue
		}
		if j > i {
			addLit(i, s[i:j])
		}
		flush()
		start := j + len(openDelim)
		end := exprEnd(s, start)
		if end < 0 {
			return Template{}, &ScanError{Offset: j, Code: CodeUnclosed, Message: "unclosed `${{`: missing `}}`"}
		}
		raw := s[start:end]
		left := strings.TrimLeftFunc(raw, unicode.IsSpace)
		text := strings.TrimRightFunc(left, unicode.IsSpace)
		if text == "" {
			return Template{}, &ScanError{Offset: j, Code: CodeInvalid, Message: "empty expression in `${{ }}`"}
		}
		lead := len(raw) - len(left)
		segs = append(segs, Segment{Expr: true, Text: text, Offset: j, TextOffset: start + lead})
		i = end + 2
	}
	flush()
	return Template{Segments: segs}, nil
}

// exprEnd returns the offset of the `}}` closing an expression that starts at
// start, or -1 if there is none.
func exprEnd(s string, start int) int {
	depth := 0
	for k := start; k < len(s); k++ {
		switch c := s[k]; c {
		case '\'', '"', '`':
			k = stringEnd(s, k)
			if k < 0 {
				return -1
			}
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			} else if k+1 < len(s) && s[k+1] == '}' {
				return k
			}
		}
	}
	return -1
}

// stringEnd returns the offset of the quote closing the string literal that
// opens at s[k], or -1 if it is not closed.
func stringEnd(s string, k int) int {
	q := s[k]
	for k++; k < len(s); k++ {
		switch s[k] {
		case '\\':
			if q != '`' {
				k++
			}
		case q:
			return k
		}
	}
	return -1
}
