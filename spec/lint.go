package spec

import (
	"fmt"

	"github.com/nikahq/nika/spec/expr"
	"sort"
	"strings"
)

// lintAt records a place a lint fires, found by an earlier stage.
type lintAt struct {
	pos  Pos
	path string
	name string
}

// lints adds the warnings of LANGUAGE.md §9.5 (and tool-glob-doublestar,
// AGENT.md §1.2). Warnings never change validity.
func (c *checker) lints() {
	name := c.file.Name
	if name != "" && name != "-" && !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
		c.warn("file-extension", "PARSE", nil, "", "Rename the file to end in `.nika.yaml`, so editors can bind the JSON Schema (`nika schema`).",
			"the file name ends neither in .yaml nor in .yml")
	}
	for _, l := range c.secretInPrompt {
		c.findings = append(c.findings, newWarning(c.file.Name, "secret-in-prompt", "SEC", l.pos, l.path,
			fmt.Sprintf("`secrets.%s` reaches a model prompt", l.name),
			"Do not send secrets to a model: pass the secret to the tool or process that needs it instead."))
	}
	for _, t := range c.tasks {
		if t.bad {
			continue
		}
		c.lintTask(t)
	}
	if pm := deref(deref(c.file.Root).Get("permits")); pm.Kind == KindMap {
		c.lintGlobs(pm.Get("tools"), "permits.tools")
	}
}

func (c *checker) lintTask(t *taskState) {
	m := t.node
	if w := m.Get("when"); w != nil {
		d := deref(w)
		if d.Kind == KindBool && !d.Bool {
			c.warn("redundant-when", "PARSE", w, t.path+".when", "Remove the task, or give `when` a condition.", "`when: false` disables task `%s`", t.ID)
		} else if d.Kind == KindBool && d.Bool && len(t.DependsOn) == 0 {
			c.warn("redundant-when", "PARSE", w, t.path+".when", "Remove `when: true`: a task without dependencies always runs.", "`when: true` on a task with no `depends_on`")
		}
	}
	if len(t.withKeys) > 0 {
		names := make([]string, 0, len(t.withKeys))
		for k := range t.withKeys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !t.withUsed[k] {
				c.warn("unused-with", "VAR", t.withKeys[k], pathKey(t.path+".with", k), fmt.Sprintf("Read it as `${{ with.%s }}` in the verb body, or remove it.", k), "`with.%s` is never read", k)
			}
		}
	}
	for _, p := range []string{"retry", "on_error"} {
		if oc := deref(deref(m.Get(p)).Get("on_codes")); oc.Kind == KindSeq {
			for i, it := range oc.Items {
				code := deref(it).Str
				if known, ok := LookupCode(code); WellFormedCode(code) && (!ok || known.Retired) {
					c.warn("unknown-code", "PARSE", it, pathIndex(t.path+"."+p+".on_codes", i), "Check the code with `nika explain`; a code that is never emitted never matches.", "%s is not an allocated code", code)
				}
			}
		}
	}
	c.lintVerbs(t.path, m)
	if of := deref(m.Get("on_finally")); of.Kind == KindSeq {
		for i, it := range of.Items {
			c.lintVerbs(pathIndex(t.path+".on_finally", i), deref(it))
		}
	}
}

func (c *checker) lintVerbs(path string, m *Node) {
	for _, p := range m.Pairs {
		body := deref(p.Value)
		if body.Kind != KindMap {
			continue
		}
		bp := pathKey(path, p.Key.Str)
		switch p.Key.Str {
		case "infer", "agent":
			for _, f := range []string{"prompt", "system"} {
				if n := body.Get(f); n != nil && deref(n).Style == StyleFolded {
					c.warn("folded-prompt", "PARSE", n, bp+"."+f, "Use a literal block (`|`): folding joins your lines and changes what the model reads.", "`%s` uses a folded scalar (`>`)", f)
				}
			}
			if p.Key.Str == "agent" {
				c.lintGlobs(body.Get("tools"), bp+".tools")
			}
		case "exec":
			if cmd := body.Get("command"); cmd != nil && deref(cmd).Kind == KindString && hasExpr(deref(cmd).Str) {
				c.warn("exec-string-interpolation", "EXEC", cmd, bp+".command", "Prefer the argv form, `command: [\"prog\", \"${{ … }}\"]`: values are then never parsed by a shell.", "a string command interpolates an expression into a shell")
			}
		}
	}
}

func (c *checker) lintGlobs(n *Node, path string) {
	d := deref(n)
	if d.Kind != KindSeq {
		return
	}
	for i, it := range d.Items {
		g := strings.TrimPrefix(deref(it).Str, "!")
		switch g {
		case "*":
			c.warn("tool-glob-star", "SEC", it, pathIndex(path, i), "A bare `*` admits no namespaced tool: write `nika:*`, `mcp:<server>/*` or `mcp:**`.", "a bare `*` matches no tool")
		case "**":
			c.warn("tool-glob-doublestar", "SEC", it, pathIndex(path, i), "Name the tools or namespaces you mean (`nika:*`, `mcp:github/*`): `**` grants every tool.", "`**` admits every tool")
		}
	}
}

// hasExpr reports a string holding a real placeholder (not an escaped \${{).
func hasExpr(s string) bool {
	t, err := expr.Scan(s)
	return err != nil || t.HasExpr()
}
