package expr

import (
	"github.com/nikahq/nika/spec/internal/nearest"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
)

// Ref is a reference to a namespace root found in an expression.
type Ref struct {
	// Root is one of "vars", "env", "secrets", "tasks", "with", "item", "index".
	Root string
	// Path holds the static selections after the root, in order:
	// tasks.fetch.output.items[0].name gives ["fetch", "output", "items", "0",
	// "name"]. It stops at the first selection that is not static (a computed
	// subscript) and before a method call. Integer subscripts are written in
	// decimal (a negative literal subscript keeps its sign). A bare root has
	// an empty Path.
	Path []string
	// Dynamic is true when the first or second selection after the root is
	// computed (tasks[name], vars.list[i]) — or when the first selection
	// after a root that is always an object (all but item and index) is not
	// a name (tasks[0]). Path then holds the selections before it. A bare
	// root (keys(tasks), toJSON(vars)) has an empty Path and Dynamic false:
	// the whole namespace is read.
	Dynamic bool
	// InHas is true when the last selection of Path is the last selection of
	// a has(…) argument (exempt from unknown-field errors, LANGUAGE.md §4.5).
	InHas bool
	// Offset is the byte offset of the root identifier in the source.
	Offset int
}

func (r Ref) key() string {
	var b strings.Builder
	b.WriteString(r.Root)
	for _, p := range r.Path {
		b.WriteByte(0)
		b.WriteString(p)
	}
	b.WriteByte(0)
	if r.Dynamic {
		b.WriteByte('d')
	}
	if r.InHas {
		b.WriteByte('h')
	}
	return b.String()
}

// Issue is a static problem found in an expression.
type Issue struct {
	// Code is NIKA-VAR-005 or NIKA-VAR-001.
	Code    string
	Message string
	// Detail is an optional hint, such as "did you mean `vars`?".
	Detail string
	// Offset is the byte offset in the expression source.
	Offset int
}

func (i Issue) String() string {
	s := i.Code + " at " + strconv.Itoa(i.Offset) + ": " + i.Message
	if i.Detail != "" {
		s += " (" + i.Detail + ")"
	}
	return s
}

// analysis walks the raw (unpatched) tree.
type analysis struct {
	src     string
	offsets []int // rune index -> byte offset; nil when src is ASCII
	refs    []Ref
	issues  []Issue
	lets    []string
	flagged map[*ast.BinaryNode]bool // comparisons already part of a reported chain
}

func newAnalysis(src string) *analysis {
	a := &analysis{src: src}
	for i := 0; i < len(src); i++ {
		if src[i] >= utf8.RuneSelf {
			a.offsets = make([]int, 0, len(src)+1)
			for j := range src {
				a.offsets = append(a.offsets, j)
			}
			a.offsets = append(a.offsets, len(src))
			break
		}
	}
	return a
}

// byteOffset converts expr's rune offsets to byte offsets.
func (a *analysis) byteOffset(runes int) int {
	if runes < 0 {
		return 0
	}
	if a.offsets == nil {
		return min(runes, len(a.src))
	}
	if runes >= len(a.offsets) {
		return len(a.src)
	}
	return a.offsets[runes]
}

func (a *analysis) at(n ast.Node) int { return a.byteOffset(n.Location().From) }

func (a *analysis) issue(code string, n ast.Node, msg, detail string) {
	a.issues = append(a.issues, Issue{Code: code, Message: msg, Detail: detail, Offset: a.at(n)})
}

func (a *analysis) isLet(name string) bool {
	for i := len(a.lets) - 1; i >= 0; i-- {
		if a.lets[i] == name {
			return true
		}
	}
	return false
}

const msgPure = "expressions are pure; use `nika:date`"

func (a *analysis) node(n ast.Node) {
	switch n := n.(type) {
	case nil:
	case *ast.IdentifierNode:
		a.ident(n)
	case *ast.MemberNode, *ast.ChainNode:
		a.chain(n, false)
	case *ast.CallNode:
		a.call(n)
	case *ast.BuiltinNode:
		if n.Name == fnNow {
			a.issue(CodeInvalid, n, msgPure, "")
		}
		for _, arg := range n.Arguments {
			a.node(arg)
		}
	case *ast.UnaryNode:
		a.node(n.Node)
	case *ast.BinaryNode:
		a.binary(n)
	case *ast.SliceNode:
		a.node(n.Node)
		a.node(n.From)
		a.node(n.To)
	case *ast.PredicateNode:
		a.node(n.Node)
	case *ast.VariableDeclaratorNode:
		if isRoot(n.Name) || n.Name == "null" || n.Name == fnNow || isFunction(n.Name) {
			a.issue(CodeInvalid, n, "`let` cannot redeclare `"+n.Name+"`", "")
		}
		a.node(n.Value)
		a.lets = append(a.lets, n.Name)
		a.node(n.Expr)
		a.lets = a.lets[:len(a.lets)-1]
	case *ast.SequenceNode:
		for _, c := range n.Nodes {
			a.node(c)
		}
	case *ast.ConditionalNode:
		a.node(n.Cond)
		a.node(n.Exp1)
		a.node(n.Exp2)
	case *ast.ArrayNode:
		for _, c := range n.Nodes {
			a.node(c)
		}
	case *ast.MapNode:
		for _, c := range n.Pairs {
			a.node(c)
		}
	case *ast.PairNode:
		a.node(n.Key)
		a.node(n.Value)
	}
}

func (a *analysis) ident(n *ast.IdentifierNode) {
	name := n.Value
	switch {
	case a.isLet(name):
	case isRoot(name):
		a.refs = append(a.refs, Ref{Root: name, Offset: a.at(n)})
	case name == "null":
	case name == fnNow:
		a.issue(CodeInvalid, n, msgPure, "")
	case isFunction(name):
		a.issue(CodeInvalid, n, "`"+name+"` is a function; call it as "+name+"(…)", "")
	default:
		a.issue(CodeUnknownName, n, "unknown name '"+name+"'", didYouMean(name, nameCandidates))
	}
}

// memberChain flattens a chain of selections: the selections innermost
// first, and the base expression.
func memberChain(n ast.Node) ([]*ast.MemberNode, ast.Node) {
	var sels []*ast.MemberNode
	for {
		switch c := n.(type) {
		case *ast.ChainNode:
			n = c.Node
			continue
		case *ast.MemberNode:
			sels = append(sels, c)
			n = c.Node
			continue
		}
		break
	}
	for i, j := 0, len(sels)-1; i < j; i, j = i+1, j-1 {
		sels[i], sels[j] = sels[j], sels[i]
	}
	return sels, n
}

// isObjectRoot reports whether a root is always an object, so that its
// first selection must be a name.
func isObjectRoot(name string) bool { return name != RootItem && name != RootIndex }

// staticKey returns the text of a static selection.
func staticKey(prop ast.Node, first bool) (string, bool) {
	switch p := prop.(type) {
	case *ast.StringNode:
		return p.Value, true
	case *ast.IntegerNode:
		if !first {
			return strconv.Itoa(p.Value), true
		}
	case *ast.UnaryNode:
		if i, ok := p.Node.(*ast.IntegerNode); ok && p.Operator == "-" && !first {
			return "-" + strconv.Itoa(i.Value), true
		}
	}
	return "", false
}

// chain analyses a selection chain; inHas is true when it is the argument of
// has().
func (a *analysis) chain(n ast.Node, inHas bool) {
	sels, base := memberChain(n)
	if id, ok := base.(*ast.IdentifierNode); ok && isRoot(id.Value) && !a.isLet(id.Value) {
		ref := Ref{Root: id.Value, Offset: a.at(id)}
		complete := true
		for i, s := range sels {
			if s.Method {
				complete = false
				break
			}
			k, ok := staticKey(s.Property, i == 0 && isObjectRoot(id.Value))
			if !ok {
				ref.Dynamic = i < 2
				complete = false
				break
			}
			ref.Path = append(ref.Path, k)
		}
		ref.InHas = inHas && complete && len(sels) > 0
		a.refs = append(a.refs, ref)
	} else {
		a.node(base)
	}
	for _, s := range sels {
		if _, ok := s.Property.(*ast.StringNode); !ok {
			a.node(s.Property)
		}
	}
}

// compatMethods are the CEL-style methods and their number of arguments.
var compatMethods = map[string]int{"size": 0, "contains": 1, "startsWith": 1, "endsWith": 1}

func (a *analysis) call(n *ast.CallNode) {
	switch callee := n.Callee.(type) {
	case *ast.IdentifierNode:
		name := callee.Value
		switch {
		case a.isLet(name):
		case name == fnNow:
			a.issue(CodeInvalid, n, msgPure, "")
		case name == fnHasU:
			if sel := hasSelection(n); sel != nil {
				a.chain(n.Arguments[0], true)
				return
			}
			a.issue(CodeInvalid, n, "has() needs a field selection, such as has(e.f) or has(e['f'])", "")
		case isRoot(name):
			a.ident(callee)
		case isFunction(name):
		default:
			a.issue(CodeUnknownName, callee, "unknown function '"+name+"'", didYouMean(name, functionCandidates))
		}
	default:
		if m, ok := n.Callee.(*ast.MemberNode); ok && m.Method {
			if p, ok := m.Property.(*ast.StringNode); ok {
				if want, ok := compatMethods[p.Value]; ok && len(n.Arguments) != want {
					a.issue(CodeInvalid, n, "method "+p.Value+"() takes "+plural(want, "argument")+", got "+strconv.Itoa(len(n.Arguments)), "")
				}
			}
		}
		a.node(n.Callee)
	}
	for _, arg := range n.Arguments {
		a.node(arg)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// hasSelection returns the field selection that is the argument of a has()
// call, or nil if the call is not has(e.f) / has(e['f']).
func hasSelection(n *ast.CallNode) *ast.MemberNode {
	if len(n.Arguments) != 1 {
		return nil
	}
	arg := n.Arguments[0]
	for {
		c, ok := arg.(*ast.ChainNode)
		if !ok {
			break
		}
		arg = c.Node
	}
	m, ok := arg.(*ast.MemberNode)
	if !ok || m.Method {
		return nil
	}
	if _, ok := m.Property.(*ast.StringNode); !ok {
		return nil
	}
	return m
}

func isComparison(op string) bool {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		return true
	}
	return false
}

func asComparison(n ast.Node) *ast.BinaryNode {
	if b, ok := n.(*ast.BinaryNode); ok && isComparison(b.Operator) {
		return b
	}
	return nil
}

const msgChain = "comparisons do not chain; combine them with && or ||"

// binary checks D43 before descending. expr parses `a == b == c` as
// (a == b) == c, and desugars `a < b < c` into (a < b) && (b < c) where the
// two comparisons share the node b: both shapes are reported, once per chain.
func (a *analysis) binary(n *ast.BinaryNode) {
	if isComparison(n.Operator) && !a.flagged[n] {
		l, r := asComparison(n.Left), asComparison(n.Right)
		if l != nil || r != nil {
			a.flag(n, l, r)
			a.issue(CodeInvalid, n, msgChain, "")
		}
	}
	if n.Operator == "&&" {
		if r := asComparison(n.Right); r != nil {
			l := n.Left
			for {
				b, ok := l.(*ast.BinaryNode)
				if !ok || b.Operator != "&&" {
					break
				}
				l = b.Right
			}
			if lc := asComparison(l); lc != nil && lc.Right == r.Left {
				if !a.flagged[lc] && !a.flagged[r] {
					a.issue(CodeInvalid, r, msgChain, "")
				}
				a.flag(lc, r)
			}
		}
	}
	a.node(n.Left)
	a.node(n.Right)
}

func (a *analysis) flag(ns ...*ast.BinaryNode) {
	if a.flagged == nil {
		a.flagged = map[*ast.BinaryNode]bool{}
	}
	for _, n := range ns {
		if n != nil {
			a.flagged[n] = true
		}
	}
}

// finish deduplicates refs and issues, keeping the first of each.
func (a *analysis) finish() {
	if len(a.refs) > 1 {
		seen := make(map[string]bool, len(a.refs))
		out := a.refs[:0]
		for _, r := range a.refs {
			k := r.key()
			if !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
		a.refs = out
		sort.SliceStable(a.refs, func(i, j int) bool { return a.refs[i].Offset < a.refs[j].Offset })
	}
	a.issues = dedupIssues(a.issues)
}

func dedupIssues(issues []Issue) []Issue {
	if len(issues) < 2 {
		return issues
	}
	seen := make(map[Issue]bool, len(issues))
	out := issues[:0]
	for _, i := range issues {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// ---- did you mean ----

// didYouMean returns "did you mean `x`?" for the candidate nearest to name
// (LANGUAGE.md §9.3), or "".
func didYouMean(name string, candidates []string) string {
	best := nearest.Name(name, candidates)
	if best == "" {
		return ""
	}
	return "did you mean `" + best + "`?"
}
