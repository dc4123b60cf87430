package tools

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
)

// YAML for nika:convert and nika:validate: the parser reuses the profile of workflow files
// (spec.Parse, D12) and its materialiser (spec.Node.ValueWithin) with a larger budget, and
// refuses an alias to an unknown anchor; the emitter is this package's own so that the
// output is stable and always reads back as the same value.

const (
	maxYAMLNodes = 1_000_000
	maxYAMLBytes = 64 << 20
)

var errYAMLTooLarge = fmt.Errorf("the YAML value is larger than the limit of %d nodes or %d MiB (counted with any aliases expanded)", maxYAMLNodes, maxYAMLBytes>>20)

func parseYAML(text string) (any, error) {
	f, findings := spec.Parse("data", []byte(text))
	for _, fd := range findings {
		if fd.IsError() {
			return nil, fmt.Errorf("%s: %s", fd.Pos, fd.Message)
		}
	}
	if f == nil || f.Root == nil {
		return nil, errors.New("the YAML does not parse")
	}
	v, err := f.Root.ValueWithin(spec.ValueLimits{Nodes: maxYAMLNodes, Bytes: maxYAMLBytes, Depth: maxDepth, NoDanglingAliases: true})
	var le *spec.ValueLimitError
	if errors.As(err, &le) {
		return nil, errYAMLTooLarge
	}
	return v, err
}

// renderYAML writes v as block YAML: 2-space indentation, keys sorted by byte order, sequences
// indented under their key, empty collections as {} and [].
func renderYAML(v any) string {
	w := &yamlWriter{}
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			w.mapping(x, 0, false)
			return w.b.String()
		}
	case []any:
		if len(x) > 0 {
			w.seq(x, 0, false)
			return w.b.String()
		}
	}
	w.b.WriteString(yamlScalar(v, 2))
	w.b.WriteByte('\n')
	return w.b.String()
}

type yamlWriter struct{ b strings.Builder }

func (w *yamlWriter) pad(n int) {
	for range n {
		w.b.WriteByte(' ')
	}
}

// mapping writes a non-empty mapping at indent; inline means its first key follows a "- ".
func (w *yamlWriter) mapping(m map[string]any, indent int, inline bool) {
	for i, k := range sortedKeys(m) {
		if i > 0 || !inline {
			w.pad(indent)
		}
		w.b.WriteString(yamlString(k, -1))
		w.b.WriteByte(':')
		w.after(m[k], indent)
	}
}

// after writes the value of a key of a mapping at indent.
func (w *yamlWriter) after(v any, indent int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			w.b.WriteByte('\n')
			w.mapping(x, indent+2, false)
			return
		}
	case []any:
		if len(x) > 0 {
			w.b.WriteByte('\n')
			w.seq(x, indent+2, false)
			return
		}
	}
	w.b.WriteByte(' ')
	w.b.WriteString(yamlScalar(v, indent+2))
	w.b.WriteByte('\n')
}

// seq writes a non-empty sequence at indent; inline means its first item follows a "- ".
func (w *yamlWriter) seq(s []any, indent int, inline bool) {
	for i, e := range s {
		if i > 0 || !inline {
			w.pad(indent)
		}
		w.b.WriteString("- ")
		switch x := e.(type) {
		case map[string]any:
			if len(x) > 0 {
				w.mapping(x, indent+2, true)
				continue
			}
		case []any:
			if len(x) > 0 {
				w.seq(x, indent+2, true)
				continue
			}
		}
		w.b.WriteString(yamlScalar(e, indent+2))
		w.b.WriteByte('\n')
	}
}

// yamlScalar writes a scalar or an empty collection; blockIndent is the indentation of a
// literal block's lines.
func yamlScalar(v any, blockIndent int) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int:
		return strconv.Itoa(x)
	case float64:
		switch {
		case math.IsNaN(x):
			return ".nan"
		case math.IsInf(x, 1):
			return ".inf"
		case math.IsInf(x, -1):
			return "-.inf"
		}
		b, _ := canon.Marshal(x)
		return string(b)
	case string:
		return yamlString(x, blockIndent)
	case []byte:
		return yamlString(base64.StdEncoding.EncodeToString(x), blockIndent)
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	}
	return yamlString(fmt.Sprint(v), blockIndent)
}

// yamlString writes a string plain when that reads back as the same string, as a literal block
// when it is multi-line text (blockIndent ≥ 0), double-quoted otherwise.
func yamlString(s string, blockIndent int) string {
	if plainSafe(s) {
		return s
	}
	if blockIndent >= 0 && literalSafe(s) {
		chomp := "-"
		body := s
		if strings.HasSuffix(s, "\n") {
			chomp, body = "", s[:len(s)-1]
		}
		var b strings.Builder
		b.WriteString("|" + chomp)
		for _, line := range strings.Split(body, "\n") {
			b.WriteByte('\n')
			if line != "" {
				b.WriteString(strings.Repeat(" ", blockIndent))
				b.WriteString(line)
			}
		}
		return b.String()
	}
	return yamlQuoted(s)
}

// yamlReserved are the plain scalars that YAML 1.2 core (and 1.1, for other readers) would not
// read as strings.
var yamlReserved = map[string]bool{
	"true": true, "false": true, "null": true, "yes": true, "no": true, "on": true, "off": true,
	"y": true, "n": true,
}

// plainSafe accepts a conservative set of plain scalars: a letter first, then letters, digits,
// space, `_`, `.`, `-`, `/` and `+`, no space at the end, and no reserved word.
func plainSafe(s string) bool {
	if s == "" || yamlReserved[strings.ToLower(s)] || strings.HasSuffix(s, " ") {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= utf8.RuneSelf && isLetterOrDigit(r):
		case i == 0:
			return false
		case r >= '0' && r <= '9', r == ' ', r == '_', r == '.', r == '-', r == '/', r == '+':
		default:
			return false
		}
	}
	return true
}

// literalSafe accepts multi-line text that a literal block keeps byte for byte: no carriage
// returns or other control characters but tab, no leading space or newline, at most one
// trailing newline, no line of blanks only.
func literalSafe(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") ||
		strings.HasPrefix(s, "\t") || strings.HasSuffix(s, "\n\n") {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && needsEscape(r) {
			return false
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line != "" && strings.TrimLeft(line, " \t") == "" {
			return false
		}
	}
	return true
}

func needsEscape(r rune) bool {
	return r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xFEFF ||
		r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError
}

func yamlQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if needsEscape(r) && r != utf8.RuneError {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
