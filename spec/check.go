package spec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikahq/nika/spec/expr"
)

// CheckOptions carries what the checker needs from outside the file (D7).
type CheckOptions struct {
	// Model is the CLI --model default for infer and agent tasks.
	Model string
	// MCPServers are the names in the engine's MCP registry. Nil means the
	// registry is not visible: unregistered servers are then a runtime error.
	MCPServers []string
	// Ceiling, when set, is a permits ceiling the workflow runs under (nika serve's --permits,
	// D35): the static permit checks and Analysis.Permits use Ceiling ∩ the file's own permits
	// (IntersectPermits; a file without permits gets the ceiling), so what the run would refuse
	// is refused before it is accepted.
	Ceiling *Permits
}

// Check runs every static check of LANGUAGE.md on a parsed file and returns
// all findings, sorted. It is the one checker behind `nika check`, `nika
// run` and the agent's nika:compose.
func Check(f *File, opts CheckOptions) []Finding {
	return Analyze(f, opts).Findings
}

// CheckSource parses and checks a file in one step.
func CheckSource(name string, src []byte, opts CheckOptions) *Analysis {
	f, parseFindings := Parse(name, src)
	if f.Root == nil {
		return &Analysis{File: f, Findings: SortFindings(parseFindings)}
	}
	a := analyze(f, opts, parseFindings)
	return a
}

// Analyze checks a parsed file and returns its findings with the typed model.
func Analyze(f *File, opts CheckOptions) *Analysis {
	return analyze(f, opts, nil)
}

func analyze(f *File, opts CheckOptions, prior []Finding) *Analysis {
	c := &checker{
		file:     f,
		opts:     opts,
		a:        &Analysis{File: f},
		findings: prior,
		taskByID: map[string]*taskState{},
	}
	if f.Root == nil {
		c.a.Findings = SortFindings(c.findings)
		return c.a
	}
	func() {
		// A panic here is a checker defect; report it instead of crashing,
		// so bad input never takes the process down.
		defer func() {
			if r := recover(); r != nil {
				c.findings = append(c.findings, Finding{File: f.Name, Severity: SeverityError, Namespace: "PARSE",
					Category: "internal_error", Message: fmt.Sprintf("internal checker error: %v", r),
					Detail: "This is a bug in nika: please report it with the file that triggers it.", Pos: Pos{Line: 1, Column: 1}})
			}
		}()
		c.run()
	}()
	c.a.Findings = SortFindings(c.findings)
	return c.a
}

// checker holds the state of one check. Stages run in the order of
// LANGUAGE.md §9.2 and each appends findings; a node that failed an earlier
// stage is marked bad so later stages skip it (no cascades).
type checker struct {
	file     *File
	opts     CheckOptions
	a        *Analysis
	findings []Finding

	// modelDefaults are the vars a `model: ${{ vars.NAME }}` names whose default was checked as
	// a model id, badModelDefault those whose default is not one (model_var.go).
	modelDefaults   map[string]bool
	badModelDefault []string

	bad map[*Node]bool // nodes that already have a finding

	tasks    []*taskState
	taskByID map[string]*taskState
	taskIDs  []string

	varTypes map[string]expr.Type
	envTypes map[string]expr.Type
	varNames []string
	envNames []string
	secNames []string

	sites          []*exprSite // expression positions, compiled in the expression stage
	memo           map[memoKey]Value
	sizes          map[*Node][2]int
	recoverRefs    []recoverRef
	secretInPrompt []lintAt
}

// taskState is the checker's view of one task while checking.
type taskState struct {
	*Task
	path     string
	node     *Node
	idNode   *Node
	depNodes map[string]*Node // dep id -> the depends_on entry
	depIdx   map[string]int   // dep id -> its index in the depends_on list
	forEach  bool
	withKeys map[string]*Node
	withUsed map[string]bool
	bindings map[string]bool
	hasRecov bool
	shape    any // known output shape (a JSON Schema document), nil when open
	bad      bool
}

func (c *checker) run() {
	c.envelope()
	c.deps()
	c.expressions()
	c.recoverCycles()
	c.permitsAndBlocklist()
	c.lints()
}

func (c *checker) errorf(code string, n *Node, path, detail, format string, args ...any) {
	pos := Pos{Line: 1, Column: 1}
	if n != nil && n.Pos.IsValid() {
		pos = n.Pos
	}
	c.errorAt(code, pos, path, detail, fmt.Sprintf(format, args...))
	if n != nil {
		c.markBad(n)
	}
}

func (c *checker) errorAt(code string, pos Pos, path, detail, msg string) {
	c.findings = append(c.findings, newFinding(c.file.Name, code, pos, path, msg, detail))
}

func (c *checker) warn(rule, namespace string, n *Node, path, detail, format string, args ...any) {
	pos := Pos{Line: 1, Column: 1}
	if n != nil && n.Pos.IsValid() {
		pos = n.Pos
	}
	c.findings = append(c.findings, newWarning(c.file.Name, rule, namespace, pos, path, fmt.Sprintf(format, args...), detail))
}

func (c *checker) markBad(n *Node) {
	if c.bad == nil {
		c.bad = map[*Node]bool{}
	}
	c.bad[n] = true
}

// deref follows an alias for shape checks. Aliases point at nodes that are
// checked where they are anchored, so following one level never expands.
func deref(n *Node) *Node {
	if n == nil {
		return &Node{Kind: KindNull}
	}
	if d := n.Deref(); d != nil {
		return d
	}
	return &Node{Kind: KindNull, Pos: n.Pos}
}

// kindName describes a node's type for messages, with its article.
func kindName(n *Node) string { return withArticle(deref(n).Kind.String()) }

// withArticle prefixes a type name with "a" or "an".
func withArticle(s string) string {
	if s == "" || s == "null" {
		return "null"
	}
	switch s[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + s
	}
	return "a " + s
}

// expectKind reports a PARSE-019 (or the given code) when n is not of kind k.
func (c *checker) expectKind(code string, n *Node, path string, k Kind, what string) bool {
	if deref(n).Kind == k {
		return true
	}
	c.errorf(code, n, path, fmt.Sprintf("Write %s as %s.", what, withArticle(k.String())), "%s must be %s, not %s", what, withArticle(k.String()), kindName(n))
	return false
}

// checkKeys reports unknown keys of a mapping: engine keys (PARSE-020), the
// dialect hints, and the rest as PARSE-005 with "did you mean". It returns
// the known pairs in file order.
func (c *checker) checkKeys(m *Node, path, where string, allowed []string, unknownCode string) []*Pair {
	var known []*Pair
	for _, p := range m.Pairs {
		k := p.Key.Str
		if contains(allowed, k) {
			known = append(known, p)
			continue
		}
		kp := pathKey(path, k)
		if hint, ok := engineKeys[k]; ok {
			c.errorf(CodeParseEngineKey, p.Key, kp, fmt.Sprintf("Remove `%s` from the workflow; set it with %s.", k, hint),
				"`%s` is engine configuration, not workflow YAML", k)
			continue
		}
		detail := fmt.Sprintf("Remove `%s`; the fields allowed in %s are: %s.", k, where, strings.Join(allowed, ", "))
		if s := suggest(k, allowed); s != "" {
			detail = fmt.Sprintf("Rename `%s` to `%s` (did you mean `%s`?) or remove it.", k, s, s)
		}
		c.errorf(unknownCode, p.Key, kp, detail, "unknown field `%s` in %s", k, where)
	}
	return known
}

// engineKeys are the keys of LANGUAGE.md §2.6 with their hint.
var engineKeys = map[string]string{
	"max_parallel_tools":  "the CLI flag `--max-parallel-tools N` (default 8)",
	"jitter_seed":         "the CLI flag `--seed N` (default 0)",
	"wave_parallelism":    "engine configuration",
	"router":              "engine configuration (agent tuning, AGENT.md)",
	"guard":               "engine configuration (agent tuning, AGENT.md)",
	"schema_retry_budget": "engine configuration (agent tuning, AGENT.md)",
	"api_key":             "the environment variable `NIKA_<PROVIDER>_API_KEY`",
	"base_url":            "the environment variable `NIKA_<PROVIDER>_BASE_URL`",
	"mcp":                 "the engine's MCP server registry (.nika/mcp_servers.json)",
	"mcp_servers":         "the engine's MCP server registry (.nika/mcp_servers.json)",
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// literal reports a VAR-005 when a LIT field's scalar holds a placeholder.
// It returns false when it did.
func (c *checker) literal(n *Node, path, what string) bool {
	d := deref(n)
	if d.Kind == KindString && expr.ContainsPlaceholder(d.Str) {
		c.errorAt(CodeVarStatic, c.placeholderPos(d, max(strings.Index(d.Str, "${{"), 0)), path,
			fmt.Sprintf("Write a literal value for %s; expressions are not allowed there.", what),
			fmt.Sprintf("%s is literal-only; `${{` is not allowed here", what))
		c.markBad(n)
		return false
	}
	return true
}

// placeholderPos is the position reported for the placeholder starting at
// byte offset off of a scalar's decoded text: the `${{` itself when the
// scalar is plain or single-line quoted, else the scalar (LANGUAGE.md §9.1).
// The column comes from the source bytes, through the scalar's escapes.
func (c *checker) placeholderPos(n *Node, off int) Pos {
	if n.Kind != KindString || n.MultiLine() || n.Pos.Offset >= len(c.file.Src) {
		return n.Pos
	}
	src := c.file.Src[n.Pos.Offset:]
	if i := bytesIndexAny(src, "\r\n"); i >= 0 {
		src = src[:i]
	}
	var at int
	var ok bool
	switch n.Style {
	case StylePlain:
		at, ok = off, off <= len(src)
	case StyleSingleQuoted:
		at, ok = singleQuotedOffset(src, off)
	case StyleDoubleQuoted:
		at, ok = doubleQuotedOffset(src, off)
	}
	if !ok {
		return n.Pos
	}
	return c.file.Advance(n.Pos, at)
}

func bytesIndexAny(b []byte, chars string) int {
	for i, ch := range b {
		if strings.IndexByte(chars, ch) >= 0 {
			return i
		}
	}
	return -1
}

// singleQuotedOffset maps a decoded byte offset to the source offset of a
// single-quoted scalar (” stands for ').
func singleQuotedOffset(src []byte, off int) (int, bool) {
	i, d := 1, 0
	for d < off {
		if i >= len(src) {
			return 0, false
		}
		if src[i] == '\'' && i+1 < len(src) && src[i+1] == '\'' {
			i++
		}
		i++
		d++
	}
	return i, true
}

// doubleQuotedOffset maps a decoded byte offset to the source offset of a
// double-quoted scalar, through YAML's escapes.
func doubleQuotedOffset(src []byte, off int) (int, bool) {
	i, d := 1, 0
	for d < off {
		if i >= len(src) {
			return 0, false
		}
		if src[i] != '\\' || i+1 >= len(src) {
			i++
			d++
			continue
		}
		var r rune
		switch e := src[i+1]; e {
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+2+n > len(src) {
				return 0, false
			}
			v, err := strconv.ParseUint(string(src[i+2:i+2+n]), 16, 32)
			if err != nil {
				return 0, false
			}
			r = rune(v)
			i += 2 + n
		case 'N':
			r, i = 0x85, i+2
		case '_':
			r, i = 0xA0, i+2
		case 'L':
			r, i = 0x2028, i+2
		case 'P':
			r, i = 0x2029, i+2
		default:
			r, i = ' ', i+2 // one decoded byte: \t, \n, \", \\, \/, \0, …
		}
		d += utf8.RuneLen(r)
	}
	return i, d == off
}
