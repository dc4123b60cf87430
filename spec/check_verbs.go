package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/spec/expr"
	"github.com/nikahq/nika/spec/schema"
)

var verbFields = map[string][]string{
	"infer":  {"prompt", "system", "model", "temperature", "max_tokens", "schema", "thinking", "vision"},
	"exec":   {"command", "cwd", "env", "stdin", "capture"},
	"invoke": {"tool", "args"},
	"agent":  {"prompt", "system", "model", "tools", "max_turns", "max_tokens_total", "temperature", "schema"},
}

var verbRequired = map[string][]string{
	"infer":  {"prompt"},
	"exec":   {"command"},
	"invoke": {"tool"},
	"agent":  {"prompt"},
}

var captures = []string{"stdout", "stderr", "combined", "structured"}

// verb checks one verb body and returns its value with templates inside.
func (c *checker) verb(t *taskState, p *Pair, path string, kind siteKind) Value {
	verb := p.Key.Str
	body := deref(p.Value)
	if body.Kind != KindMap {
		c.errorf(CodeParseShape, p.Value, path, fmt.Sprintf("Write `%s` as a mapping of its fields, e.g. `%s: { %s: … }`.", verb, verb, verbRequired[verb][0]),
			"`%s` must be a mapping, not %s", verb, kindName(p.Value))
		return nil
	}
	c.checkKeys(body, path, "`"+verb+"`", verbFields[verb], CodeParseUnknownField)
	for _, req := range verbRequired[verb] {
		if body.Get(req) == nil {
			c.errorf(CodeParseRequired, body, path, fmt.Sprintf("Add `%s` to `%s`.", req, verb), "`%s` needs `%s`", verb, req)
		}
	}
	out := map[string]any{}
	for _, f := range body.Pairs {
		if !contains(verbFields[verb], f.Key.Str) {
			continue
		}
		fp := pathKey(path, f.Key.Str)
		if v, ok := c.verbField(t, verb, f, fp, kind); ok {
			out[f.Key.Str] = v
		}
	}
	if verb == "infer" || verb == "agent" {
		c.resolveModel(t, body, path, verb, kind)
	}
	if verb == "invoke" {
		c.builtinContract(body, path)
	}
	return out
}

func (c *checker) verbField(t *taskState, verb string, f *Pair, path string, kind siteKind) (Value, bool) {
	name, n := f.Key.Str, f.Value
	d := deref(n)
	switch {
	case name == "model":
		return c.modelField(t, n, path, kind)
	case name == "schema":
		before := len(c.findings)
		c.noPlaceholders(n, path, "`schema`")
		if len(c.findings) > before {
			return nil, false
		}
		doc, err := n.Value()
		if err != nil {
			c.valueTooLarge(n, path, err)
			return nil, false
		}
		if _, isMap := doc.(map[string]any); !isMap {
			if _, isBool := doc.(bool); !isBool {
				c.errorf(CodeParseShape, n, path, "Write `schema` as a JSON Schema object, e.g. `{ type: object, properties: { … } }`.", "`schema` must be a JSON Schema object, not %s", kindName(n))
				return nil, false
			}
		}
		sc, err := schema.Compile(doc)
		if err != nil {
			c.errorf(CodeParseShape, n, path, "Fix the JSON Schema (draft 2020-12); only local `$ref`s (`#/…`) are resolved.", "`schema` does not compile: %s", oneLine(err.Error()))
			return nil, false
		}
		if kind == siteBody {
			t.Schema, t.SchemaDoc = sc, doc
		}
		return doc, true
	case name == "prompt" || name == "system":
		if d.Kind != KindString {
			c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write `%s` as a string (use a literal block `|` for several lines).", name), "`%s` must be a string, not %s", name, kindName(n))
			return nil, false
		}
		if name == "prompt" && strings.TrimSpace(d.Str) == "" {
			c.errorf(CodeParseShape, n, path, "Write the prompt text.", "`prompt` is empty")
			return nil, false
		}
	case name == "temperature":
		if !c.numberIn(n, path, "temperature", 0, 2, false) {
			return nil, false
		}
	case name == "max_tokens" || name == "max_tokens_total":
		if !c.numberIn(n, path, name, 1, 1<<62, true) {
			return nil, false
		}
	case name == "max_turns":
		if !c.literal(n, path, "`max_turns`") {
			return nil, false
		}
		if d.Kind != KindInt || d.Int < 1 || d.Int > 1000 {
			c.errorf(CodeParseShape, n, path, "Write an integer from 1 to 1000 (default 10).", "`max_turns` must be an integer from 1 to 1000")
			return nil, false
		}
		return int(d.Int), true
	case name == "tools" && verb == "agent":
		return c.agentTools(t, n, path)
	case name == "capture":
		if !c.literal(n, path, "`capture`") {
			return nil, false
		}
		if d.Kind != KindString || !contains(captures, d.Str) {
			c.errorf(CodeParseShape, n, path, "Use `stdout`, `stderr`, `combined` or `structured`."+didYouMean(d.Str, captures), "unknown capture %s", quoteNode(d))
			return nil, false
		}
		return d.Str, true
	case name == "command":
		return c.command(t, n, path, kind)
	case name == "env" && verb == "exec":
		if d.Kind != KindMap {
			c.errorf(CodeParseShape, n, path, "Write `env` as a mapping of variable names to strings.", "`env` must be a mapping, not %s", kindName(n))
			return nil, false
		}
		for _, p := range d.Pairs {
			if vk := deref(p.Value).Kind; vk == KindMap || vk == KindSeq {
				c.errorf(CodeParseShape, p.Value, pathKey(path, p.Key.Str), "Write the value as a string.", "exec env values must be strings, not %s", kindName(p.Value))
				return nil, false
			}
		}
	case name == "cwd" || name == "stdin":
		if d.Kind != KindString {
			c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write `%s` as a string.", name), "`%s` must be a string, not %s", name, kindName(n))
			return nil, false
		}
	case name == "tool":
		return c.invokeTool(t, n, path)
	case name == "args":
		return c.invokeArgs(t, n, path, kind)
	case name == "thinking":
		if d.Kind != KindMap {
			c.errorf(CodeParseShape, n, path, "Write `thinking: { enabled: true, budget_tokens: 2048 }`.", "`thinking` must be a mapping")
			return nil, false
		}
		c.checkKeys(d, path, "`thinking`", []string{"enabled", "budget_tokens"}, CodeParseUnknownField)
		if e := d.Get("enabled"); e != nil && deref(e).Kind != KindBool && !isWholeExpr(deref(e)) {
			c.errorf(CodeParseShape, e, path+".enabled", "Write `enabled: true` or `enabled: false` (or one `${{ … }}` expression).", "`enabled` must be a boolean, not %s", kindName(e))
			return nil, false
		}
		if b := d.Get("budget_tokens"); b != nil && !c.numberIn(b, path+".budget_tokens", "budget_tokens", 1, 1<<62, true) {
			return nil, false
		}
	case name == "vision":
		if !c.vision(n, path) {
			return nil, false
		}
	}
	return c.dataValue(n, path, kind, t), true
}

// numberIn checks a literal number against its range; expressions are
// checked at run time.
func (c *checker) numberIn(n *Node, path, name string, lo, hi float64, integer bool) bool {
	d := deref(n)
	var x float64
	switch d.Kind {
	case KindString:
		if strings.Contains(d.Str, "${{") {
			return true
		}
		c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write `%s` as a number.", name), "`%s` must be a number, not a string", name)
		return false
	case KindInt:
		x = float64(d.Int)
	case KindFloat:
		if integer {
			c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write `%s` as an integer.", name), "`%s` must be an integer", name)
			return false
		}
		x = d.Float
	default:
		c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write `%s` as a number.", name), "`%s` must be a number, not %s", name, kindName(n))
		return false
	}
	if x < lo || x > hi || x != x {
		rng := fmt.Sprintf("≥ %g", lo)
		if hi < 1<<60 {
			rng = fmt.Sprintf("from %g to %g", lo, hi)
		}
		c.errorf(CodeParseShape, n, path, fmt.Sprintf("Use a value %s.", rng), "`%s` is out of range (%s)", name, rng)
		return false
	}
	return true
}

// modelID checks `<provider>/<name>` (§6.1); mock serves only mock/echo.
func (c *checker) modelID(n *Node, path string) bool {
	d := deref(n)
	if d.Kind != KindString {
		c.errorf(CodeParseShape, n, path, "Write the model as `<provider>/<name>`, e.g. `openai/gpt-4o-mini`.", "a model must be a string, not %s", kindName(n))
		return false
	}
	if msg, detail := ModelProblem(d.Str); msg != "" {
		c.errorf(CodeParseShape, n, path, detail, "%s", msg)
		return false
	}
	return true
}

// ModelProblem checks a model id `<provider>/<name>` (LANGUAGE.md §6.1):
// a known provider, a non-empty name without whitespace, and only
// `mock/echo` on the mock provider. It returns what is wrong and how to fix
// it, or two empty strings. cmd/nika uses it for --model.
func ModelProblem(id string) (msg, detail string) {
	prov, name, ok := strings.Cut(id, "/")
	switch {
	case !ok || name == "" || strings.ContainsAny(name, " \t\r\n"):
		return fmt.Sprintf("bad model id %q", id), "Write the model as `<provider>/<name>`, e.g. `openai/gpt-4o-mini` or `mock/echo`."
	case !contains(providers, prov):
		return fmt.Sprintf("unknown provider %q in model %q", prov, id), "Use one of the providers: " + strings.Join(providers, ", ") + "." + didYouMean(prov, providers)
	case prov == "mock" && name != "echo":
		return fmt.Sprintf("unknown mock model %q", id), "The mock provider serves only `mock/echo`."
	}
	return "", ""
}

// modelField checks a verb's `model` field: a literal model id, or `${{ vars.NAME }}` on a
// task's infer or agent, whose value is then evaluated with the job like any field (it is the
// var's value, which the run resolved and checked before it started).
func (c *checker) modelField(t *taskState, n *Node, path string, kind siteKind) (Value, bool) {
	m, v, ok := c.model(n, path)
	switch {
	case !ok:
		return nil, false
	case v != "" && kind != siteBody:
		// An on_finally step's own model is not resolved ahead of the run, so it stays literal.
		c.errorf(CodeVarStatic, n, path, "Write a literal model on an on_finally step (`openai/gpt-4o-mini`), or set the var-named model on the task.",
			"an on_finally step's model is literal-only; `${{ vars.%s }}` is allowed on a task's `infer` or `agent` and in the envelope", v)
		return nil, false
	case v != "":
		return c.dataValue(n, path, kind, t), true
	}
	return m, true
}

// resolveModel applies §6.1: task model, then --model, then the envelope. A model named by a
// var (`${{ vars.NAME }}`) sets Task.ModelVar instead; the run resolves it (model_var.go).
func (c *checker) resolveModel(t *taskState, body *Node, path, verb string, kind siteKind) {
	if n := body.Get("model"); n != nil && deref(n).Kind != KindString {
		return // reported where the field is checked
	}
	m, mv := c.modelOf(body)
	if m == "" && mv == "" {
		if env := deref(c.file.Root).Get("model"); env != nil && deref(env).Kind != KindString {
			return
		}
		c.errorf(CodeParseRequired, body, path, "Set `model:` on the task or the workflow (e.g. `model: openai/gpt-4o-mini`), or pass `--model`.",
			"`%s` has no model", verb)
		return
	}
	if kind == siteBody {
		t.Model, t.ModelVar = m, mv
	}
}

// modelOf is the model an infer or agent body runs on (§6.1): its own `model`, then --model,
// then the envelope's; a var-named one as the var's name. Both are "" when there is none, or
// when the one that applies is not a string.
func (c *checker) modelOf(body *Node) (model, varName string) {
	split := func(n *Node) (string, string) {
		d := deref(n)
		if d.Kind != KindString {
			return "", ""
		}
		if v, ok := ModelVar(d.Str); ok {
			return "", v
		}
		return d.Str, ""
	}
	if n := body.Get("model"); n != nil {
		return split(n)
	}
	if c.opts.Model != "" {
		return c.opts.Model, ""
	}
	if env := deref(c.file.Root).Get("model"); env != nil {
		return split(env)
	}
	return "", ""
}

func (c *checker) vision(n *Node, path string) bool {
	d := deref(n)
	if d.Kind != KindSeq {
		c.errorf(CodeParseShape, n, path, "Write `vision` as a list of `{source: file, path: …}` or `{source: url, url: …}`.", "`vision` must be a list")
		return false
	}
	ok := true
	for i, it := range d.Items {
		ip := pathIndex(path, i)
		m := deref(it)
		if m.Kind != KindMap {
			c.errorf(CodeParseShape, it, ip, "Write `{source: file, path: …}` or `{source: url, url: …}`.", "a vision item must be a mapping")
			ok = false
			continue
		}
		src := deref(m.Get("source"))
		switch {
		case m.Get("source") == nil:
			c.errorf(CodeParseRequired, m, ip, "Add `source: file` (with `path`) or `source: url` (with `url`).", "vision item needs `source`")
			ok = false
		case src.Str == "file":
			c.checkKeys(m, ip, "a vision file", []string{"source", "path"}, CodeParseUnknownField)
			if m.Get("path") == nil {
				c.errorf(CodeParseRequired, m, ip, "Add `path`.", "vision file needs `path`")
				ok = false
			}
		case src.Str == "url":
			c.checkKeys(m, ip, "a vision url", []string{"source", "url"}, CodeParseUnknownField)
			if m.Get("url") == nil {
				c.errorf(CodeParseRequired, m, ip, "Add `url`.", "vision url needs `url`")
				ok = false
			}
		default:
			c.errorf(CodeParseShape, m.Get("source"), ip+".source", "Use `source: file` or `source: url`.", "unknown vision source %s", quoteNode(src))
			ok = false
		}
	}
	return ok
}

func (c *checker) command(t *taskState, n *Node, path string, kind siteKind) (Value, bool) {
	d := deref(n)
	switch d.Kind {
	case KindString:
		if strings.TrimSpace(d.Str) == "" {
			c.errorf(CodeParseShape, n, path, "Write the command to run.", "`command` is empty")
			return nil, false
		}
	case KindSeq:
		if len(d.Items) == 0 {
			c.errorf(CodeParseShape, n, path, "Write at least the program: `command: [\"git\", \"status\"]`.", "`command` is an empty list")
			return nil, false
		}
		for i, it := range d.Items {
			if k := deref(it).Kind; k == KindMap || k == KindSeq {
				c.errorf(CodeParseShape, it, pathIndex(path, i), "Write each argument as a string; lists and mappings are never spliced.", "argv elements must be strings, not %s", kindName(it))
				return nil, false
			}
		}
	default:
		c.errorf(CodeParseShape, n, path, "Write `command` as a string (run by /bin/sh) or a list of strings (argv).", "`command` must be a string or a list, not %s", kindName(n))
		return nil, false
	}
	return c.dataValue(n, path, kind, t), true
}

var (
	reNikaTool = regexp.MustCompile(`^nika:[a-z][a-z0-9_]*$`)
	reMCPTool  = regexp.MustCompile(`^mcp:[a-z][a-z0-9-]*/[A-Za-z0-9_-]+$`)
)

// toolNameProblem checks the tool-name grammar of §5.3.
func toolNameProblem(name string) string {
	switch {
	case strings.HasPrefix(name, "nika:"):
		if strings.Contains(name, "/") {
			return "grouped builtin names `nika:<group>/<name>` are reserved"
		}
		if !reNikaTool.MatchString(name) {
			return "a builtin name is `nika:` followed by lower-case letters, digits and `_`"
		}
	case strings.HasPrefix(name, "mcp:"):
		if !strings.Contains(name, "/") {
			return "an MCP tool is named `mcp:<server>/<tool>`"
		}
		if !reMCPTool.MatchString(name) {
			return "an MCP tool is `mcp:<server>/<tool>` with server `[a-z][a-z0-9-]*` and tool `[A-Za-z0-9_-]+`"
		}
	case strings.HasPrefix(name, "x-vendor:"):
		return "the `x-vendor:` namespace is reserved"
	default:
		return "tool names are `nika:<builtin>` or `mcp:<server>/<tool>`"
	}
	return ""
}

func (c *checker) invokeTool(t *taskState, n *Node, path string) (Value, bool) {
	if !c.literal(n, path, "`invoke.tool`") {
		return nil, false
	}
	d := deref(n)
	if d.Kind != KindString {
		c.errorf(CodeParseShape, n, path, "Write the tool name, e.g. `tool: nika:read`.", "`tool` must be a string, not %s", kindName(n))
		return nil, false
	}
	name := d.Str
	if why := toolNameProblem(name); why != "" {
		detail := "Write `nika:<builtin>` or `mcp:<server>/<tool>`."
		if ns, rest, ok := strings.Cut(name, ":"); ok && ns == "agent" {
			detail = fmt.Sprintf("Use `nika:%s`.", rest)
		}
		c.errorf(CodeParseShape, n, path, detail, "malformed tool name %q: %s", name, why)
		return nil, false
	}
	if strings.HasPrefix(name, "nika:") {
		switch name {
		case "nika:done":
			c.errorf(CodeBuiltinDone, n, path, "`nika:done` ends an agent loop: grant it in an agent's `tools:`; an invoke task simply finishes.", "`nika:done` is agent-only")
			return nil, false
		case "nika:compose":
			c.errorf(CodeBuiltinCompose, n, path, "`nika:compose` is an agent intrinsic: grant it in an agent's `tools:`, or run `nika check` yourself.", "`nika:compose` is agent-only")
			return nil, false
		}
		if _, ok := catalog.Lookup(name); !ok {
			c.errorf(CodeInvokeUnknown, n, path, "Use a builtin of the catalog."+didYouMean(name, catalog.Names()), "unknown builtin %q", name)
			return nil, false
		}
	} else if c.opts.MCPServers != nil {
		server := strings.TrimPrefix(name[:strings.IndexByte(name, '/')], "mcp:")
		if !contains(c.opts.MCPServers, server) {
			names := append([]string(nil), c.opts.MCPServers...)
			sort.Strings(names)
			c.errorf(CodeInvokeUnknown, n, path, "Register the server in .nika/mcp_servers.json, or use a registered one."+didYouMean(server, names),
				"MCP server %q is not registered", server)
			return nil, false
		}
	}
	if t != nil {
		t.Tool = name
	}
	return name, true
}

func (c *checker) invokeArgs(t *taskState, n *Node, path string, kind siteKind) (Value, bool) {
	d := deref(n)
	if d.Kind == KindNull {
		return map[string]any{}, true
	}
	if d.Kind != KindMap {
		c.errorf(CodeParseShape, n, path, "Write `args` as a mapping of argument names to values.", "`args` must be a mapping, not %s", kindName(n))
		return nil, false
	}
	return c.dataValue(n, path, kind, t), true
}

// builtinContract checks literal args against the builtin's static contract
// (NIKA-BUILTIN-001 and the builtins' own static codes).
func (c *checker) builtinContract(body *Node, path string) {
	toolNode := body.Get("tool")
	if toolNode == nil || c.bad[toolNode] || deref(toolNode).Kind != KindString {
		return
	}
	name := deref(toolNode).Str
	b, ok := catalog.Lookup(name)
	if !ok {
		return
	}
	argsNode := body.Get("args")
	d := deref(argsNode)
	if argsNode != nil && (c.bad[argsNode] || d.Kind != KindMap) && d.Kind != KindNull {
		return
	}
	path = path + ".args"
	var args []catalog.NamedArg
	if argsNode != nil {
		for _, p := range d.Pairs {
			args = append(args, catalog.NamedArg{Name: p.Key.Str, Arg: argOf(p.Value)})
		}
	}
	at0 := d
	if argsNode == nil {
		at0 = body
	}
	for _, is := range catalog.CheckArgs(b, args) {
		at, ap := at0, path
		if is.Arg != "" && argsNode != nil {
			if p := d.Pair(is.Arg); p != nil {
				at, ap = p.Value, pathKey(path, is.Arg)
				if _, known := argNames(b)[is.Arg]; !known {
					at = p.Key
				}
			}
		}
		detail := is.Detail
		if a := d.Pair(is.Arg); a != nil && deref(a.Value).Kind == KindString && yaml11Bools[strings.ToLower(deref(a.Value).Str)] && strings.Contains(is.Message, "boolean") {
			detail += fmt.Sprintf(" (In YAML 1.2, `%s` is a string: write `true` or `false`.)", deref(a.Value).Str)
		}
		c.errorf(is.Code, at, ap, detail, "%s", is.Message)
	}
}

// isWholeExpr reports a string that is exactly one placeholder.
func isWholeExpr(n *Node) bool {
	if n.Kind != KindString {
		return false
	}
	t, err := expr.Scan(n.Str)
	return err == nil && t.Whole()
}

// yaml11Bools are the words YAML 1.1 read as booleans; in YAML 1.2 they are strings.
var yaml11Bools = map[string]bool{"yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}

// argNames are the declared parameters of a builtin.
func argNames(b *catalog.Builtin) map[string]bool {
	var sch struct {
		Properties map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(b.Params, &sch)
	out := make(map[string]bool, len(sch.Properties))
	for k := range sch.Properties {
		out[k] = true
	}
	return out
}

// argOf describes a literal argument for the catalog's static contract.
func argOf(n *Node) catalog.Arg {
	d := deref(n)
	if d.Kind == KindString && strings.Contains(d.Str, "${{") {
		tmpl, err := expr.Scan(d.Str)
		if err == nil && !tmpl.Whole() {
			return catalog.Arg{Dynamic: true, StringTyped: true}
		}
		return catalog.Arg{Dynamic: true}
	}
	if hasPlaceholder(d, 0) {
		return catalog.Arg{Dynamic: true}
	}
	v, err := n.Value()
	if err != nil {
		return catalog.Arg{Dynamic: true}
	}
	return catalog.Arg{Value: v}
}

func hasPlaceholder(n *Node, depth int) bool {
	if n == nil || depth > 64 {
		return false
	}
	n = n.Deref()
	if n == nil {
		return false
	}
	switch n.Kind {
	case KindString:
		return strings.Contains(n.Str, "${{")
	case KindSeq:
		for _, it := range n.Items {
			if hasPlaceholder(it, depth+1) {
				return true
			}
		}
	case KindMap:
		for _, p := range n.Pairs {
			if hasPlaceholder(p.Value, depth+1) {
				return true
			}
		}
	}
	return false
}

func (c *checker) agentTools(t *taskState, n *Node, path string) (Value, bool) {
	d := deref(n)
	if d.Kind == KindNull {
		return []any{}, true
	}
	if d.Kind != KindSeq {
		c.errorf(CodeParseShape, n, path, "Write `tools` as a list of tool globs, e.g. `[\"nika:read\", \"nika:done\"]`.", "`tools` must be a list, not %s", kindName(n))
		return nil, false
	}
	out := []any{}
	ok := true
	for i, it := range d.Items {
		ip := pathIndex(path, i)
		if !c.literal(it, ip, "`tools`") {
			ok = false
			continue
		}
		g := deref(it)
		if g.Kind != KindString {
			c.errorf(CodeParseShape, it, ip, "Write a tool glob as a string, e.g. `nika:*`.", "a tool glob must be a string")
			ok = false
			continue
		}
		if !c.toolGlob(it, ip) {
			ok = false
			continue
		}
		out = append(out, g.Str)
	}
	return out, ok
}

// toolGlob checks a glob's namespace (§2.4.1): patterns whose literal prefix
// names a namespace other than nika: or mcp: are refused.
func (c *checker) toolGlob(n *Node, path string) bool {
	g := strings.TrimPrefix(deref(n).Str, "!")
	if g == "" {
		c.errorf(CodeParseShape, n, path, "Write a tool glob such as `nika:read` or `mcp:github/*`.", "empty tool glob")
		return false
	}
	if strings.HasPrefix(g, "*") {
		return true // starts with a wildcard: accepted (lint tool-glob-star for a bare *)
	}
	ns, _, hasColon := strings.Cut(g, ":")
	if !hasColon || strings.ContainsAny(ns, "*") {
		if strings.ContainsAny(ns, "*") {
			return true
		}
		c.errorf(CodeParseShape, n, path, "Name the namespace: `nika:<builtin>` or `mcp:<server>/<tool>`.", "tool glob %q has no namespace", g)
		return false
	}
	if ns != "nika" && ns != "mcp" {
		detail := "Use the `nika:` or `mcp:` namespace."
		if ns == "agent" || ns == "builtin" {
			detail = fmt.Sprintf("Use `nika:%s`.", strings.TrimPrefix(g, ns+":"))
		}
		c.errorf(CodeParseShape, n, path, detail, "unknown tool namespace `%s:` in %q", ns, g)
		return false
	}
	return true
}
