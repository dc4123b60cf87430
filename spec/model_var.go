package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nikahq/nika/spec/expr"
)

// A model chosen by a var (issue 19): `model: ${{ vars.NAME }}` in the envelope, `infer` or `agent`.
// Decisions:
//   - The placeholder is the whole value and names one declared var: a model is either a literal
//     `<provider>/<name>` (every static check applies) or exactly `${{ vars.NAME }}`. Anything else
//     with `${{` is NIKA-VAR-005: a model must be known before the run starts, so that the keys of
//     its provider are checked before anything runs.
//   - The var must be declared, of type string (or untyped with a string default); a default is
//     checked as a model id like a literal.
//   - The run resolves it once, from the run's vars, before it starts (workflow.ResolveModels): a
//     value that is not a model id is NIKA-VAR-006, a usage error (`nika run` exit 2); a missing key
//     for its provider is exit 3, as for a literal model.
var reModelVar = regexp.MustCompile(`^\$\{\{\s*vars\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$`)

// ModelVar returns the var a model value names (`${{ vars.NAME }}`), or false.
func ModelVar(s string) (string, bool) {
	m := reModelVar.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// model checks a `model` value: a literal model id (modelID), or `${{ vars.NAME }}` over a
// declared string var. It returns the literal model or the var's name; ok false after a finding.
func (c *checker) model(n *Node, path string) (model, varName string, ok bool) {
	d := deref(n)
	if d.Kind != KindString || !expr.ContainsPlaceholder(d.Str) {
		if !c.modelID(n, path) {
			return "", "", false
		}
		return d.Str, "", true
	}
	name, isVar := ModelVar(d.Str)
	if !isVar {
		c.errorAt(CodeVarStatic, c.placeholderPos(d, max(0, strings.Index(d.Str, "${{"))), path,
			"Write a literal model (`openai/gpt-4o-mini`) or exactly `${{ vars.NAME }}` over a declared var.",
			"a model is a literal or one `${{ vars.NAME }}` placeholder; it must be known before the run starts")
		c.markBad(n)
		return "", "", false
	}
	var decl *VarDecl
	for _, v := range c.a.Vars {
		if v.Name == name {
			decl = v
		}
	}
	switch {
	case decl == nil:
		c.errorf(CodeVarUnresolved, n, path, fmt.Sprintf("Declare it under `vars:` (e.g. `vars: { %s: { type: string, default: mock/echo } }`).%s", name, didYouMean(name, c.varNames)),
			"`model` names var %q, which the workflow does not declare", name)
		return "", "", false
	case decl.Type != "" && decl.Type != "string":
		c.errorf(CodeVarStatic, n, path, fmt.Sprintf("Declare var %q with `type: string`.", name),
			"`model` names var %q, which is of type %s, not string", name, decl.Type)
		return "", "", false
	case decl.HasDefault && decl.Default != nil && !c.modelDefaults[name]:
		if c.modelDefaults == nil {
			c.modelDefaults = map[string]bool{}
		}
		c.modelDefaults[name] = true // checked once, however many tasks name it
		at, path := decl.Node, pathKey("vars", name)
		if dn := deref(decl.Node); decl.Typed && dn.Get("default") != nil {
			at, path = dn.Get("default"), path+".default"
		}
		s, _ := decl.Default.(string)
		if msg, detail := ModelProblem(s); msg != "" {
			c.errorf(CodeParseShape, at, path, detail, "the default of var %q, a model: %s", name, msg)
			c.badModelDefault = append(c.badModelDefault, name)
			return "", "", false
		}
	case slices.Contains(c.badModelDefault, name):
		return "", "", false
	}
	return "", name, true
}
