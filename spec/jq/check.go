package jq

import (
	"strings"

	"github.com/itchyny/gojq"
)

type refusalKind int

const (
	refusedImport refusalKind = iota
	refusedFunc
	refusedVar
)

// use is one refused construct found in the syntax tree.
type use struct {
	kind refusalKind
	name string // function name, variable name with its '$', or "import"/"include"
}

func (u use) message() string {
	switch u.kind {
	case refusedImport:
		return "jq: " + u.name + " is not allowed (programs cannot load modules)"
	case refusedVar:
		return "jq: " + u.name + " is not allowed (impure; only pure jq is accepted)"
	default:
		return "jq: builtin " + u.name + " is not allowed (impure; only pure jq is accepted)"
	}
}

// checker walks a gojq syntax tree and records refused constructs in source order (as far as the tree
// preserves it).
type checker struct {
	uses []use
	// scope holds the user definitions and closure parameters visible at the current point, as
	// name/arity pairs; inner ones are appended last.
	scope []funcName
	// only, when set, restricts recording to this name (used by the offset search).
	only string
}

type funcName struct {
	name  string
	arity int
}

func check(q *gojq.Query) []use {
	c := &checker{}
	c.query(q)
	return c.uses
}

// countUses returns how many refused references to name q contains.
func countUses(q *gojq.Query, name string) int {
	c := &checker{only: name}
	c.query(q)
	return len(c.uses)
}

func (c *checker) record(u use) {
	if c.only == "" || c.only == u.name {
		c.uses = append(c.uses, u)
	}
}

func (c *checker) shadowed(name string, arity int) bool {
	for i := len(c.scope) - 1; i >= 0; i-- {
		if c.scope[i].name == name && c.scope[i].arity == arity {
			return true
		}
	}
	return false
}

func (c *checker) query(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, im := range q.Imports {
		if im.ImportPath != "" {
			c.record(use{refusedImport, "import"})
		} else {
			c.record(use{refusedImport, "include"})
		}
	}
	mark := len(c.scope)
	for _, fd := range q.FuncDefs {
		// A definition is visible in its own body (recursion), in later definitions and in the
		// query body; its parameters only in its body. A $param also defines param/0.
		c.scope = append(c.scope, funcName{fd.Name, len(fd.Args)})
		inner := len(c.scope)
		for _, a := range fd.Args {
			c.scope = append(c.scope, funcName{strings.TrimPrefix(a, "$"), 0})
		}
		c.query(fd.Body)
		c.scope = c.scope[:inner]
	}
	c.term(q.Term)
	c.query(q.Left)
	c.patterns(q.Patterns)
	c.query(q.Right)
	c.scope = c.scope[:mark]
}

func (c *checker) term(t *gojq.Term) {
	if t == nil {
		return
	}
	c.index(t.Index)
	if f := t.Func; f != nil {
		c.call(f.Name, len(f.Args))
		for _, a := range f.Args {
			c.query(a)
		}
	}
	if o := t.Object; o != nil {
		for _, kv := range o.KeyVals {
			if strings.HasPrefix(kv.Key, "$") {
				c.variable(kv.Key) // {$x} and {$x: v} read $x
			}
			c.str(kv.KeyString)
			c.query(kv.KeyQuery)
			c.query(kv.Val)
		}
	}
	if t.Array != nil {
		c.query(t.Array.Query)
	}
	if t.Unary != nil {
		c.term(t.Unary.Term)
	}
	c.str(t.Str)
	if i := t.If; i != nil {
		c.query(i.Cond)
		c.query(i.Then)
		for _, e := range i.Elif {
			c.query(e.Cond)
			c.query(e.Then)
		}
		c.query(i.Else)
	}
	if t.Try != nil {
		c.query(t.Try.Body)
		c.query(t.Try.Catch)
	}
	if r := t.Reduce; r != nil {
		c.query(r.Query)
		c.patterns(r.Patterns)
		c.query(r.Start)
		c.query(r.Update)
	}
	if f := t.Foreach; f != nil {
		c.query(f.Query)
		c.patterns(f.Patterns)
		c.query(f.Start)
		c.query(f.Update)
		c.query(f.Extract)
	}
	if t.Label != nil {
		c.query(t.Label.Body)
	}
	c.query(t.Query)
	for _, s := range t.SuffixList {
		c.index(s.Index)
	}
}

func (c *checker) call(name string, arity int) {
	if strings.HasPrefix(name, "$") {
		c.variable(name)
		return
	}
	if refusedFuncs[name] && !c.shadowed(name, arity) {
		c.record(use{refusedFunc, name})
	}
}

func (c *checker) variable(name string) {
	if refusedVars[name] {
		c.record(use{refusedVar, name})
	}
}

func (c *checker) index(x *gojq.Index) {
	if x == nil {
		return
	}
	c.str(x.Str)
	c.query(x.Start)
	c.query(x.End)
}

func (c *checker) str(s *gojq.String) {
	if s == nil {
		return
	}
	for _, q := range s.Queries {
		c.query(q)
	}
}

func (c *checker) patterns(ps []*gojq.Pattern) {
	for _, p := range ps {
		c.pattern(p)
	}
}

// pattern walks the expressions inside a destructuring pattern (object keys computed from queries or
// interpolated strings); the variables it binds are not references.
func (c *checker) pattern(p *gojq.Pattern) {
	if p == nil {
		return
	}
	c.patterns(p.Array)
	for _, o := range p.Object {
		c.str(o.KeyString)
		c.query(o.KeyQuery)
		c.pattern(o.Val)
	}
}

// maxCandidates bounds the re-parses of the offset search.
const maxCandidates = 64

// refusal builds the error for the refused constructs found in src, reporting the one that starts
// first in the source.
func refusal(src string, uses []use) *Error {
	best := use{}
	bestOff := -1
	seen := map[string]bool{}
	for _, u := range uses {
		if seen[u.name] {
			continue
		}
		seen[u.name] = true
		off := locate(src, u)
		if off >= 0 && (bestOff < 0 || off < bestOff) {
			best, bestOff = u, off
		}
	}
	if bestOff < 0 {
		best = uses[0]
	}
	return &Error{Message: best.message(), Offset: bestOff}
}

// locate returns the byte offset of the first refused occurrence of u in src, or -1.
//
// The gojq syntax tree carries no positions. Imports are found by scanning for the keyword outside
// comments and strings (they precede everything but a module directive). Functions and variables are
// found by trial: each textual occurrence of the name is renamed in turn, and the occurrence whose
// renaming removes a refused reference is the one.
func locate(src string, u use) int {
	if u.kind == refusedImport {
		return scanKeyword(src, u.name)
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return -1
	}
	total := countUses(q, u.name)
	repl := strings.Repeat("_", len(u.name))
	if u.kind == refusedVar {
		repl = "$" + repl[1:]
	}
	tried := 0
	for off := 0; off < len(src) && tried < maxCandidates; {
		i := strings.Index(src[off:], u.name)
		if i < 0 {
			break
		}
		p := off + i
		off = p + len(u.name)
		if !boundary(src, p, len(u.name), u.kind == refusedVar) {
			continue
		}
		tried++
		q2, err := gojq.Parse(src[:p] + repl + src[p+len(u.name):])
		if err != nil {
			continue
		}
		if countUses(q2, u.name) < total {
			return p
		}
	}
	return -1
}

func isIdentByte(b byte, tail bool) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '_' || tail && '0' <= b && b <= '9'
}

// boundary reports whether src[p:p+n] is a whole identifier (or variable) token candidate.
func boundary(src string, p, n int, variable bool) bool {
	if p+n < len(src) && isIdentByte(src[p+n], true) {
		return false
	}
	if variable || p == 0 {
		return true
	}
	prev := src[p-1]
	return !isIdentByte(prev, true) && prev != '$' && prev != '.' && prev != '@'
}

// scanKeyword returns the offset of the first whole-word kw outside comments and string literals.
func scanKeyword(src, kw string) int {
	for i := 0; i < len(src); i++ {
		switch b := src[i]; {
		case b == '#':
			for i++; i < len(src) && src[i] != '\n'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case b == '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case strings.HasPrefix(src[i:], kw) && boundary(src, i, len(kw), false):
			return i
		}
	}
	return -1
}
