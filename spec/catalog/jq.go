package catalog

import (
	"errors"
	"fmt"

	"github.com/itchyny/gojq"
)

// jqIssue is why a literal jq program cannot run in nika:jq (or nika:fetch mode jq).
type jqIssue struct {
	msg, detail string
}

// checkJQ parses and compiles a jq program as nika runs it (LANGUAGE.md §3.6, D15): no
// variables, no modules, and none of the impure builtins. It returns nil when the program
// compiles.
func checkJQ(src string) *jqIssue {
	q, err := gojq.Parse(src)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			return &jqIssue{fmt.Sprintf("jq program does not parse: %s (at byte %d)", pe.Error(), pe.Offset),
				"Fix the jq syntax; test it with `jq` or `gojq` on a sample input."}
		}
		return &jqIssue{"jq program does not parse: " + oneLine(err.Error()), "Fix the jq syntax."}
	}
	if name := impureJQ(q, nil); name != "" {
		return &jqIssue{fmt.Sprintf("jq program uses `%s`, which nika refuses: jq programs must be pure", name), impureHint(name)}
	}
	if _, err := gojq.Compile(q); err != nil {
		return &jqIssue{"jq program does not compile: " + oneLine(err.Error()),
			"Use only jq builtins and functions defined in the program; no variables are predefined."}
	}
	return nil
}

// isImpureJQ lists the refused builtins of D15, plus strflocaltime (it reads the machine's
// time zone, like localtime).
func isImpureJQ(name string) bool {
	switch name {
	case "now", "mktime", "gmtime", "localtime", "strftime", "strptime", "strflocaltime",
		"input", "inputs", "input_filename", "env", "halt", "halt_error", "debug", "stderr",
		"$ENV", "$__loc__":
		return true
	}
	return false
}

func impureHint(name string) string {
	switch name {
	case "now", "mktime", "gmtime", "localtime", "strftime", "strptime", "strflocaltime":
		return "Remove `" + name + "`; compute and format dates with a `nika:date` task and pass the result in `input`."
	case "env", "$ENV":
		return "Remove `" + name + "`; pass the values the program needs in `input` (e.g. from `env.*` or `vars.*` expressions)."
	case "input", "inputs", "input_filename":
		return "Remove `" + name + "`; the program reads exactly one value, `input`, as `.`."
	case "import", "include":
		return "Remove the `" + name + "` directive and define the functions in the program itself."
	}
	return "Remove `" + name + "`; use `error(...)` to fail, and return values instead of printing them."
}

// jqScope is the set of function names the program defines, innermost first.
type jqScope struct {
	names  map[string]bool
	parent *jqScope
}

func (s *jqScope) defines(name string) bool {
	for ; s != nil; s = s.parent {
		if s.names[name] {
			return true
		}
	}
	return false
}

// impureJQ returns the first refused name the program refers to, or "". A function the
// program defines itself (`def now: 0;`) shadows the builtin and is allowed; the variables
// $ENV and $__loc__ are refused wherever they appear.
func impureJQ(q *gojq.Query, s *jqScope) string {
	if q == nil {
		return ""
	}
	for _, imp := range q.Imports {
		if imp.ImportPath != "" {
			return "import"
		}
		return "include"
	}
	if len(q.FuncDefs) > 0 {
		ns := &jqScope{names: map[string]bool{}, parent: s}
		for _, fd := range q.FuncDefs {
			ns.names[fd.Name] = true
		}
		for _, fd := range q.FuncDefs {
			ps := &jqScope{names: map[string]bool{}, parent: ns}
			for _, a := range fd.Args {
				if len(a) > 0 && a[0] == '$' {
					a = a[1:]
				}
				ps.names[a] = true
			}
			if n := impureJQ(fd.Body, ps); n != "" {
				return n
			}
		}
		s = ns
	}
	if n := impureTerm(q.Term, s); n != "" {
		return n
	}
	if n := impureJQ(q.Left, s); n != "" {
		return n
	}
	if n := impureJQ(q.Right, s); n != "" {
		return n
	}
	return impurePatterns(q.Patterns, s)
}

func impureTerm(t *gojq.Term, s *jqScope) string {
	if t == nil {
		return ""
	}
	var subs []*gojq.Query
	var pats []*gojq.Pattern
	switch {
	case t.Func != nil:
		name := t.Func.Name
		if isImpureJQ(name) && (name[0] == '$' || !s.defines(name)) {
			return name
		}
		subs = append(subs, t.Func.Args...)
	case t.Index != nil:
		subs = append(subs, indexQueries(t.Index)...)
	case t.Object != nil:
		for _, kv := range t.Object.KeyVals {
			subs = append(subs, stringQueries(kv.KeyString)...)
			subs = append(subs, kv.KeyQuery, kv.Val)
		}
	case t.Array != nil:
		subs = append(subs, t.Array.Query)
	case t.Unary != nil:
		if n := impureTerm(t.Unary.Term, s); n != "" {
			return n
		}
	case t.If != nil:
		subs = append(subs, t.If.Cond, t.If.Then, t.If.Else)
		for _, e := range t.If.Elif {
			subs = append(subs, e.Cond, e.Then)
		}
	case t.Try != nil:
		subs = append(subs, t.Try.Body, t.Try.Catch)
	case t.Reduce != nil:
		subs = append(subs, t.Reduce.Query, t.Reduce.Start, t.Reduce.Update)
		pats = t.Reduce.Patterns
	case t.Foreach != nil:
		subs = append(subs, t.Foreach.Query, t.Foreach.Start, t.Foreach.Update, t.Foreach.Extract)
		pats = t.Foreach.Patterns
	case t.Label != nil:
		subs = append(subs, t.Label.Body)
	case t.Query != nil:
		subs = append(subs, t.Query)
	}
	subs = append(subs, stringQueries(t.Str)...)
	for _, sfx := range t.SuffixList {
		if sfx.Index != nil {
			subs = append(subs, indexQueries(sfx.Index)...)
		}
	}
	for _, sub := range subs {
		if n := impureJQ(sub, s); n != "" {
			return n
		}
	}
	return impurePatterns(pats, s)
}

func indexQueries(ix *gojq.Index) []*gojq.Query {
	return append(stringQueries(ix.Str), ix.Start, ix.End)
}

func stringQueries(str *gojq.String) []*gojq.Query {
	if str == nil {
		return nil
	}
	return str.Queries
}

func impurePatterns(ps []*gojq.Pattern, s *jqScope) string {
	for _, p := range ps {
		if p == nil {
			continue
		}
		if n := impurePatterns(p.Array, s); n != "" {
			return n
		}
		for _, o := range p.Object {
			for _, q := range append(stringQueries(o.KeyString), o.KeyQuery) {
				if n := impureJQ(q, s); n != "" {
					return n
				}
			}
			if n := impurePatterns([]*gojq.Pattern{o.Val}, s); n != "" {
				return n
			}
		}
	}
	return ""
}
