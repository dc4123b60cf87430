package spec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/nikahq/nika/spec/expr"
)

var envelopeKeys = []string{"nika", "workflow", "description", "model", "vars", "env", "secrets", "permits", "tasks", "outputs"}

// Keys from other workflow dialects get a targeted detail (LANGUAGE.md §2.6).
var (
	envelopeHints = map[string]string{
		"schema":   "The header is `nika: v1` + `workflow: <id>`; models are `<provider>/<name>`.",
		"provider": "The header is `nika: v1` + `workflow: <id>`; models are `<provider>/<name>`.",
		"flows":    "Use `depends_on` on each task.",
		"inputs":   "Use `vars`.",
		"const":    "Use `env`.",
	}
	taskHints = map[string]string{
		"flows":   "Use `depends_on`.",
		"after":   "Use `depends_on`.",
		"use":     "Use `with`.",
		"extract": "Use `output`.",
		"fetch":   "Use `invoke: {tool: nika:fetch, args: …}`.",
		"inputs":  "Use `with`.",
	}
)

var (
	reWorkflowID = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	reTaskID     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

func (c *checker) envelope() {
	root := c.file.Root
	d := deref(root)
	if d.Kind != KindMap {
		c.errorf(CodeParseMissing, root, "", "Start the file with `nika: v1`, `workflow: <id>` and a `tasks:` list.",
			"the workflow must be a mapping, not %s", kindName(root))
		return
	}
	c.unknownKeys(d, "", "the workflow envelope", envelopeKeys, envelopeHints)
	for _, req := range []string{"nika", "workflow", "tasks"} {
		if d.Pair(req) == nil {
			c.errorf(CodeParseMissing, d, "", missingKeyDetail(req), "missing required key `%s`", req)
		}
	}
	if n := d.Get("nika"); n != nil {
		c.version(n)
	}
	if n := d.Get("workflow"); n != nil && c.literal(n, "workflow", "`workflow`") {
		v := deref(n)
		if v.Kind != KindString || !reWorkflowID.MatchString(v.Str) {
			c.errorf(CodeParseWorkflowID, n, "workflow", "Use a kebab-case id: a lower-case letter, then lower-case letters, digits and `-` (e.g. `nightly-build`).",
				"bad workflow id %s", quoteNode(v))
		} else {
			c.a.Name = v.Str
		}
	}
	if n := d.Get("description"); n != nil {
		if v := deref(n); v.Kind == KindString {
			c.a.Description = v.Str
		} else if v.Kind != KindNull {
			c.expectKind(CodeParseShape, n, "description", KindString, "`description`")
		}
	}
	c.vars(d.Get("vars"))
	if n := d.Get("model"); n != nil { // after the vars: it may name one
		if m, v, ok := c.model(n, "model"); ok {
			c.a.Model, c.a.ModelVar = m, v
		}
	}
	c.env(d.Get("env"))
	c.secrets(d.Get("secrets"))
	if n := d.Get("permits"); n != nil {
		c.permits(n)
	}
	if n := d.Get("tasks"); n != nil {
		c.taskList(n)
	}
	c.outputs(d.Get("outputs"))
}

// missingKeyDetail is the whole detail sentence of a NIKA-PARSE-002 for the missing top-level key k.
func missingKeyDetail(k string) string {
	switch k {
	case "nika":
		return "Add `nika: v1` at the top level of the file."
	case "workflow":
		return "Add `workflow: <kebab-case-id>` at the top level of the file."
	}
	return "Add a top-level `tasks:` list with at least one `- id: …` item carrying one verb (infer, exec, invoke or agent)."
}

// unknownKeys reports the unknown keys of the envelope or a task: engine
// keys are PARSE-020, keys from other dialects get their hint (§2.6), the
// rest "did you mean".
func (c *checker) unknownKeys(m *Node, path, where string, allowed []string, hints map[string]string) {
	for _, p := range m.Pairs {
		k := p.Key.Str
		if p.Key.Kind != KindString || contains(allowed, k) {
			continue
		}
		kp := pathKey(path, k)
		if hint, ok := engineKeys[k]; ok {
			c.errorf(CodeParseEngineKey, p.Key, kp, fmt.Sprintf("Remove `%s` from the workflow; set it with %s.", k, hint),
				"`%s` is engine configuration, not workflow YAML", k)
			continue
		}
		if hint, ok := hints[k]; ok {
			c.errorf(CodeParseUnknownField, p.Key, kp, hint+" Remove `"+k+"`.", "unknown field `%s` in %s (a key from another workflow dialect)", k, where)
			continue
		}
		detail := fmt.Sprintf("Remove `%s`; the fields allowed in %s are: %s.", k, where, strings.Join(allowed, ", "))
		if s := suggest(k, allowed); s != "" {
			detail = fmt.Sprintf("Rename `%s` to `%s` (did you mean `%s`?) or remove it.", k, s, s)
		}
		c.errorf(CodeParseUnknownField, p.Key, kp, detail, "unknown field `%s` in %s", k, where)
	}
}

func (c *checker) version(n *Node) {
	if !c.literal(n, "nika", "`nika`") {
		return
	}
	v := deref(n)
	if v.Kind == KindString && v.Str == "v1" {
		return
	}
	c.errorf(CodeParseVersion, n, "nika", "Write exactly `nika: v1` (the language version, not the workflow id).",
		"unsupported language version %s", quoteNode(v))
}

func quoteNode(n *Node) string {
	if n.Kind == KindString {
		return fmt.Sprintf("%q", n.Str)
	}
	if n.IsScalar() {
		return "`" + n.Str + "`"
	}
	return "a " + n.Kind.String()
}

var varTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

func (c *checker) vars(n *Node) {
	c.varTypes = map[string]expr.Type{}
	if n == nil || deref(n).Kind == KindNull {
		return
	}
	if !c.expectKind(CodeParseShape, n, "vars", KindMap, "`vars`") {
		return
	}
	for _, p := range deref(n).Pairs {
		name := p.Key.Str
		path := pathKey("vars", name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, path, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "var name %q is not an identifier", name)
			continue
		}
		decl := &VarDecl{Name: name, Node: p.Value}
		c.a.Vars = append(c.a.Vars, decl)
		c.varNames = append(c.varNames, name)
		v := deref(p.Value)
		if v.Kind == KindMap && v.Get("type") != nil && deref(v.Get("type")).Kind == KindString {
			c.typedVar(decl, v, path)
		} else {
			c.noPlaceholders(p.Value, path, "a var default")
			val, err := p.Value.Value()
			if err != nil {
				c.valueTooLarge(p.Value, path, err)
			}
			decl.Default, decl.HasDefault = val, true
			decl.Type = jsonType(val)
		}
		c.varTypes[name] = exprType(decl.Type)
	}
}

func (c *checker) typedVar(decl *VarDecl, v *Node, path string) {
	decl.Typed = true
	c.noPlaceholders(v, path, "a var declaration")
	c.checkKeys(v, path, "a typed var", []string{"type", "required", "default", "description"}, CodeParseUnknownField)
	tn := v.Get("type")
	t := deref(tn).Str
	if !contains(varTypes, t) {
		c.errorf(CodeParseTypedVar, tn, path+".type", "Use one of: "+strings.Join(varTypes, ", ")+"."+didYouMean(t, varTypes),
			"unknown var type %q", t)
		return
	}
	decl.Type = t
	if r := v.Get("required"); r != nil {
		if deref(r).Kind != KindBool {
			c.errorf(CodeParseTypedVar, r, path+".required", "Write `required: true` or `required: false`.", "`required` must be a boolean")
		} else {
			decl.Required = deref(r).Bool
		}
	}
	if dn := v.Get("description"); dn != nil && deref(dn).Kind != KindString {
		c.errorf(CodeParseShape, dn, path+".description", "Write the description as a string.", "`description` must be a string")
	}
	dp := v.Pair("default")
	if dp == nil {
		return
	}
	if decl.Required {
		c.errorf(CodeParseTypedVar, dp.Key, path+".default", "Remove `default`, or set `required: false`: a required var takes its value from --var.",
			"a required var cannot have a default")
		return
	}
	val, err := dp.Value.Value()
	if err != nil {
		c.valueTooLarge(dp.Value, path+".default", err)
		return
	}
	if !matchesType(val, t) {
		if val == nil {
			c.errorf(CodeParseTypedVar, dp.Value, path+".default", "Remove `default: null`: null matches no type, and a typed var without a default is already null.",
				"the default is null, which is not %s", withArticle(t))
			return
		}
		c.errorf(CodeParseTypedVar, dp.Value, path+".default", fmt.Sprintf("Give a default of type %s, or change `type`.", t),
			"the default is %s, not %s", withArticle(jsonType(val)), withArticle(t))
		return
	}
	decl.Default, decl.HasDefault = val, true
}

// ValueKind names the JSON type of a value-model value ("null" for nil),
// for messages.
func ValueKind(v any) string {
	if v == nil {
		return "null"
	}
	if _, ok := v.([]byte); ok {
		return "bytes"
	}
	if k := jsonType(v); k != "" {
		return k
	}
	return fmt.Sprintf("%T", v)
}

// jsonType names the JSON type of a value-model value ("" for null).
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return "boolean"
	case int, int64:
		return "integer"
	case float64:
		_ = x
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// MatchesType reports whether a value of the value model has the declared
// type t (string, number, integer, boolean, array, object; LANGUAGE.md §2.1):
// an integer is also a number, an integral float is an integer, and null
// matches no type.
func MatchesType(v any, t string) bool { return matchesType(v, t) }

func matchesType(v any, t string) bool {
	got := jsonType(v)
	if got == t {
		return true
	}
	if t == "number" && got == "integer" {
		return true
	}
	if t == "integer" && got == "number" {
		f := v.(float64)
		return f == float64(int64(f))
	}
	return false
}

func exprType(t string) expr.Type {
	switch t {
	case "string":
		return expr.String
	case "integer":
		return expr.Int
	case "number":
		return expr.Float
	case "boolean":
		return expr.Bool
	case "array":
		return expr.Array
	case "object":
		return expr.Object
	}
	return expr.Any
}

// noPlaceholders reports VAR-005 for any placeholder in a literal-only data
// value (vars defaults, env values), walking it without expanding aliases.
func (c *checker) noPlaceholders(n *Node, path, what string) {
	seen := map[*Node]bool{}
	var walk func(n *Node, path string)
	walk = func(n *Node, path string) {
		if n == nil || n.Kind == KindAlias || seen[n] {
			return
		}
		seen[n] = true
		switch n.Kind {
		case KindString:
			c.literal(n, path, what)
		case KindSeq:
			for i, it := range n.Items {
				walk(it, pathIndex(path, i))
			}
		case KindMap:
			for _, p := range n.Pairs {
				walk(p.Value, pathKey(path, p.Key.Str))
			}
		}
	}
	walk(n, path)
}

func (c *checker) env(n *Node) {
	c.envTypes = map[string]expr.Type{}
	if n == nil || deref(n).Kind == KindNull {
		return
	}
	if !c.expectKind(CodeParseShape, n, "env", KindMap, "`env`") {
		return
	}
	for _, p := range deref(n).Pairs {
		name := p.Key.Str
		path := pathKey("env", name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, path, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "env name %q is not an identifier", name)
			continue
		}
		c.noPlaceholders(p.Value, path, "an env value")
		val, err := p.Value.Value()
		if err != nil {
			c.valueTooLarge(p.Value, path, err)
		}
		c.a.Env = append(c.a.Env, &EnvDecl{Name: name, Value: val})
		c.envNames = append(c.envNames, name)
		c.envTypes[name] = exprType(jsonType(val))
	}
}

func (c *checker) secrets(n *Node) {
	if n == nil || deref(n).Kind == KindNull {
		return
	}
	if !c.expectKind(CodeParseShape, n, "secrets", KindMap, "`secrets`") {
		return
	}
	for _, p := range deref(n).Pairs {
		name := p.Key.Str
		path := pathKey("secrets", name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, path, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "secret name %q is not an identifier", name)
			continue
		}
		c.secNames = append(c.secNames, name)
		v := deref(p.Value)
		if v.Kind == KindNull {
			c.errorf(CodeParseShape, p.Key, path, fmt.Sprintf("Reference the secret, e.g. `%s: { source: env, key: %s }`.", name, name),
				"secret `%s` has no reference", name)
			continue
		}
		if v.Kind != KindMap {
			c.errorf(CodeParseInlineSecret, p.Value, path, fmt.Sprintf("Never write a secret's value in the file: reference it, e.g. `%s: { source: env, key: %s }`.", name, name),
				"secret `%s` is an inline value", name)
			continue
		}
		if vp := v.Pair("value"); vp != nil {
			c.errorf(CodeParseInlineSecret, vp.Key, path+".value", "Remove `value`: reference the secret with `source: env` and `key`, or `source: file` and `path`.",
				"secret `%s` has an inline value", name)
			continue
		}
		c.checkKeys(v, path, "a secret", []string{"source", "key", "path"}, CodeParseUnknownField)
		decl := &SecretDecl{Name: name}
		src := v.Get("source")
		if src == nil {
			c.errorf(CodeParseShape, v, path, "Add `source: env` (with `key`) or `source: file` (with `path`).", "secret `%s` has no `source`", name)
			continue
		}
		if !c.literal(src, path+".source", "`source`") {
			continue
		}
		decl.Source = deref(src).Str
		switch decl.Source {
		case "env":
			decl.Key = c.secretField(v, "key", path, name)
			if v.Get("path") != nil {
				c.errorf(CodeParseShape, v.Pair("path").Key, path+".path", "Remove `path`: an env secret names its variable with `key`.", "`path` is not allowed with `source: env`")
			}
		case "file":
			decl.Path = c.secretField(v, "path", path, name)
			if v.Get("key") != nil {
				c.errorf(CodeParseShape, v.Pair("key").Key, path+".key", "Remove `key`: a file secret is read from `path`.", "`key` is not allowed with `source: file`")
			}
		case "vault":
			c.errorf(CodeParseShape, src, path+".source", "Use `source: env` or `source: file`.", "secret source `vault` is not supported by this engine")
			continue
		default:
			c.errorf(CodeParseShape, src, path+".source", "Use `source: env` or `source: file`."+didYouMean(decl.Source, []string{"env", "file"}), "unknown secret source %s", quoteNode(deref(src)))
			continue
		}
		c.a.Secrets = append(c.a.Secrets, decl)
	}
}

func (c *checker) secretField(v *Node, field, path, name string) string {
	n := v.Get(field)
	if n == nil {
		c.errorf(CodeParseShape, v, path, fmt.Sprintf("Add `%s` to secret `%s`.", field, name), "secret `%s` needs `%s`", name, field)
		return ""
	}
	if !c.literal(n, path+"."+field, "`"+field+"`") {
		return ""
	}
	if d := deref(n); d.Kind != KindString || d.Str == "" {
		c.errorf(CodeParseShape, n, path+"."+field, fmt.Sprintf("Write `%s` as a non-empty string.", field), "`%s` must be a non-empty string", field)
		return ""
	}
	return deref(n).Str
}

func (c *checker) outputs(n *Node) {
	if n == nil || deref(n).Kind == KindNull {
		return
	}
	if !c.expectKind(CodeParseShape, n, "outputs", KindMap, "`outputs`") {
		return
	}
	for _, p := range deref(n).Pairs {
		name := p.Key.Str
		path := pathKey("outputs", name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, path, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "output name %q is not an identifier", name)
			continue
		}
		decl := &OutputDecl{Name: name}
		c.a.Outputs = append(c.a.Outputs, decl)
		v := deref(p.Value)
		if isTypedOutput(v) {
			tn := v.Get("type")
			t := deref(tn).Str
			if !contains(varTypes, t) {
				c.errorf(CodeParseTypedVar, tn, path+".type", "Use one of: "+strings.Join(varTypes, ", ")+"."+didYouMean(t, varTypes), "unknown output type %q", t)
			} else {
				decl.Type = t
			}
			if dn := v.Get("description"); dn != nil && deref(dn).Kind != KindString {
				c.errorf(CodeParseShape, dn, path+".description", "Write the description as a string.", "`description` must be a string")
			}
			decl.Value = c.dataValue(v.Get("value"), path+".value", siteOutputs, nil)
			continue
		}
		decl.Value = c.dataValue(p.Value, path, siteOutputs, nil)
	}
}

// isTypedOutput: keys are a subset of value, type, description, including
// value and a string type (LANGUAGE.md §2.5).
func isTypedOutput(v *Node) bool {
	if v.Kind != KindMap || v.Get("value") == nil || v.Get("type") == nil || deref(v.Get("type")).Kind != KindString {
		return false
	}
	for _, p := range v.Pairs {
		if !contains([]string{"value", "type", "description"}, p.Key.Str) {
			return false
		}
	}
	return true
}
