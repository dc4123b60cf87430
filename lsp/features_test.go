package lsp

import (
	"strconv"
	"strings"
	"testing"
)

const validURI = "file:///work/flows/valid.nika.yaml"

// session opens one document in a fresh server and waits for its first
// diagnostics.
func session(t *testing.T, uri, text string, opts Options) *client {
	t.Helper()
	c := start(t, opts, nil)
	c.initialize()
	c.open(uri, text)
	c.diagnostics(uri, 1)
	t.Cleanup(c.shutdown)
	return c
}

func pos(uri string, p Position) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": p}
}

func hoverText(t *testing.T, c *client, uri string, p Position) string {
	t.Helper()
	var h *hover
	c.call("textDocument/hover", pos(uri, p), &h)
	if h == nil {
		return ""
	}
	if h.Contents.Kind != "markdown" {
		t.Errorf("hover kind %q, want markdown", h.Contents.Kind)
	}
	return h.Contents.Value
}

func TestHover(t *testing.T) {
	broken := fixture(t, "broken.nika.yaml")
	valid := fixture(t, "valid.nika.yaml")
	b := session(t, brokenURI, broken, Options{})
	v := session(t, validURI, valid, Options{})
	for _, tc := range []struct {
		name  string
		c     *client
		uri   string
		at    Position
		wants []string
	}{
		{"a finding's explanation", b, brokenURI, at(t, broken, "modle", 2),
			[]string{"**NIKA-PARSE-005** unknown field `modle`", "Rename `modle` to `model`", "**NIKA-PARSE-005 — unknown field"}},
		{"a finding after non-ASCII text", b, brokenURI, at(t, broken, "vars.nam", 1),
			[]string{"**NIKA-VAR-001** `vars.nam` is not declared", "Did you mean `name`?"}},
		{"a code written in the file", v, validURI, at(t, valid, "NIKA-INFER-001", 5),
			[]string{"**NIKA-INFER-001 — "}},
		{"a tasks.X reference", v, validURI, at(t, valid, "tasks.summarize.words", 8),
			[]string{"**task `summarize`** · `infer` · model `mock/echo`", "depends on `fetch`", "\"type\": \"string\"", "- `words` = `split(\" \") | length`"}},
		{"a task id in depends_on", v, validURI, at(t, valid, "- summarize", 4),
			[]string{"**task `summarize`**"}},
		{"an invoke task's output is its builtin's", v, validURI, at(t, valid, "tasks.fetch.output }}", 7),
			[]string{"**task `fetch`** · `invoke` · tool `nika:fetch`", "no dependencies", "output:\n```json"}},
		{"a var", v, validURI, at(t, valid, "vars.topic", 6),
			[]string{"**var `topic`**: string, default `\"go\"`"}},
		{"an env constant", v, validURI, at(t, valid, "env.region", 5),
			[]string{"**env `region`** = `\"eu\"`"}},
		{"an expression's static type", v, validURI, at(t, valid, "tasks.summarize.words > vars.count", 23),
			[]string{"expression `tasks.summarize.words > vars.count`: **boolean**"}},
		{"a builtin", v, validURI, at(t, valid, "nika:fetch", 6),
			[]string{"**`nika:fetch`** — ", "parameters:", "- `url` (string, required)"}},
		{"a key", v, validURI, at(t, valid, "depends_on: [fetch]", 3),
			[]string{"**`depends_on`** — Ids of the tasks this one depends on."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hoverText(t, tc.c, tc.uri, tc.at)
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("hover lacks %q:\n%s", w, got)
				}
			}
		})
	}
	if got := hoverText(t, v, validURI, Position{Line: 0, Character: 7}); got != "" {
		t.Errorf("hover on `v1` = %q, want none", got)
	}
}

func labels(t *testing.T, c *client, uri string, p Position) (map[string]completionItem, []string) {
	t.Helper()
	var list completionList
	c.call("textDocument/completion", pos(uri, p), &list)
	m := map[string]completionItem{}
	var order []string
	for _, it := range list.Items {
		m[it.Label] = it
		order = append(order, it.Label)
	}
	return m, order
}

// completeIn opens text with `|` marking the cursor and returns the
// completion labels there.
func completeIn(t *testing.T, text string, opts Options) (map[string]completionItem, []string) {
	t.Helper()
	i := strings.Index(text, "|")
	src := text[:i] + text[i+1:]
	c := session(t, validURI, src, opts)
	return labels(t, c, validURI, utf16At(src, i))
}

const head = "nika: v1\nworkflow: w\nmodel: mock/echo\nvars:\n  topic: go\n  count: 3\nenv:\n  region: eu\n"

func TestCompletion(t *testing.T) {
	tasks := head + "tasks:\n  - id: fetch\n    invoke:\n      tool: nika:fetch\n      args: { url: \"https://x.test\" }\n    output:\n      title: \".title\"\n"
	for _, tc := range []struct {
		name        string
		text        string
		opts        Options
		want, avoid []string
	}{
		{"envelope keys", "nika: v1\nworkflow: w\n|", Options{}, []string{"tasks", "vars", "permits", "outputs"}, []string{"nika", "workflow", "id"}},
		{"task keys", tasks + "  - id: b\n    |", Options{}, []string{"depends_on", "infer", "retry", "on_error"}, []string{"id", "nika", "tool"}},
		{"task keys of a new item", tasks + "  - |", Options{}, []string{"id", "depends_on", "infer"}, []string{"nika"}},
		{"verb keys", tasks + "  - id: b\n    infer:\n      pro|", Options{}, []string{"prompt", "system", "schema"}, []string{"tool", "depends_on"}},
		{"builtin args", tasks + "  - id: b\n    invoke:\n      tool: nika:read\n      args:\n        |", Options{}, []string{"path"}, []string{"url", "prompt"}},
		{"depends_on flow", tasks + "  - id: b\n    depends_on: [|", Options{}, []string{"fetch"}, []string{"b"}},
		{"depends_on block", tasks + "  - id: b\n    depends_on:\n      - |", Options{}, []string{"fetch"}, []string{"b"}},
		{"tool", tasks + "  - id: b\n    invoke:\n      tool: nika:f|", Options{}, []string{"nika:fetch", "nika:read"}, []string{"mcp:**"}},
		{"mcp servers", tasks + "  - id: b\n    invoke:\n      tool: |", Options{}.withServers("github"), []string{"mcp:github/", "nika:glob"}, nil},
		{"agent tools", tasks + "  - id: b\n    agent:\n      prompt: p\n      tools: [|", Options{}.withServers("github"), []string{"nika:*", "nika:read", "mcp:github/*", "mcp:**"}, nil},
		{"on_codes", tasks + "  - id: b\n    retry:\n      max_attempts: 2\n      on_codes: [|", Options{}, []string{"NIKA-INFER-001"}, nil},
		{"an enum", tasks + "  - id: b\n    retry:\n      backoff_strategy: |", Options{}, []string{"fixed", "linear", "exponential"}, nil},
		{"tasks.", tasks + "  - id: b\n    infer:\n      prompt: \"${{ tasks.| }}\"", Options{}, []string{"fetch", "b"}, []string{"vars"}},
		{"tasks.X.", tasks + "  - id: b\n    infer:\n      prompt: \"${{ tasks.fetch.| }}\"", Options{}, []string{"output", "status", "title"}, []string{"fetch"}},
		{"vars.", tasks + "  - id: b\n    infer:\n      prompt: \"${{ vars.t| }}\"", Options{}, []string{"topic", "count"}, []string{"region"}},
		{"env.", tasks + "  - id: b\n    infer:\n      prompt: \"${{ env.| }}\"", Options{}, []string{"region"}, []string{"topic"}},
		{"with.", tasks + "  - id: b\n    with:\n      page: x\n    infer:\n      prompt: \"${{ with.| }}\"", Options{}, []string{"page"}, []string{"topic"}},
		{"namespaces", tasks + "  - id: b\n    infer:\n      prompt: \"${{ v| }}\"", Options{}, []string{"vars", "env", "tasks", "with"}, nil},
		{"nothing inside a block scalar", tasks + "  - id: b\n    infer:\n      prompt: |\n        some text\n        |", Options{}, nil, []string{"prompt", "depends_on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, order := completeIn(t, tc.text, tc.opts)
			for _, w := range tc.want {
				if _, ok := got[w]; !ok {
					t.Errorf("no %q among %v", w, order)
				}
			}
			for _, a := range tc.avoid {
				if _, ok := got[a]; ok {
					t.Errorf("%q offered, it should not be: %v", a, order)
				}
			}
		})
	}
}

func (o Options) withServers(names ...string) Options {
	o.Check.MCPServers = names
	return o
}

// A completion replaces what is typed of the word, and a value typed right
// after `key:` gets its space.
func TestCompletionEdits(t *testing.T) {
	text := head + "tasks:\n  - id: a\n    invoke:\n      tool: nika:fe|\n"
	got, _ := completeIn(t, text, Options{})
	it := got["nika:fetch"]
	if it.TextEdit == nil || it.TextEdit.NewText != "nika:fetch" {
		t.Fatalf("nika:fetch edit %+v", it.TextEdit)
	}
	src := strings.Replace(text, "|", "", 1)
	if s := slice(t, src, it.TextEdit.Range); s != "nika:fe" {
		t.Errorf("the edit replaces %q, want %q", s, "nika:fe")
	}
	got, _ = completeIn(t, head+"tasks:\n  - id: a\n    invoke:\n      tool:|\n", Options{})
	if e := got["nika:read"].TextEdit; e == nil || e.NewText != " nika:read" {
		t.Errorf("right after `tool:` the edit is %+v, want a leading space", e)
	}
	got, _ = completeIn(t, head+"tasks:\n  - id: a\n    retr|\n", Options{})
	if e := got["retry"].TextEdit; e == nil || e.NewText != "retry: " {
		t.Errorf("a key's edit is %+v, want `retry: `", e)
	}
}

func TestDefinitionAndReferences(t *testing.T) {
	valid := fixture(t, "valid.nika.yaml")
	c := session(t, validURI, valid, Options{})
	decl := Range{at(t, valid, "id: summarize", 4), at(t, valid, "id: summarize", 13)}
	for _, from := range []Position{
		at(t, valid, "tasks.summarize.words", 9),       // inside tasks.X
		at(t, valid, "- summarize", 3),                 // a depends_on entry
		at(t, valid, "id: summarize", 6),               // the id itself
		at(t, valid, "tasks.summarize.output", 0),      // on the root
		at(t, valid, "tasks.summarize.output }}\n", 6), // outputs
	} {
		var locs []Location
		c.call("textDocument/definition", pos(validURI, from), &locs)
		if len(locs) != 1 || locs[0].URI != validURI || locs[0].Range != decl {
			t.Errorf("definition from %+v = %+v, want %+v", from, locs, decl)
		}
	}
	var locs []Location
	c.call("textDocument/definition", pos(validURI, at(t, valid, "vars.count", 7)), &locs)
	if len(locs) != 1 || slice(t, valid, locs[0].Range) != "count" {
		t.Errorf("definition of vars.count = %+v, want its declaration", locs)
	}
	c.call("textDocument/definition", pos(validURI, at(t, valid, "prompt", 2)), &locs)
	if len(locs) != 0 {
		t.Errorf("definition on a key = %+v, want none", locs)
	}

	params := pos(validURI, at(t, valid, "- summarize", 4))
	params["context"] = map[string]any{"includeDeclaration": true}
	c.call("textDocument/references", params, &locs)
	var got []string
	for _, l := range locs {
		got = append(got, slice(t, valid, l.Range)+"@"+itoa(l.Range.Start.Line+1))
	}
	want := "summarize@14 summarize@24 summarize@25 summarize@27 summarize@32"
	if strings.Join(got, " ") != want {
		t.Errorf("references = %v, want %s", got, want)
	}
	params["context"] = map[string]any{"includeDeclaration": false}
	c.call("textDocument/references", params, &locs)
	if len(locs) != 4 {
		t.Errorf("references without the declaration: %d, want 4", len(locs))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// applyEdits applies one code action's edits to text.
func applyEdits(t *testing.T, text string, a codeAction, uri string) string {
	t.Helper()
	edits := a.Edit.Changes[uri]
	if len(edits) != 1 {
		t.Fatalf("%q: %d edits, want 1", a.Title, len(edits))
	}
	e := edits[0]
	from, to := offsetOf(t, text, e.Range.Start), offsetOf(t, text, e.Range.End)
	return text[:from] + e.NewText + text[to:]
}

func TestCodeActions(t *testing.T) {
	broken := fixture(t, "broken.nika.yaml")
	c := session(t, brokenURI, broken, Options{})
	for _, tc := range []struct {
		at       Position
		title    string
		was, now string
	}{
		{at(t, broken, "modle", 1), "Rename `modle` to `model`", "modle: mock/echo", "model: mock/echo"},
		{at(t, broken, "nika:fetc", 3), "Change `nika:fetc` to `nika:fetch`", "tool: nika:fetc\n", "tool: nika:fetch\n"},
		{at(t, broken, "depnds_on", 0), "Rename `depnds_on` to `depends_on`", "depnds_on: [fetch]", "depends_on: [fetch]"},
		{at(t, broken, "${{ vars.nam }}", 0), "Change `nam` to `name`", "${{ vars.nam }}", "${{ vars.name }}"},
		{at(t, broken, "fetsh", 0), "Change `fetsh` to `fetch`", "[fetsh]", "[fetch]"},
		{at(t, broken, "${{ tasks.fetch.output }} 🚀", 0), "Add `fetch` to depends_on of `summarize`",
			"  - id: summarize\n    depnds_on", "  - id: summarize\n    depends_on: [fetch]\n    depnds_on"},
		{at(t, broken, "${{ tasks.summarize.output }}", 0), "Add `summarize` to depends_on of `third`",
			"depends_on: [fetsh]", "depends_on: [fetsh, summarize]"},
		{at(t, broken, "${{ tasks.fetch.output }} ${{ tasks.third", 0), "Add `fetch` to depends_on of `fourth`",
			"      - third\n", "      - third\n      - fetch\n"},
	} {
		var actions []codeAction
		c.call("textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": brokenURI},
			"range":        Range{tc.at, tc.at},
			"context":      map[string]any{"diagnostics": []any{}},
		}, &actions)
		var found *codeAction
		var titles []string
		for i := range actions {
			titles = append(titles, actions[i].Title)
			if actions[i].Title == tc.title {
				found = &actions[i]
			}
		}
		if found == nil {
			t.Errorf("at %+v: no %q among %q", tc.at, tc.title, titles)
			continue
		}
		if found.Kind != "quickfix" || len(found.Diagnostics) != 1 {
			t.Errorf("%q: kind %q with %d diagnostics", tc.title, found.Kind, len(found.Diagnostics))
		}
		fixed := applyEdits(t, broken, *found, brokenURI)
		if fixed != strings.Replace(broken, tc.was, tc.now, 1) {
			t.Errorf("%q: the edit does not turn %q into %q:\n%s", tc.title, tc.was, tc.now, fixed)
		}
	}
	var actions []codeAction
	c.call("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": brokenURI},
		"range":        Range{Position{0, 0}, Position{0, 0}},
		"context":      map[string]any{"diagnostics": []any{}},
	}, &actions)
	if len(actions) != 0 {
		t.Errorf("actions on a comment: %+v", actions)
	}
}

// A key from another workflow dialect is renamed to the nika key its detail
// names; a hint that is not a key (the envelope's `flows`) gets no fix.
func TestCodeActionForDialectKeys(t *testing.T) {
	text := head + "flows: x\ntasks:\n  - id: a\n    infer: { prompt: p }\n  - id: b\n    after: [a]\n    infer: { prompt: p }\n"
	c := session(t, validURI, text, Options{})
	for _, tc := range []struct {
		needle, title string
	}{{"after", "Rename `after` to `depends_on`"}, {"flows", ""}} {
		var actions []codeAction
		p := at(t, text, tc.needle, 1)
		c.call("textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": validURI}, "range": Range{p, p},
			"context": map[string]any{"diagnostics": []any{}}}, &actions)
		if tc.title == "" {
			if len(actions) != 0 {
				t.Errorf("%s: actions %+v, want none", tc.needle, actions)
			}
			continue
		}
		if len(actions) != 1 || actions[0].Title != tc.title {
			t.Fatalf("%s: actions %+v, want %q", tc.needle, actions, tc.title)
		}
		if fixed := applyEdits(t, text, actions[0], validURI); fixed != strings.Replace(text, "after: [a]", "depends_on: [a]", 1) {
			t.Errorf("after the fix:\n%s", fixed)
		}
	}
}
