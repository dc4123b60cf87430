package expr

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Limits.
const (
	// maxNodes bounds the size of an expression's syntax tree.
	maxNodes = 4000
	// maxNesting bounds the nesting of brackets, which the parser handles
	// recursively without creating nodes for parentheses.
	maxNesting = 100
	// memoryBudget bounds what one evaluation may allocate through expr's
	// accounted operations (ranges, map/filter results, repeat, …).
	memoryBudget = 1_000_000
)

// baseConfig is expr's configuration, built once and never mutated: each
// compilation copies the struct and sets its own environment and cache.
var baseConfig = newBaseConfig()

// Sorted candidate lists for "did you mean".
var (
	nameCandidates     = sortedStrings(append(roots[:], "null"))
	functionCandidates = functionNames()
)

func newBaseConfig() conf.Config {
	c := conf.CreateNew()
	c.Optimize = false
	c.Strict = false // unknown names are reported by the analysis (VAR-001)
	c.MaxNodes = maxNodes
	c.Disabled[fnNow] = true
	delete(c.Builtins, fnNow)
	for _, f := range nikaFunctions() {
		c.Functions[f.Name] = f
	}
	return *c
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

func functionNames() []string {
	var names []string
	for name := range baseConfig.Builtins {
		if _, over := baseConfig.Functions[name]; !over {
			names = append(names, name)
		}
	}
	for name := range baseConfig.Functions {
		if !strings.HasPrefix(name, "%") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// isFunction reports whether name is a function callable by user code.
func isFunction(name string) bool {
	if strings.HasPrefix(name, "%") {
		return false
	}
	if _, ok := baseConfig.Functions[name]; ok {
		return true
	}
	_, ok := baseConfig.Builtins[name]
	return ok
}

// Program is a compiled expression.
type Program struct {
	// Source is the expression source given to Compile.
	Source string
	// Refs lists every reference to a namespace root, in source order, with
	// identical references (same root, path and flags) reported once.
	Refs []Ref
	// Type is the static type of the normalized result (Any when unknown).
	Type Type

	prog    *vm.Program // nil when compilation reported issues
	metered bool        // some loop charges the budget: the evaluation needs it in its environment
}

// Compile compiles one expression (the text of a placeholder, without its
// delimiters) against the static environment env.
//
// It returns the issues found: NIKA-VAR-005 for a syntax error, a type error
// proven from the static types (D13), `now()`, a has() whose argument is not
// a field selection, chained comparisons (D43), a bad `let`, a method of the
// compatibility set with the wrong number of arguments, or an expression too
// large; NIKA-VAR-001 for an unknown root or function name. Undeclared
// members of a namespace (vars.X, tasks.X, …) are not issues: they appear in
// Refs, and the caller decides.
//
// The returned Program is nil when the source is empty, too deeply nested or
// does not parse (and after a recovered panic). Otherwise it is non-nil even
// with issues, so that the caller gets Refs for its own checks; such a
// Program has Type Any and cannot be evaluated. A panic inside expr is
// recovered and reported as NIKA-VAR-005.
//
// Compile is safe for concurrent use.
func Compile(src string, env Env) (p *Program, issues []Issue) {
	defer func() {
		if r := recover(); r != nil {
			p = nil
			issues = []Issue{{Code: CodeInvalid, Message: cleanMessage(fmt.Sprintf("cannot compile expression: %v", r))}}
		}
	}()
	return compile(src, env)
}

func compile(src string, env Env) (*Program, []Issue) {
	if off, ok := nestingOK(src); !ok {
		return nil, []Issue{{Code: CodeInvalid, Message: "expression is nested too deeply", Offset: off}}
	}
	if strings.TrimSpace(src) == "" {
		return nil, []Issue{{Code: CodeInvalid, Message: "empty expression"}}
	}
	cfg := baseConfig
	tree, err := parser.ParseWithConfig(src, &cfg)
	a := newAnalysis(src)
	if err != nil {
		return nil, []Issue{a.fileIssue(err, "syntax error: ")}
	}
	a.node(tree.Node)
	a.finish()
	p := &Program{Source: src, Refs: a.refs}
	if len(a.issues) > 0 {
		return p, a.issues
	}

	c := &compilation{a: a, cache: &cfg.NtCache}
	c.rewriteA(&tree.Node)

	cfg.Env = envNature(env, a.refs)
	if _, err := checker.Check(tree, &cfg); err != nil {
		return p, []Issue{a.typeIssue(err)}
	}

	c.rewriteB(&tree.Node)
	metered := c.meter(&tree.Node)
	if _, err := checker.Check(tree, &cfg); err != nil {
		// The rewrites only add well-typed calls; this is a bug.
		return p, []Issue{a.fileIssue(err, "internal error: ")}
	}
	p.Type = typeOfNature(tree.Node.Nature())

	prog, err := compiler.Compile(tree, &cfg)
	if err != nil {
		return p, []Issue{a.fileIssue(err, "cannot compile expression: ")}
	}
	p.prog, p.metered = prog, metered
	return p, nil
}

// nestingOK checks the bracket nesting outside string literals.
func nestingOK(src string) (int, bool) {
	depth := 0
	for k := 0; k < len(src); k++ {
		switch src[k] {
		case '\'', '"', '`':
			if e := stringEnd(src, k); e >= 0 {
				k = e
			} else {
				return 0, true // unterminated string: the parser reports it
			}
		case '(', '[', '{':
			depth++
			if depth > maxNesting {
				return k, false
			}
		case ')', ']', '}':
			depth--
		}
	}
	return 0, true
}

// envNature is the static type of the evaluation environment (D13). Only
// the vars and env members the expression references are typed; any other
// member is Any, so an undeclared name never fails type checking.
func envNature(env Env, refs []Ref) nature.Nature {
	var vars, envs map[string]nature.Nature
	for _, r := range refs {
		if len(r.Path) == 0 {
			continue
		}
		var decl map[string]Type
		var into *map[string]nature.Nature
		switch r.Root {
		case RootVars:
			decl, into = env.Vars, &vars
		case RootEnv:
			decl, into = env.Env, &envs
		default:
			continue
		}
		if t, ok := decl[r.Path[0]]; ok && t != Any && t != Null {
			if *into == nil {
				*into = make(map[string]nature.Nature, 2)
			}
			(*into)[r.Path[0]] = natureOf(t)
		}
	}
	return openMap(map[string]nature.Nature{
		RootVars:    openMap(vars, nature.Nature{}),
		RootEnv:     openMap(envs, nature.Nature{}),
		RootSecrets: openMap(nil, natureOf(String)),
		RootTasks:   {},
		RootWith:    {},
		RootItem:    {},
		RootIndex:   natureOf(Int),
		stepKey:     nature.FromType(reflect.TypeOf(stepFunc(nil))),
	}, nature.Nature{})
}

// ---- messages ----

var goTypeNames = strings.NewReplacer(
	"map[string]interface {}", "object",
	"[]interface {}", "array",
	"interface {}", "any",
	"time.Time", "time",
	"time.Duration", "duration",
	"<nil>", "null",
	"type nil", "type null",
)

// cleanMessage makes expr's message one line and names nika's kinds.
func cleanMessage(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	return goTypeNames.Replace(msg)
}

func (a *analysis) fileIssue(err error, prefix string) Issue {
	var fe *file.Error
	if errors.As(err, &fe) {
		return Issue{Code: CodeInvalid, Message: prefix + cleanMessage(fe.Message), Offset: a.byteOffset(fe.From)}
	}
	return Issue{Code: CodeInvalid, Message: prefix + cleanMessage(err.Error())}
}

func (a *analysis) typeIssue(err error) Issue {
	is := a.fileIssue(err, "type error: ")
	if strings.Contains(is.Message, "invalid operation: + (mismatched types") && strings.Contains(is.Message, "string") {
		is.Detail = "`+` joins strings only; convert with string(x)"
	}
	return is
}

// ---- rewrites ----

type compilation struct {
	a     *analysis
	cache *nature.Cache
	temps int // temporaries introduced by rewrites
}

func call(at ast.Node, fn string, args ...ast.Node) *ast.CallNode {
	callee := &ast.IdentifierNode{Value: fn}
	callee.SetLocation(at.Location())
	n := &ast.CallNode{Callee: callee, Arguments: args}
	n.SetLocation(at.Location())
	return n
}

func str(at ast.Node, s string) ast.Node {
	n := &ast.StringNode{Value: s}
	n.SetLocation(at.Location())
	return n
}

// eachChild calls f on a pointer to every child of n.
func eachChild(n ast.Node, f func(*ast.Node)) {
	visit := func(p *ast.Node) {
		if *p != nil {
			f(p)
		}
	}
	switch n := n.(type) {
	case *ast.UnaryNode:
		visit(&n.Node)
	case *ast.BinaryNode:
		visit(&n.Left)
		visit(&n.Right)
	case *ast.ChainNode:
		visit(&n.Node)
	case *ast.MemberNode:
		visit(&n.Node)
		visit(&n.Property)
	case *ast.SliceNode:
		visit(&n.Node)
		visit(&n.From)
		visit(&n.To)
	case *ast.CallNode:
		visit(&n.Callee)
		for i := range n.Arguments {
			visit(&n.Arguments[i])
		}
	case *ast.BuiltinNode:
		for i := range n.Arguments {
			visit(&n.Arguments[i])
		}
	case *ast.PredicateNode:
		visit(&n.Node)
	case *ast.VariableDeclaratorNode:
		visit(&n.Value)
		visit(&n.Expr)
	case *ast.SequenceNode:
		for i := range n.Nodes {
			visit(&n.Nodes[i])
		}
	case *ast.ConditionalNode:
		visit(&n.Cond)
		visit(&n.Exp1)
		visit(&n.Exp2)
	case *ast.ArrayNode:
		for i := range n.Nodes {
			visit(&n.Nodes[i])
		}
	case *ast.MapNode:
		for i := range n.Pairs {
			visit(&n.Pairs[i])
		}
	case *ast.PairNode:
		visit(&n.Key)
		visit(&n.Value)
	}
}

// rewriteA applies the rewrites that must precede type checking: the
// compatibility forms, `null`, and deep equality for `==` / `!=` (which must
// never be a type error, D14).
func (c *compilation) rewriteA(p *ast.Node) {
	switch n := (*p).(type) {
	case *ast.IdentifierNode:
		if n.Value == "null" {
			nl := &ast.NilNode{}
			nl.SetLocation(n.Location())
			*p = nl
		}
		return
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == fnHasU {
			if hasSelection(n) != nil {
				sels, base := memberChain(n.Arguments[0])
				args := make([]ast.Node, 0, len(sels)+1)
				args = append(args, base)
				for _, s := range sels {
					args = append(args, s.Property)
				}
				h := call(n, fnHas, args...)
				*p = h
				for i := range h.Arguments {
					c.rewriteA(&h.Arguments[i])
				}
				return
			}
		}
		if m, ok := n.Callee.(*ast.MemberNode); ok && m.Method {
			if repl := c.compatMethod(n, m); repl != nil {
				*p = repl
				eachChild(repl, c.rewriteA)
				return
			}
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "==", "!=":
			fn := fnEq
			if n.Operator == "!=" {
				fn = fnNe
			}
			e := call(n, fn, n.Left, n.Right)
			*p = e
			eachChild(e, c.rewriteA)
			return
		}
	}
	eachChild(*p, c.rewriteA)
}

// compatMethod rewrites x.size() to size(x) and x.contains(s) (startsWith,
// endsWith) to the operator form, or returns nil. Under `?.` a null x gives
// null: x?.size() becomes `let t = x; t == nil ? nil : size(t)`.
func (c *compilation) compatMethod(n *ast.CallNode, m *ast.MemberNode) ast.Node {
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return nil
	}
	build := func(base ast.Node) ast.Node {
		switch {
		case prop.Value == "size" && len(n.Arguments) == 0:
			return call(n, fnSize, base)
		case (prop.Value == "contains" || prop.Value == "startsWith" || prop.Value == "endsWith") && len(n.Arguments) == 1:
			b := &ast.BinaryNode{Operator: prop.Value, Left: base, Right: n.Arguments[0]}
			b.SetLocation(n.Location())
			return b
		}
		return nil
	}
	if !m.Optional {
		return build(m.Node)
	}
	c.temps++
	name := fmt.Sprintf("%%t%d", c.temps)
	ref := func() ast.Node {
		id := &ast.IdentifierNode{Value: name}
		id.SetLocation(m.Node.Location())
		return id
	}
	body := build(ref())
	if body == nil {
		return nil
	}
	nl := &ast.NilNode{}
	nl.SetLocation(n.Location())
	nl2 := &ast.NilNode{}
	nl2.SetLocation(n.Location())
	cond := &ast.ConditionalNode{Ternary: true, Cond: call(n, fnEq, ref(), nl), Exp1: nl2, Exp2: body}
	cond.SetLocation(n.Location())
	decl := &ast.VariableDeclaratorNode{Name: name, Value: m.Node, Expr: cond}
	decl.SetLocation(n.Location())
	return decl
}

func isBool(n ast.Node) bool { return n.Nature().IsBool() }

func isString(n ast.Node) bool { return n.Nature().IsString() }

// predicateBuiltins are the builtins whose predicate must yield a boolean.
var predicateBuiltins = map[string]bool{
	"all": true, "any": true, "none": true, "one": true, "filter": true, "count": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
}

// rewriteB applies, after type checking, the run-time rules of D14 where
// the static type does not already guarantee them. Decisions read the
// natures of the original operands, before they are wrapped.
func (c *compilation) rewriteB(p *ast.Node) {
	switch n := (*p).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "||", "and", "or":
			op := "`" + n.Operator + "`"
			c.boolOperand(&n.Left, op)
			c.boolOperand(&n.Right, op)
			return
		case "in":
			c.replaceBinary(p, n, fnIn)
			return
		case "contains", "startsWith", "endsWith":
			if !isString(n.Left) || !isString(n.Right) {
				c.replaceBinary(p, n, "%"+n.Operator)
				return
			}
		}
	case *ast.UnaryNode:
		if n.Operator == "!" || n.Operator == "not" {
			c.boolOperand(&n.Node, "`"+n.Operator+"`")
			return
		}
	case *ast.ConditionalNode:
		c.boolOperand(&n.Cond, "the condition of `?:`")
		c.rewriteB(&n.Exp1)
		c.rewriteB(&n.Exp2)
		return
	case *ast.MemberNode:
		if name, ok := n.Property.(*ast.StringNode); ok && !n.Method && n.Node.Nature().IsUnknown(c.cache) {
			b := &ast.BoolNode{Value: n.Optional}
			b.SetLocation(n.Location())
			w := call(n, fnObj, n.Node, str(n, name.Value), b)
			n.Node = w
			c.rewriteB(&w.Arguments[0])
			return
		}
		if _, ok := n.Property.(*ast.StringNode); !ok {
			prop := n.Property.Nature()
			if !prop.IsInteger && !prop.IsString() {
				w := call(n.Property, fnIdx, n.Property)
				n.Property = w
				c.rewriteB(&n.Node)
				c.rewriteB(&w.Arguments[0])
				return
			}
		}
	case *ast.SliceNode:
		for _, b := range []*ast.Node{&n.From, &n.To} {
			if *b != nil && !(*b).Nature().IsInteger {
				*b = call(*b, fnSliceIdx, *b)
			}
		}
	case *ast.BuiltinNode:
		if predicateBuiltins[n.Name] && len(n.Arguments) >= 2 {
			if pred, ok := n.Arguments[1].(*ast.PredicateNode); ok {
				c.boolOperand(&pred.Node, "the predicate of "+n.Name+"()")
				c.rewriteB(&n.Arguments[0])
				for i := 2; i < len(n.Arguments); i++ {
					c.rewriteB(&n.Arguments[i])
				}
				return
			}
		}
	}
	eachChild(*p, c.rewriteB)
}

func (c *compilation) replaceBinary(p *ast.Node, n *ast.BinaryNode, fn string) {
	r := call(n, fn, n.Left, n.Right)
	*p = r
	c.rewriteB(&r.Arguments[0])
	c.rewriteB(&r.Arguments[1])
}

// boolOperand makes the operand at p fail at run time unless it is a
// boolean, if its static type does not already prove it.
func (c *compilation) boolOperand(p *ast.Node, what string) {
	if isBool(*p) {
		c.rewriteB(p)
		return
	}
	w := call(*p, fnBool, *p, str(*p, what))
	*p = w
	c.rewriteB(&w.Arguments[0])
}
