package lsp

import (
	"bytes"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/expr"
)

// The checker gives a finding one position, where the caret goes (STYLE.md:
// the key for an unknown key, the value for a bad value, the `${{` of an
// expression). An LSP diagnostic needs a range: the server extends the
// position over the token that starts there, from the AST node at that
// offset and the raw source, never from decoded text.

// nodeAt returns the AST node that starts at a document offset, preferring a
// scalar (a block mapping starts where its first key does).
func (sn *snapshot) nodeAt(off int) *spec.Node {
	sn.nodesOnce.Do(func() {
		sn.nodes = map[int]*spec.Node{}
		if sn.parsed() {
			indexNodes(sn.file().Root, sn.nodes)
		}
	})
	return sn.nodes[off-sn.bom]
}

func indexNodes(n *spec.Node, idx map[int]*spec.Node) {
	if n == nil {
		return
	}
	if old, ok := idx[n.Pos.Offset]; !ok || (!old.IsScalar() && n.IsScalar()) {
		idx[n.Pos.Offset] = n
	}
	for _, p := range n.Pairs {
		indexNodes(p.Key, idx)
		indexNodes(p.Value, idx)
	}
	for _, it := range n.Items {
		indexNodes(it, idx)
	}
}

// nodeOffset is where a node starts in the document.
func (sn *snapshot) nodeOffset(n *spec.Node) int {
	return sn.lines.specOffset(n.Pos, sn.bom)
}

// tokenEnd returns where the token that starts at document offset off ends,
// on off's line: a whole placeholder, a scalar as written (quotes
// included), a flow collection, a block scalar's indicator line, or else a
// word. It never returns less than off.
func (sn *snapshot) tokenEnd(off int) int {
	l := sn.lines.line(off)
	eol := sn.lines.lineEnd(l)
	if off >= eol {
		return off
	}
	line := sn.text[off:eol]
	if bytes.HasPrefix(line, []byte("${{")) {
		if e := exprClose(line, 3); e >= 0 {
			return off + e + 2
		}
		return off + trimmedEnd(line)
	}
	if n := sn.nodeAt(off); n != nil {
		if e, ok := nodeEnd(n, line); ok {
			return off + e
		}
	}
	return off + wordEnd(line)
}

// nodeEnd is the length of node n's source on line (which starts at n).
func nodeEnd(n *spec.Node, line []byte) (int, bool) {
	switch {
	case n.Kind == spec.KindAlias:
		return wordEnd(line), true
	case n.IsScalar():
		switch n.Style {
		case spec.StylePlain:
			if !n.MultiLine() && n.Str != "" && bytes.HasPrefix(line, []byte(n.Str)) {
				return len(n.Str), true
			}
			return trimmedEnd(line), true
		case spec.StyleSingleQuoted, spec.StyleDoubleQuoted:
			if e := quoteEnd(line); e > 0 {
				return e, true
			}
			return trimmedEnd(line), true
		default: // a block scalar: its indicator line
			return trimmedEnd(line), true
		}
	case n.Style == spec.StyleFlow:
		if e := flowEnd(line); e > 0 {
			return e, true
		}
		return trimmedEnd(line), true
	}
	return 0, false
}

// quoteEnd is the length of the quoted scalar at the start of line,
// closing quote included, or 0 when it does not close on the line.
func quoteEnd(line []byte) int {
	q := line[0]
	for i := 1; i < len(line); i++ {
		switch {
		case q == '"' && line[i] == '\\':
			i++
		case line[i] == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case line[i] == q:
			return i + 1
		}
	}
	return 0
}

// flowEnd is the length of the flow collection at the start of line, or 0
// when it does not close on the line.
func flowEnd(line []byte) int {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"', '\'':
			e := quoteEnd(line[i:])
			if e == 0 {
				return 0
			}
			i += e - 1
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// trimmedEnd is the length of line without a trailing comment and blanks.
func trimmedEnd(line []byte) int {
	if i := bytes.Index(line, []byte(" #")); i >= 0 {
		line = line[:i]
	}
	return len(bytes.TrimRight(line, " \t"))
}

// wordEnd is the length of the plain word at the start of line: up to a
// blank, a flow indicator, a comment or a `: `; at least one character.
func wordEnd(line []byte) int {
	i := 0
loop:
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t' || c == ',' || c == ']' || c == '}' || c == '#':
			break loop
		case c == ':' && (i+1 == len(line) || line[i+1] == ' '):
			break loop
		}
		i++
	}
	if i == 0 {
		_, size := utf8.DecodeRune(line)
		return size
	}
	return i
}

// exprClose returns the index in b of the `}}` closing the expression that
// starts at start, with spec/expr's rule (brace depth 0, outside string
// literals); when a quote does not close (YAML escapes can hide one), the
// first `}}`; -1 when there is none.
func exprClose(b []byte, start int) int {
	depth := 0
	for k := start; k < len(b); k++ {
		switch c := b[k]; c {
		case '\'', '"', '`':
			e := stringClose(b, k)
			if e < 0 {
				if j := bytes.Index(b[start:], []byte("}}")); j >= 0 {
					return start + j
				}
				return -1
			}
			k = e
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			} else if k+1 < len(b) && b[k+1] == '}' {
				return k
			}
		}
	}
	return -1
}

func stringClose(b []byte, k int) int {
	q := b[k]
	for k++; k < len(b); k++ {
		switch {
		case b[k] == '\\' && q != '`':
			k++
		case b[k] == q:
			return k
		}
	}
	return -1
}

// placeholder is one `${{ … }}` of the source, found in the raw text of a
// string scalar.
type placeholder struct {
	open, inner, close int        // offsets of `${{`, of the expression, and just after `}}`
	node               *spec.Node // the scalar it belongs to
	index              int        // its rank among that scalar's placeholders
}

func (p placeholder) expr(text []byte) string { return string(text[p.inner : p.close-2]) }

// placeholders lists every placeholder of the document in source order.
// Each string scalar whose value holds `${{` is scanned from where it starts
// to where the next node starts, so comments and keys are never scanned.
func (sn *snapshot) placeholders() []placeholder {
	sn.placesOnce.Do(func() {
		if !sn.parsed() {
			return
		}
		sn.nodeAt(0) // builds the index
		starts := make([]int, 0, len(sn.nodes))
		for off := range sn.nodes {
			starts = append(starts, off+sn.bom)
		}
		sort.Ints(starts)
		for i, from := range starts {
			n := sn.nodes[from-sn.bom]
			if n.Kind != spec.KindString || !strings.Contains(n.Str, "${{") {
				continue
			}
			to := len(sn.text)
			if i+1 < len(starts) {
				to = starts[i+1]
			}
			sn.places = appendPlaceholders(sn.places, sn.text, from, to, n)
		}
	})
	return sn.places
}

func appendPlaceholders(out []placeholder, text []byte, from, to int, n *spec.Node) []placeholder {
	region := text[from:to]
	rank := 0
	for i := 0; i < len(region); {
		j := bytes.Index(region[i:], []byte("${{"))
		if j < 0 {
			break
		}
		j += i
		if j > 0 && region[j-1] == '\\' {
			i = j + 3
			continue
		}
		e := exprClose(region, j+3)
		if e < 0 {
			break
		}
		out = append(out, placeholder{open: from + j, inner: from + j + 3, close: from + e + 2, node: n, index: rank})
		rank++
		i = e + 2
	}
	return out
}

// placeholderAt returns the placeholder whose text holds offset off.
func (sn *snapshot) placeholderAt(off int) (placeholder, bool) {
	ps := sn.placeholders()
	i := sort.Search(len(ps), func(i int) bool { return ps[i].close > off })
	if i < len(ps) && ps[i].open <= off {
		return ps[i], true
	}
	return placeholder{}, false
}

// srcRef is one namespace reference of a placeholder, with the source span
// of its first selection (the X of tasks.X, vars.X, …) when it is static.
type srcRef struct {
	root     string
	path     []string
	rootFrom int // document offset of the root identifier
	nameFrom int // span of path[0]; nameFrom == nameTo when unknown
	nameTo   int
	spanTo   int // end of the root and its first selection
	program  *expr.Program
}

var refPattern = regexp.MustCompile(`\b(tasks|vars|env|secrets|with)\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\])`)

// refs lists the references of a placeholder. The expression is compiled
// as written in the source; when that fails (a YAML escape inside it), a
// pattern finds the static `root.name` forms instead.
func (sn *snapshot) refs(p placeholder) []srcRef {
	src := p.expr(sn.text)
	prog, _ := expr.Compile(src, expr.Env{})
	if prog == nil {
		var out []srcRef
		for _, m := range refPattern.FindAllStringSubmatchIndex(src, -1) {
			a, b := m[4], m[5]
			if a < 0 {
				a, b = m[6], m[7]
			}
			out = append(out, srcRef{root: src[m[2]:m[3]], path: []string{src[a:b]}, rootFrom: p.inner + m[2],
				nameFrom: p.inner + a, nameTo: p.inner + b, spanTo: p.inner + m[1]})
		}
		return out
	}
	out := make([]srcRef, 0, len(prog.Refs))
	for _, r := range prog.Refs {
		sr := srcRef{root: r.Root, path: r.Path, rootFrom: p.inner + r.Offset, program: prog}
		sr.nameFrom, sr.nameTo = firstSelection(src, r.Offset+len(r.Root), r.Path)
		sr.nameFrom += p.inner
		sr.nameTo += p.inner
		sr.spanTo = max(sr.nameTo, sr.rootFrom+len(r.Root))
		out = append(out, sr)
	}
	return out
}

// firstSelection finds path[0] right after a root ending at i: `.name` or
// `['name']`. It returns an empty span at i when it is not there.
func firstSelection(src string, i int, path []string) (int, int) {
	if len(path) == 0 {
		return i, i
	}
	j := skipBlanks(src, i)
	if j < len(src) && src[j] == '.' {
		j = skipBlanks(src, j+1)
		if strings.HasPrefix(src[j:], path[0]) {
			return j, j + len(path[0])
		}
	}
	if j < len(src) && src[j] == '[' {
		j = skipBlanks(src, j+1)
		if j < len(src) && (src[j] == '\'' || src[j] == '"') && strings.HasPrefix(src[j+1:], path[0]) {
			return j + 1, j + 1 + len(path[0])
		}
	}
	return i, i
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// taskEntry is one task of the AST, as written (even when it failed a check).
type taskEntry struct {
	id       string
	idNode   *spec.Node // the id value
	idKey    *spec.Node
	node     *spec.Node // the task mapping
	deps     []*spec.Node
	depsPair *spec.Pair
}

// tasksOf lists the tasks of a parsed file in declaration order; an item
// without a string id is skipped.
func tasksOf(f *spec.File) []taskEntry {
	if f == nil || f.Root == nil {
		return nil
	}
	seq := f.Root.Deref().Get("tasks").Deref()
	if seq == nil || seq.Kind != spec.KindSeq {
		return nil
	}
	var out []taskEntry
	for _, it := range seq.Items {
		m := it.Deref()
		p := m.Pair("id")
		if p == nil || p.Value.Deref() == nil || p.Value.Deref().Kind != spec.KindString {
			continue
		}
		e := taskEntry{id: p.Value.Deref().Str, idNode: p.Value, idKey: p.Key, node: m}
		if dp := m.Pair("depends_on"); dp != nil {
			e.depsPair = dp
			if d := dp.Value.Deref(); d != nil && d.Kind == spec.KindSeq {
				for _, x := range d.Items {
					if x.Kind == spec.KindString {
						e.deps = append(e.deps, x)
					}
				}
			}
		}
		out = append(out, e)
	}
	return out
}

func findTask(ts []taskEntry, id string) (taskEntry, bool) {
	for _, t := range ts {
		if t.id == id {
			return t, true
		}
	}
	return taskEntry{}, false
}

// keysOf returns the string keys of a mapping at path (keys of the root
// first), e.g. keysOf(f, "vars").
func keysOf(f *spec.File, key string) []string {
	if f == nil || f.Root == nil {
		return nil
	}
	m := f.Root.Deref().Get(key).Deref()
	if m == nil || m.Kind != spec.KindMap {
		return nil
	}
	out := make([]string, 0, len(m.Pairs))
	for _, p := range m.Pairs {
		if p.Key.Kind == spec.KindString {
			out = append(out, p.Key.Str)
		}
	}
	return out
}
