package lsp

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/nikahq/nika/spec"
)

// A task id is named in three kinds of places: its own `id:`, the
// `depends_on` lists of other tasks, and `tasks.X` (or `tasks['X']`) inside
// placeholders. Definition goes from any of them to the `id:`; references
// lists all of them. A `vars.X`, `env.X` or `secrets.X` goes to its
// declaration.

// symbol is what the cursor is on, for navigation.
type symbol struct {
	root string // "tasks", "vars", "env" or "secrets"
	name string
}

// symbolAt finds the task id or declared name under the cursor.
func (sn *snapshot) symbolAt(off int) (symbol, bool) {
	if p, ok := sn.placeholderAt(off); ok {
		for _, r := range sn.refs(p) {
			if len(r.path) > 0 && off >= r.rootFrom && off <= r.nameTo && r.nameFrom < r.nameTo {
				return symbol{root: r.root, name: r.path[0]}, true
			}
		}
		return symbol{}, false
	}
	for _, t := range tasksOf(sn.file()) {
		if sn.within(t.idNode, off) {
			return symbol{root: "tasks", name: t.id}, true
		}
		for _, d := range t.deps {
			if sn.within(d, off) {
				return symbol{root: "tasks", name: d.Str}, true
			}
		}
	}
	return symbol{}, false
}

// within reports whether off is on node n's token (its end included, where
// a cursor after the last character sits).
func (sn *snapshot) within(n *spec.Node, off int) bool {
	if n == nil || !n.Pos.IsValid() {
		return false
	}
	from := sn.nodeOffset(n)
	return off >= from && off <= sn.tokenEnd(from)
}

// nameSpan is the span of a scalar's text without its quotes.
func (sn *snapshot) nameSpan(n *spec.Node) (int, int) {
	from := sn.nodeOffset(n)
	to := sn.tokenEnd(from)
	if n.Style == spec.StyleSingleQuoted || n.Style == spec.StyleDoubleQuoted {
		if to-from >= 2 {
			return from + 1, to - 1
		}
	}
	return from, to
}

// declaration is where a symbol is declared: a task's id value, or the key
// of a vars, env or secrets entry.
func (sn *snapshot) declaration(sym symbol) (from, to int, ok bool) {
	if sym.root == "tasks" {
		t, found := findTask(tasksOf(sn.file()), sym.name)
		if !found {
			return 0, 0, false
		}
		from, to = sn.nameSpan(t.idNode)
		return from, to, true
	}
	if !sn.parsed() {
		return 0, 0, false
	}
	m := sn.file().Root.Deref().Get(sym.root).Deref()
	if p := m.Pair(sym.name); p != nil {
		from, to = sn.nameSpan(p.Key)
		return from, to, true
	}
	return 0, 0, false
}

func (s *server) definition(raw json.RawMessage) (any, *rpcError) {
	var p textDocumentPositionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	sn := s.snapshotOf(p.TextDocument.URI)
	if sn == nil {
		return nil, nil
	}
	sym, ok := sn.symbolAt(sn.lines.offset(p.Position))
	if !ok {
		return nil, nil
	}
	from, to, ok := sn.declaration(sym)
	if !ok {
		return nil, nil
	}
	return []Location{{URI: sn.uri, Range: sn.lines.rangeOf(from, to)}}, nil
}

func (s *server) references(raw json.RawMessage) (any, *rpcError) {
	var p referenceParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	sn := s.snapshotOf(p.TextDocument.URI)
	if sn == nil {
		return nil, nil
	}
	sym, ok := sn.symbolAt(sn.lines.offset(p.Position))
	if !ok {
		return []Location{}, nil
	}
	spans := sn.referencesOf(sym, p.Context.IncludeDeclaration)
	locs := make([]Location, 0, len(spans))
	for _, sp := range spans {
		locs = append(locs, Location{URI: sn.uri, Range: sn.lines.rangeOf(sp[0], sp[1])})
	}
	return locs, nil
}

// referencesOf lists the spans naming sym, in document order.
func (sn *snapshot) referencesOf(sym symbol, withDecl bool) [][2]int {
	var spans [][2]int
	if withDecl {
		if from, to, ok := sn.declaration(sym); ok {
			spans = append(spans, [2]int{from, to})
		}
	}
	if sym.root == "tasks" {
		for _, t := range tasksOf(sn.file()) {
			for _, d := range t.deps {
				if d.Str == sym.name {
					from, to := sn.nameSpan(d)
					spans = append(spans, [2]int{from, to})
				}
			}
		}
	}
	for _, p := range sn.placeholders() {
		if !containsName(sn.text[p.inner:p.close], sym.name) {
			continue // compiling only the placeholders that can name it
		}
		for _, r := range sn.refs(p) {
			if r.root == sym.root && len(r.path) > 0 && r.path[0] == sym.name && r.nameFrom < r.nameTo {
				spans = append(spans, [2]int{r.nameFrom, r.nameTo})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	return spans
}

func containsName(b []byte, name string) bool { return bytes.Contains(b, []byte(name)) }
