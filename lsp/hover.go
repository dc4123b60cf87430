package lsp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
)

// Hover shows, for the cursor's position, each of these that applies: the
// findings there with their code's `nika explain` text; the explanation of
// a NIKA code written in the file (an `on_codes` entry); inside a
// placeholder, the task a `tasks.X` names (verb, output shape, bindings),
// the declaration a `vars.X`/`env.X` names, and the expression's static
// type where the checker knows it; a builtin's description and parameters;
// a task id's task; a key's description from the schema.

func (s *server) hover(raw json.RawMessage) (any, *rpcError) {
	var p textDocumentPositionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	sn := s.snapshotOf(p.TextDocument.URI)
	if sn == nil {
		return nil, nil
	}
	off := sn.lines.offset(p.Position)
	var parts []string
	var span *[2]int
	setSpan := func(from, to int) {
		if span == nil {
			span = &[2]int{from, to}
		}
	}
	if text, from, to := sn.findingsHover(off); text != "" {
		parts = append(parts, text)
		setSpan(from, to)
	}
	if text, from, to := sn.contextHover(off); text != "" {
		parts = append(parts, text)
		setSpan(from, to)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	h := hover{Contents: markupContent{Kind: "markdown", Value: strings.Join(parts, "\n\n---\n\n")}}
	if span != nil {
		r := sn.lines.rangeOf(span[0], span[1])
		h.Range = &r
	}
	return h, nil
}

// findingsHover describes the findings whose range holds off, each code's
// explanation once.
func (sn *snapshot) findingsHover(off int) (string, int, int) {
	var b strings.Builder
	explained := map[string]bool{}
	first, last := -1, -1
	for _, f := range sn.analysis.Findings {
		from, to := sn.span(f)
		if off < from || off > to {
			continue
		}
		if first < 0 {
			first, last = from, to
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		label := f.Code
		if !f.IsError() {
			label = "warning " + f.Rule
		}
		if label == "" {
			label = "error"
		}
		fmt.Fprintf(&b, "**%s** %s", label, f.Message)
		if f.Detail != "" {
			b.WriteString("\n\n" + f.Detail)
		}
		if f.Code != "" && !explained[f.Code] {
			explained[f.Code] = true
			if text, ok := spec.Explain(f.Code); ok {
				b.WriteString("\n\n" + explainMarkdown(text))
			}
		}
	}
	return b.String(), first, last
}

var codeWord = regexp.MustCompile(`NIKA-[A-Z]{2,9}(-[A-Z][A-Z0-9_]{1,15})?-[0-9]{3}`)

// contextHover describes what the cursor is on, when it is on something
// the server knows.
func (sn *snapshot) contextHover(off int) (string, int, int) {
	l := sn.lines.line(off)
	lineFrom, lineTo := sn.lines.start[l], sn.lines.lineEnd(l)
	line := string(sn.text[lineFrom:lineTo])
	for _, m := range codeWord.FindAllStringIndex(line, -1) {
		if off >= lineFrom+m[0] && off <= lineFrom+m[1] {
			if text, ok := spec.Explain(line[m[0]:m[1]]); ok {
				return explainMarkdown(text), lineFrom + m[0], lineFrom + m[1]
			}
		}
	}
	if p, ok := sn.placeholderAt(off); ok {
		return sn.exprHover(p, off)
	}
	if sym, ok := sn.symbolAt(off); ok && sym.root == "tasks" {
		if t, found := findTask(tasksOf(sn.file()), sym.name); found {
			from, to := sn.nameSpan(t.idNode)
			if !sn.within(t.idNode, off) {
				from, to = wordAround(sn.text, lineFrom, lineTo, off)
			}
			return sn.taskHover(sym.name), from, to
		}
	}
	if from, to := toolWordAround(sn.text, lineFrom, lineTo, off); from < to {
		if b, ok := catalog.Lookup(string(sn.text[from:to])); ok {
			return builtinMarkdown(b), from, to
		}
	}
	if path, key := sn.keyPathAt(off); key != nil {
		if d := keyDescription(path); d != "" {
			from, to := sn.nameSpan(key)
			return fmt.Sprintf("**`%s`** — %s", path[len(path)-1], d), from, to
		}
	}
	return "", 0, 0
}

// exprHover describes the reference under the cursor inside a placeholder,
// else the expression's static type.
func (sn *snapshot) exprHover(p placeholder, off int) (string, int, int) {
	for _, r := range sn.refs(p) {
		if len(r.path) == 0 || off < r.rootFrom || off > r.nameTo || r.nameFrom == r.nameTo {
			continue
		}
		switch r.root {
		case "tasks":
			if _, ok := findTask(tasksOf(sn.file()), r.path[0]); ok {
				return sn.taskHover(r.path[0]), r.rootFrom, r.nameTo
			}
		case "vars", "env", "secrets":
			if text := sn.declHover(r.root, r.path[0]); text != "" {
				return text, r.rootFrom, r.nameTo
			}
		}
	}
	if t := sn.staticType(p); t != "" {
		return fmt.Sprintf("expression `%s`: **%s**", strings.TrimSpace(p.expr(sn.text)), t), p.open, p.close
	}
	return "", 0, 0
}

// declHover describes a declared var, env constant or secret.
func (sn *snapshot) declHover(root, name string) string {
	a := sn.analysis
	switch root {
	case "vars":
		for _, v := range a.Vars {
			if v.Name == name {
				return varMarkdown(v)
			}
		}
	case "env":
		for _, e := range a.Env {
			if e.Name == name {
				return fmt.Sprintf("**env `%s`** = `%s`", name, compactJSON(e.Value))
			}
		}
	case "secrets":
		for _, sec := range a.Secrets {
			if sec.Name == name {
				return fmt.Sprintf("**secret `%s`** from `%s` (%s)", name, sec.Source, sec.Key+sec.Path)
			}
		}
	}
	return ""
}

func varMarkdown(v *spec.VarDecl) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**var `%s`**", v.Name)
	if v.Type != "" {
		fmt.Fprintf(&b, ": %s", v.Type)
	}
	if v.Required {
		b.WriteString(", required")
	}
	if v.HasDefault {
		fmt.Fprintf(&b, ", default `%s`", compactJSON(v.Default))
	}
	b.WriteString("\n\nSet it with `--var " + v.Name + "=…`.")
	return b.String()
}

// staticType is the checker's static type of the placeholder's expression,
// "" when the checker did not compile it (the task failed an earlier stage).
func (sn *snapshot) staticType(p placeholder) string {
	tmpl := findTemplate(sn.analysis, p.node)
	if tmpl == nil {
		return ""
	}
	rank := 0
	for _, part := range tmpl.Parts {
		if part.Program == nil {
			continue
		}
		if rank == p.index {
			return part.Program.Type.String()
		}
		rank++
	}
	return ""
}

// findTemplate finds the compiled template of a scalar node in the
// analysis's typed model.
func findTemplate(a *spec.Analysis, n *spec.Node) *spec.Template {
	var found *spec.Template
	var walk func(v any)
	walk = func(v any) {
		if found != nil {
			return
		}
		switch x := v.(type) {
		case *spec.Template:
			if x.Node == n {
				found = x
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, t := range a.Tasks {
		walk(t.Body)
		walk(t.When)
		walk(t.ForEach)
		for _, w := range t.With {
			walk(w.Value)
		}
		if t.OnError != nil {
			walk(t.OnError.Recover)
		}
		for _, f := range t.OnFinally {
			walk(f.Body)
			walk(f.When)
		}
	}
	for _, o := range a.Outputs {
		walk(o.Value)
	}
	return found
}

// taskHover describes a task: its verb, dependencies, output shape and
// bindings, from the checked model when the task passed, else from the AST.
func (sn *snapshot) taskHover(id string) string {
	var b strings.Builder
	t := sn.analysis.Task(id)
	entry, _ := findTask(tasksOf(sn.file()), id)
	verb := ""
	if t != nil {
		verb = t.Verb
	} else {
		for _, v := range []string{"infer", "exec", "invoke", "agent"} {
			if entry.node.Pair(v) != nil {
				verb = v
			}
		}
	}
	fmt.Fprintf(&b, "**task `%s`**", id)
	if verb != "" {
		fmt.Fprintf(&b, " · `%s`", verb)
	}
	if t != nil && t.Model != "" {
		fmt.Fprintf(&b, " · model `%s`", t.Model)
	}
	if t != nil && t.Tool != "" {
		fmt.Fprintf(&b, " · tool `%s`", t.Tool)
	}
	deps := []string{}
	for _, d := range entry.deps {
		deps = append(deps, "`"+d.Str+"`")
	}
	if len(deps) > 0 {
		b.WriteString("\n\ndepends on " + strings.Join(deps, ", "))
	} else {
		b.WriteString("\n\nno dependencies")
	}
	if t != nil {
		b.WriteString("\n\n" + outputMarkdown(t))
		if len(t.Bindings) > 0 {
			b.WriteString("\n\nbindings (`tasks." + id + ".NAME`):")
			for _, bd := range t.Bindings {
				fmt.Fprintf(&b, "\n- `%s` = `%s`", bd.Name, bd.Source)
			}
		}
	}
	fmt.Fprintf(&b, "\n\ndeclared at line %d", entry.idNode.Pos.Line)
	return b.String()
}

// outputMarkdown describes the shape of tasks.X.output as the checker
// derives it (spec's computeShapes), plus a builtin's catalog output.
func outputMarkdown(t *spec.Task) string {
	var shape any
	body, _ := t.Body.(map[string]any)
	switch t.Verb {
	case "infer", "agent":
		// As the checker has it: a schema's document; else text, except an
		// agent that may call nika:done, which returns any value.
		tools, _ := body["tools"].([]any)
		globs := make([]string, 0, len(tools))
		for _, g := range tools {
			if s, ok := g.(string); ok {
				globs = append(globs, s)
			}
		}
		switch {
		case t.SchemaDoc != nil:
			shape = t.SchemaDoc
		case body != nil && body["schema"] == nil && !(t.Verb == "agent" && spec.ToolAllowed(globs, "nika:done")):
			shape = map[string]any{"type": "string"}
		}
	case "exec":
		if body != nil && body["capture"] == "structured" {
			shape = map[string]any{"type": "object", "properties": map[string]any{
				"stdout": map[string]any{"type": "string"}, "stderr": map[string]any{"type": "string"},
				"exit_code": map[string]any{"type": "integer"}}}
		} else {
			shape = map[string]any{"type": "string"}
		}
	case "invoke":
		if b, ok := catalog.Lookup(t.Tool); ok {
			var out any
			if json.Unmarshal(b.Output, &out) == nil {
				shape = out
			}
		}
	}
	if shape == nil {
		return "output: any value"
	}
	if t.ForEach != nil {
		shape = map[string]any{"type": "array", "items": shape}
	}
	return "output:\n```json\n" + indentJSON(shape) + "\n```"
}

// builtinMarkdown describes a builtin from the catalog: its description,
// parameters and output.
func builtinMarkdown(b *catalog.Builtin) string {
	var out strings.Builder
	fmt.Fprintf(&out, "**`%s`** — %s", b.Name, b.Description)
	var params struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(b.Params, &params) == nil && len(params.Properties) > 0 {
		out.WriteString("\n\nparameters:")
		names := make([]string, 0, len(params.Properties))
		for n := range params.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := params.Properties[n]
			req := ""
			for _, r := range params.Required {
				if r == n {
					req = "required"
				}
			}
			var notes []string
			if p.Type != nil {
				notes = append(notes, strings.Trim(compactJSON(p.Type), `"`))
			}
			if req != "" {
				notes = append(notes, "required")
			}
			note := ""
			if len(notes) > 0 {
				note = " (" + strings.Join(notes, ", ") + ")"
			}
			fmt.Fprintf(&out, "\n- `%s`%s %s", n, note, p.Description)
		}
	}
	if len(b.Effects) > 0 {
		out.WriteString("\n\npermits: " + strings.Join(b.Effects, ", "))
	}
	if b.AgentOnly {
		out.WriteString("\n\nonly inside an agent loop")
	}
	return out.String()
}

// explainMarkdown renders `nika explain` text for a hover: the first line
// bold, indented example lines in a YAML block.
func explainMarkdown(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var b strings.Builder
	inCode := false
	for i, line := range lines {
		if i == 0 {
			b.WriteString("**" + line + "**\n")
			continue
		}
		code := strings.HasPrefix(line, "  ")
		if code && !inCode {
			b.WriteString("```yaml\n")
		}
		if !code && inCode {
			b.WriteString("```\n")
		}
		inCode = code
		if code {
			line = strings.TrimPrefix(line, "  ")
		}
		b.WriteString(line + "\n")
	}
	if inCode {
		b.WriteString("```\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func compactJSON(v any) string {
	b, err := encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// wordAround is the identifier around off on its line.
func wordAround(text []byte, lineFrom, lineTo, off int) (int, int) {
	isWord := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	from, to := off, off
	for from > lineFrom && isWord(text[from-1]) {
		from--
	}
	for to < lineTo && isWord(text[to]) {
		to++
	}
	return from, to
}

// toolWordAround is the tool-name-like word around off (letters, digits,
// `_`, `-`, `:`, `/`).
func toolWordAround(text []byte, lineFrom, lineTo, off int) (int, int) {
	isTool := func(c byte) bool {
		return c == '_' || c == '-' || c == ':' || c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	from, to := off, off
	for from > lineFrom && isTool(text[from-1]) {
		from--
	}
	for to < lineTo && isTool(text[to]) {
		to++
	}
	return from, to
}

// keyPathAt finds the mapping key under the cursor and its path from the
// root ("-" for sequence items).
func (sn *snapshot) keyPathAt(off int) ([]string, *spec.Node) {
	if !sn.parsed() {
		return nil, nil
	}
	var walk func(n *spec.Node, path []string, depth int) ([]string, *spec.Node)
	walk = func(n *spec.Node, path []string, depth int) ([]string, *spec.Node) {
		if n == nil || depth > 64 {
			return nil, nil
		}
		for _, p := range n.Pairs {
			if p.Key.Kind != spec.KindString {
				continue
			}
			kp := append(append([]string(nil), path...), p.Key.Str)
			if sn.within(p.Key, off) {
				return kp, p.Key
			}
			if got, key := walk(p.Value, kp, depth+1); key != nil {
				return got, key
			}
		}
		for _, it := range n.Items {
			if got, key := walk(it, append(append([]string(nil), path...), "-"), depth+1); key != nil {
				return got, key
			}
		}
		return nil, nil
	}
	return walk(sn.file().Root, nil, 0)
}
