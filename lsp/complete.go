package lsp

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
)

// Completion offers, at the cursor:
//   - at a key position, the keys the schema allows in that mapping that it
//     does not have yet (inside an invoke's `args:`, the builtin's
//     parameters);
//   - in `depends_on`, the other tasks' ids;
//   - in `tool:`, `tools:` and `permits.tools`, the builtins and the MCP
//     registry's servers (`mcp:NAME/`);
//   - in `on_codes`, the NIKA codes; in `model:`, the providers; elsewhere
//     the values the schema enumerates;
//   - inside `${{`, after `tasks.` the task ids, after `tasks.X.` the record
//     fields and X's bindings, after `vars.`, `env.`, `secrets.` and
//     `with.` the declared names, else the namespaces.
//
// Names come from the current text when it parses, else from the latest
// text that did.

func (s *server) completion(raw json.RawMessage) (any, *rpcError) {
	var p textDocumentPositionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	cur, good := s.lastGoodOf(p.TextDocument.URI)
	if cur == nil {
		return nil, nil
	}
	off := cur.lines.offset(p.Position)
	c := completer{cur: cur, good: good, off: off, servers: s.opts.Check.MCPServers}
	return completionList{Items: c.items()}, nil
}

type completer struct {
	cur, good *snapshot
	off       int
	servers   []string
}

func (c *completer) items() []completionItem {
	l := c.cur.lines.line(c.off)
	before := string(c.cur.text[c.cur.lines.start[l]:c.off])
	if i := strings.LastIndex(before, "${{"); i >= 0 && !strings.Contains(before[i:], "}}") {
		return c.expression(before[i+3:])
	}
	ctx := contextAt(c.cur.lines, c.off)
	if ctx.inScalar {
		return []completionItem{}
	}
	var items []completionItem
	if ctx.key != "" {
		items = c.values(ctx)
		if ctx.item && ctx.word != "" || ctx.item && len(items) == 0 {
			// `- i…` may also start the first key of a mapping item (a new task)
			items = append(items, c.keys(ctx, append(append([]string(nil), ctx.path...), ctx.key, "-"), nil)...)
		}
	} else {
		items = c.keys(ctx, ctx.path, ctx.siblings)
	}
	if items == nil {
		items = []completionItem{}
	}
	return items
}

// edit replaces the typed word with text.
func (c *completer) edit(from int, text string) *textEdit {
	return &textEdit{Range: c.cur.lines.rangeOf(from, c.off), NewText: text}
}

func (c *completer) keys(ctx cursorContext, path, siblings []string) []completionItem {
	have := map[string]bool{}
	for _, k := range siblings {
		have[k] = true
	}
	var items []completionItem
	add := func(name, doc string) {
		if have[name] {
			return
		}
		it := completionItem{Label: name, Kind: kindProperty, TextEdit: c.edit(ctx.wordFrom, name+": ")}
		if doc != "" {
			it.Documentation = &markupContent{Kind: "markdown", Value: doc}
		}
		items = append(items, it)
	}
	if n := len(path); n >= 2 && path[n-1] == "args" && path[n-2] == "invoke" && len(ctx.lines) >= 2 {
		tool := childValue(c.cur.lines, ctx.lines[n-2], "tool")
		if b, ok := catalog.Lookup(tool); ok {
			for _, name := range b.PropertyNames() {
				add(name, paramDoc(b, name))
			}
			return items
		}
	}
	for _, k := range keysAt(path) {
		add(k.name, k.description)
	}
	return items
}

func paramDoc(b *catalog.Builtin, name string) string {
	var params struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(b.Params, &params) != nil {
		return ""
	}
	return params.Properties[name].Description
}

func (c *completer) values(ctx cursorContext) []completionItem {
	from := ctx.wordFrom
	pre := ""
	if ctx.space {
		pre = " "
	}
	var items []completionItem
	add := func(label string, kind int, detail, doc string) {
		it := completionItem{Label: label, Kind: kind, Detail: detail, TextEdit: c.edit(from, pre+label)}
		if doc != "" {
			it.Documentation = &markupContent{Kind: "markdown", Value: doc}
		}
		items = append(items, it)
	}
	switch ctx.key {
	case "depends_on":
		self := c.enclosingTask()
		for _, id := range c.taskIDs() {
			if id != self {
				add(id, kindRef, "task", "")
			}
		}
	case "tool", "tools":
		for _, b := range catalog.All() {
			add(b.Name, kindFunction, firstSentence(b.Description), builtinMarkdown(b))
		}
		if ctx.key == "tools" {
			add("nika:*", kindModule, "every builtin", "")
			add("mcp:**", kindModule, "every MCP tool", "")
		}
		for _, srv := range c.servers {
			if ctx.key == "tools" {
				add("mcp:"+srv+"/*", kindModule, "every tool of the MCP server "+srv, "")
			} else {
				add("mcp:"+srv+"/", kindModule, "a tool of the MCP server "+srv, "")
			}
		}
	case "on_codes":
		for _, code := range spec.Codes() {
			if !code.Retired {
				add(code.ID, kindConstant, code.Summary, "")
			}
		}
	case "model":
		for _, p := range spec.Providers() {
			add(p.Name+"/", kindModule, "provider "+p.Name, "")
		}
	default:
		path := append(append([]string(nil), ctx.path...), ctx.key)
		if ctx.item {
			path = append(path, "-")
		}
		for _, v := range enumsAt(path) {
			add(v, kindEnum, "", "")
		}
	}
	return items
}

var idLine = regexp.MustCompile(`(?m)^[ \t]*-[ \t]+id:[ \t]*["']?([a-z][a-z0-9_]*)`)

// taskIDs are the ids of the tasks, from the AST when a text parsed, else
// from the `- id: X` lines of the current text.
func (c *completer) taskIDs() []string {
	var ids []string
	if c.good.parsed() {
		for _, t := range tasksOf(c.good.file()) {
			ids = append(ids, t.id)
		}
		return ids
	}
	for _, m := range idLine.FindAllSubmatch(c.cur.text, -1) {
		ids = append(ids, string(m[1]))
	}
	return ids
}

// enclosingTask is the id of the task whose text holds the cursor.
func (c *completer) enclosingTask() string {
	sn := c.cur
	if !sn.parsed() {
		id := ""
		for _, m := range idLine.FindAllSubmatchIndex(sn.text, -1) {
			if m[0] <= c.off {
				id = string(sn.text[m[2]:m[3]])
			}
		}
		return id
	}
	id := ""
	for _, t := range tasksOf(sn.file()) {
		if sn.nodeOffset(t.node) <= c.off {
			id = t.id
		}
	}
	return id
}

var (
	fieldTail = regexp.MustCompile(`\btasks\s*\.\s*([a-z][a-z0-9_]*)\s*\.\s*([A-Za-z0-9_]*)$`)
	nameTail  = regexp.MustCompile(`\b(tasks|vars|env|secrets|with)\s*\.\s*([A-Za-z0-9_]*)$`)
	rootTail  = regexp.MustCompile(`(?:^|[^.\w])([A-Za-z_][A-Za-z0-9_]*)?$`)
)

// recordFields are the fields of every task record (LANGUAGE.md §3.13).
var recordFields = []string{"status", "output", "error", "started_at", "ended_at", "duration_ms"}

func (c *completer) expression(typed string) []completionItem {
	items := []completionItem{}
	add := func(label string, kind int, detail string, wordLen int) {
		items = append(items, completionItem{Label: label, Kind: kind, Detail: detail, TextEdit: c.edit(c.off-wordLen, label)})
	}
	if m := fieldTail.FindStringSubmatch(typed); m != nil {
		for _, f := range recordFields {
			add(f, kindField, "record field", len(m[2]))
		}
		if t, ok := findTask(tasksOf(c.good.file()), m[1]); ok {
			for _, b := range keysOfNode(t.node.Get("output")) {
				add(b, kindField, "binding of "+m[1], len(m[2]))
			}
		}
		return items
	}
	if m := nameTail.FindStringSubmatch(typed); m != nil {
		for _, name := range c.names(m[1]) {
			add(name, kindVariable, m[1], len(m[2]))
		}
		return items
	}
	if m := rootTail.FindStringSubmatch(typed); m != nil {
		for _, r := range []string{"vars", "env", "secrets", "tasks", "with", "item", "index"} {
			add(r, kindKeyword, "namespace", len(m[1]))
		}
	}
	return items
}

// names lists the names declared in a namespace.
func (c *completer) names(root string) []string {
	f := c.good.file()
	switch root {
	case "tasks":
		return c.taskIDs()
	case "with":
		self := c.enclosingTask()
		if t, ok := findTask(tasksOf(c.cur.file()), self); ok {
			return keysOfNode(t.node.Get("with"))
		}
		return nil
	}
	names := keysOf(f, root)
	sort.Strings(names)
	return names
}

func keysOfNode(n *spec.Node) []string {
	n = n.Deref()
	if n == nil || n.Kind != spec.KindMap {
		return nil
	}
	var out []string
	for _, p := range n.Pairs {
		if p.Key.Kind == spec.KindString {
			out = append(out, p.Key.Str)
		}
	}
	return out
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
