package spec

import (
	"fmt"
	"strings"

	"github.com/nikahq/nika/spec/expr"
	"github.com/nikahq/nika/spec/schema"
)

// siteKind is the kind of expression position; it decides the scope
// (LANGUAGE.md §4.2, §3.2).
type siteKind uint8

const (
	siteWhen siteKind = iota
	siteForEach
	siteWith
	siteBody
	siteRecover
	siteFinally
	siteFinallyWhen
	siteOutputs
	siteForEachItem // an element of a literal for_each list: for_each's scope, any type
)

var siteNames = [...]string{"`when`", "`for_each`", "`with`", "the verb body", "`on_error.recover`", "`on_finally`", "the `when` of an on_finally step", "`outputs`", "`for_each`"}

// exprSite is one string scalar holding placeholders, compiled in the
// expression stage once every task and declaration is known.
type exprSite struct {
	tmpl *Template
	scan expr.Template
	kind siteKind
	task *taskState
}

type memoKey struct {
	n    *Node
	kind siteKind
	t    *taskState
}

// template registers a whole-expression position (`when`, `for_each`): the
// string must be exactly one placeholder.
func (c *checker) template(n *Node, path string, kind siteKind, t *taskState) *Template {
	d := deref(n)
	scan, serr := expr.Scan(d.Str)
	if serr != nil {
		c.scanError(n, path, serr)
		return nil
	}
	if !scan.Whole() {
		what := siteNames[kind]
		example := "`${{ tasks.a.status == 'success' }}`"
		if kind == siteForEach {
			example = "`${{ vars.items }}`, or a YAML list"
		}
		c.errorf(CodeVarStatic, n, path, fmt.Sprintf("Write %s as exactly one expression, e.g. %s (quote it when it holds `: `, ` #`, `?` or braces).", what, example),
			"%s must be exactly one `${{ … }}` expression", what)
		return nil
	}
	tmpl := &Template{Source: d.Str, Node: d, Path: path}
	c.sites = append(c.sites, &exprSite{tmpl: tmpl, scan: scan, kind: kind, task: t})
	return tmpl
}

func (c *checker) scanError(n *Node, path string, e *expr.ScanError) {
	d := deref(n)
	detail := "Close the placeholder with `}}`; write `\\${{` for a literal `${{`."
	if e.Code == CodeVarStatic {
		detail = "Write an expression between `${{` and `}}`, or remove the placeholder."
	}
	c.errorAt(e.Code, c.placeholderPos(d, e.Offset), path, detail, e.Message)
	c.markBad(n)
}

// dataValue converts a data value (with, args, verb fields, outputs,
// recover, for_each lists) into a Value whose placeholder strings are
// Templates registered for compilation. Aliased subtrees are converted once
// per scope and shared, so aliases never expand here.
func (c *checker) dataValue(n *Node, path string, kind siteKind, t *taskState) Value {
	if n == nil {
		return nil
	}
	if nodes, bytes := c.expandedSize(n); nodes > maxValueNodes || bytes > maxValueBytes {
		limit := limitNodes
		if nodes <= maxValueNodes {
			limit = limitBytes
		}
		c.valueTooLarge(n, path, tooLarge(n, limit))
		return nil
	}
	return c.dataValueRec(n, path, kind, t)
}

// expandedSize is the number of nodes and string bytes n stands for once
// its aliases are expanded, memoized per node so that alias bombs cost
// O(nodes) to measure.
func (c *checker) expandedSize(n *Node) (nodes, bytes int) {
	n = n.Deref()
	if n == nil {
		return 1, 0
	}
	if c.sizes == nil {
		c.sizes = map[*Node][2]int{}
	}
	if s, ok := c.sizes[n]; ok {
		return s[0], s[1]
	}
	c.sizes[n] = [2]int{1, 0} // guards against pathological self-reference
	nodes, bytes = 1, len(n.Str)
	add := func(k *Node) {
		a, b := c.expandedSize(k)
		nodes, bytes = min(nodes+a, 1<<40), min(bytes+b, 1<<40)
	}
	for _, it := range n.Items {
		add(it)
	}
	for _, p := range n.Pairs {
		bytes += len(p.Key.Str)
		add(p.Value)
	}
	c.sizes[n] = [2]int{nodes, bytes}
	return nodes, bytes
}

func (c *checker) dataValueRec(n *Node, path string, kind siteKind, t *taskState) Value {
	if c.memo == nil {
		c.memo = map[memoKey]Value{}
	}
	d := n.Deref()
	if d == nil {
		return nil
	}
	key := memoKey{d, kind, t}
	if d.Anchor != "" || n.Kind == KindAlias {
		if v, ok := c.memo[key]; ok {
			return v
		}
	}
	var out Value
	switch d.Kind {
	case KindNull:
		out = nil
	case KindBool:
		out = d.Bool
	case KindInt:
		out = int(d.Int)
	case KindFloat:
		out = d.Float
	case KindString:
		if !strings.Contains(d.Str, "${{") {
			out = d.Str
			break
		}
		scan, serr := expr.Scan(d.Str)
		if serr != nil {
			c.scanError(d, path, serr)
			return nil
		}
		if !scan.HasExpr() {
			var b strings.Builder
			for _, s := range scan.Segments {
				b.WriteString(s.Text)
			}
			out = b.String()
			break
		}
		tmpl := &Template{Source: d.Str, Node: d, Path: path}
		c.sites = append(c.sites, &exprSite{tmpl: tmpl, scan: scan, kind: kind, task: t})
		out = tmpl
	case KindSeq:
		items := make([]any, len(d.Items))
		for i, it := range d.Items {
			items[i] = c.dataValueRec(it, pathIndex(path, i), kind, t)
		}
		out = items
	case KindMap:
		m := make(map[string]any, len(d.Pairs))
		for _, p := range d.Pairs {
			if _, dup := m[p.Key.Str]; dup {
				continue
			}
			m[p.Key.Str] = c.dataValueRec(p.Value, pathKey(path, p.Key.Str), kind, t)
		}
		out = m
	}
	if d.Anchor != "" || n.Kind == KindAlias {
		c.memo[key] = out
	}
	return out
}

// expressions compiles every registered site and resolves its references
// against the scope of its position.
func (c *checker) expressions() {
	env := expr.Env{Vars: c.varTypes, Env: c.envTypes, Secrets: c.secNames}
	c.computeShapes()
	for _, s := range c.sites {
		ok := true
		for _, seg := range s.scan.Segments {
			if !seg.Expr {
				s.tmpl.Parts = append(s.tmpl.Parts, TemplatePart{Text: seg.Text})
				continue
			}
			pos := c.placeholderPos(s.tmpl.Node, seg.Offset)
			prog, issues := expr.Compile(seg.Text, env)
			for _, is := range issues {
				detail := c.issueDetail(is, s)
				c.errorAt(is.Code, pos, s.tmpl.Path, detail, is.Message)
				ok = false
			}
			if prog == nil {
				ok = false
				continue
			}
			for _, r := range prog.Refs {
				if !c.resolveRef(s, r, pos) {
					ok = false
				}
			}
			if ok && (s.kind == siteWhen || s.kind == siteFinallyWhen) && prog.Type != expr.Any && prog.Type != expr.Bool {
				c.errorAt(CodeVarStatic, pos, s.tmpl.Path, "Make the condition a boolean, e.g. compare it: `${{ size(x) > 0 }}`.",
					fmt.Sprintf("`when` must be a boolean expression, but this one is %s", withArticle(prog.Type.String())))
				ok = false
			}
			if ok && s.kind == siteForEach && prog.Type != expr.Any && prog.Type != expr.Array {
				c.errorAt(CodeVarStatic, pos, s.tmpl.Path, "Give `for_each` an expression that yields a list.",
					fmt.Sprintf("`for_each` must yield a list, but this expression is %s", withArticle(prog.Type.String())))
				ok = false
			}
			s.tmpl.Parts = append(s.tmpl.Parts, TemplatePart{Text: seg.Text, Program: prog})
		}
	}
}

// recordFields are the fields of every task record (§3.13).
var recordFields = []string{"status", "output", "error", "started_at", "ended_at", "duration_ms"}

func (c *checker) resolveRef(s *exprSite, r expr.Ref, pos Pos) bool {
	path := s.tmpl.Path
	where := siteNames[s.kind]
	fail := func(code, detail, format string, args ...any) bool {
		c.errorAt(code, pos, path, detail, fmt.Sprintf(format, args...))
		return false
	}
	first := ""
	if len(r.Path) > 0 {
		first = r.Path[0]
	}
	t := s.task
	switch r.Root {
	case "vars", "env", "secrets":
		names := map[string][]string{"vars": c.varNames, "env": c.envNames, "secrets": c.secNames}[r.Root]
		if first != "" && !contains(names, first) && !(r.InHas && len(r.Path) == 1) {
			return fail(CodeVarUnresolved, fmt.Sprintf("Declare `%s` under `%s:`, or fix the name.%s", first, r.Root, didYouMean(first, names)),
				"`%s.%s` is not declared", r.Root, first)
		}
		if r.Root == "secrets" && (s.kind == siteBody || s.kind == siteFinally) && (strings.HasSuffix(path, ".prompt") || strings.HasSuffix(path, ".system")) &&
			(strings.Contains(path, ".infer.") || strings.Contains(path, ".agent.")) {
			c.secretInPrompt = append(c.secretInPrompt, lintAt{pos: pos, path: path, name: first})
		}
	case "with":
		if s.kind == siteWith {
			return fail(CodeVarUnresolved, "`with` values cannot read each other: compute the value again, or move it to a task.", "`with` is not visible inside `with`")
		}
		if s.kind != siteBody && s.kind != siteRecover {
			return fail(CodeVarUnresolved, "`with` is visible only in the verb body and `on_error.recover`.", "`with` is not visible in %s", where)
		}
		if first != "" {
			if _, ok := t.withKeys[first]; !ok && !(r.InHas && len(r.Path) == 1) {
				keys := make([]string, 0, len(t.withKeys))
				for k := range t.withKeys {
					keys = append(keys, k)
				}
				return fail(CodeVarUnresolved, fmt.Sprintf("Declare `%s` under the task's `with:`, or fix the name.%s", first, didYouMean(first, keys)),
					"`with.%s` is not declared", first)
			}
			t.withUsed[first] = true
		} else {
			for k := range t.withKeys {
				t.withUsed[k] = true
			}
		}
	case "item", "index":
		if t == nil || !t.forEach {
			return fail(CodeVarUnresolved, fmt.Sprintf("`%s` exists only in tasks with `for_each`.", r.Root), "`%s` is not defined outside `for_each`", r.Root)
		}
		if s.kind != siteWith && s.kind != siteBody && s.kind != siteRecover {
			return fail(CodeVarUnresolved, fmt.Sprintf("`%s` is visible in `with`, the verb body and `on_error.recover` only.", r.Root), "`%s` is not visible in %s", r.Root, where)
		}
	case "tasks":
		return c.resolveTaskRef(s, r, pos)
	default:
		return fail(CodeVarUnresolved, "Use a namespace: vars, env, secrets, tasks, with, item or index.", "unknown name `%s`", r.Root)
	}
	return true
}

func (c *checker) resolveTaskRef(s *exprSite, r expr.Ref, pos Pos) bool {
	path := s.tmpl.Path
	fail := func(code, detail, format string, args ...any) bool {
		c.errorAt(code, pos, path, detail, fmt.Sprintf(format, args...))
		return false
	}
	if r.Dynamic {
		return fail(CodeVarStatic, "Name the task statically: `tasks.fetch` or `tasks['fetch']`.", "dynamic task reference `tasks[…]`")
	}
	if len(r.Path) == 0 {
		if s.kind == siteOutputs {
			return true
		}
		return fail(CodeVarStatic, "Name the task statically: `tasks.fetch`.", "the whole `tasks` namespace cannot be read here")
	}
	x := r.Path[0]
	xt, exists := c.taskByID[x]
	if !exists {
		if r.InHas && len(r.Path) == 1 {
			return true
		}
		return fail(CodeVarUnresolved, "Use the id of a task of this workflow."+didYouMean(x, c.taskIDs), "unknown task `%s`", x)
	}
	t := s.task
	switch s.kind {
	case siteWhen, siteForEach, siteForEachItem, siteWith, siteBody:
		if _, ok := t.depNodes[x]; !ok {
			return fail(CodeDAGMissingEdge, fmt.Sprintf("Add `%s` to `depends_on` of `%s`.", x, t.ID), "`tasks.%s` is read without an edge", x)
		}
	case siteFinally, siteFinallyWhen:
		if _, ok := t.depNodes[x]; !ok && x != t.ID {
			return fail(CodeDAGMissingEdge, fmt.Sprintf("Add `%s` to `depends_on` of `%s`; on_finally sees the task itself and its dependencies.", x, t.ID), "`tasks.%s` is read without an edge", x)
		}
	case siteRecover:
		c.recoverRefs = append(c.recoverRefs, recoverRef{from: t, to: x, pos: pos, path: path})
	}
	if len(r.Path) < 2 {
		return true
	}
	f := r.Path[1]
	if !contains(recordFields, f) && !xt.bindings[f] {
		if r.InHas && len(r.Path) == 2 {
			return true
		}
		cands := append([]string(nil), recordFields...)
		for b := range xt.bindings {
			cands = append(cands, b)
		}
		return fail(CodeVarUnresolved, fmt.Sprintf("Read a record field (%s) or a binding of `%s`.%s", strings.Join(recordFields, ", "), x, didYouMean(f, cands)),
			"`tasks.%s.%s` is neither a record field nor a binding of `%s`", x, f, x)
	}
	if f == "output" && len(r.Path) > 2 && xt.shape != nil {
		if bad, reason := schema.Walk(xt.shape, r.Path[2:]); bad >= 0 {
			return fail(CodeVarBadPath, fmt.Sprintf("Fix the path to match what `%s` produces (its `schema:`, or its exec capture).", x),
				"`%s` cannot exist: %s", refPath("tasks", append([]string{x, "output"}, r.Path[2:bad+3]...)), reason)
		}
	}
	return true
}

// computeShapes derives each task's known output shape (§4.5).
func (c *checker) computeShapes() {
	for _, t := range c.tasks {
		if t.bad || t.hasRecov {
			continue
		}
		var shape any
		body, _ := t.Body.(map[string]any)
		switch t.Verb {
		case "infer", "agent":
			if t.SchemaDoc != nil {
				shape = t.SchemaDoc
			} else if body != nil {
				_, hasSchema := body["schema"]
				// An agent that may call nika:done returns its result, any
				// value (AGENT.md §5.3): its shape is open.
				tools, _ := body["tools"].([]any)
				globs := make([]string, 0, len(tools))
				for _, g := range tools {
					if s, ok := g.(string); ok {
						globs = append(globs, s)
					}
				}
				if !hasSchema && !(t.Verb == "agent" && ToolAllowed(globs, "nika:done")) {
					shape = schema.StringShape
				}
			}
		case "exec":
			if body != nil {
				if body["capture"] == "structured" {
					shape = schema.StructuredExecShape
				} else {
					shape = schema.StringShape
				}
			}
		}
		if shape != nil && t.forEach {
			shape = schema.ArrayOf(shape)
		}
		t.shape = shape
	}
}

// refPath writes a reference back as an expression path: fields with dots,
// indexes in brackets.
func refPath(root string, path []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, p := range path {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			b.WriteString("[" + p + "]")
		} else {
			b.WriteString("." + p)
		}
	}
	return b.String()
}

// issueDetail makes an expression issue's detail prescriptive: an unknown
// bare name that is declared in a namespace gets the prefixed form.
func (c *checker) issueDetail(is expr.Issue, s *exprSite) string {
	if is.Code == CodeVarUnresolved && strings.HasPrefix(is.Message, "unknown name '") {
		name := strings.TrimSuffix(strings.TrimPrefix(is.Message, "unknown name '"), "'")
		for _, ns := range []struct {
			root  string
			names []string
		}{{"vars", c.varNames}, {"env", c.envNames}, {"secrets", c.secNames}} {
			if contains(ns.names, name) {
				return fmt.Sprintf("Write `%s.%s`: every name needs its namespace (vars, env, secrets, tasks, with, item, index).", ns.root, name)
			}
		}
		if c.taskByID[name] != nil {
			return fmt.Sprintf("Write `tasks.%s`: every name needs its namespace (vars, env, secrets, tasks, with, item, index).", name)
		}
		if s.task != nil && s.task.withKeys[name] != nil {
			return fmt.Sprintf("Write `with.%s`: every name needs its namespace.", name)
		}
		if is.Detail != "" {
			return "Use a namespace: vars, env, secrets, tasks, with, item or index; " + is.Detail
		}
		return "Use a namespace: vars, env, secrets, tasks, with, item or index."
	}
	if is.Detail != "" {
		d := strings.ToUpper(is.Detail[:1]) + is.Detail[1:]
		if !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, "?") {
			d += "."
		}
		return d
	}
	switch {
	case strings.Contains(is.Message, "syntax") || strings.Contains(is.Message, "unexpected"):
		return "Fix the expression's syntax; quote the whole scalar when it holds `: `, ` #`, `?` or braces."
	case strings.Contains(is.Message, "type"):
		return "Make the operand types agree (the types of vars and env come from their declarations); convert with string(), int() or float()."
	}
	return "Fix the expression (the language is expr-lang's, with nika's rules: LANGUAGE.md §4.4)."
}
