package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

// providerRow is the README's line for one row of the provider table.
func providerRow(p spec.Provider) string {
	code := func(vs []string) string {
		if len(vs) == 0 {
			return "—"
		}
		return "`" + strings.Join(vs, "`, `") + "`"
	}
	key := code(p.KeyVars)
	switch {
	case p.Wire == spec.WireMock:
		key = "none"
	case !p.KeyRequired:
		key += " (optional)"
	}
	base := "—"
	if p.BaseURL != "" {
		base = p.BaseURL
	}
	wire := map[string]string{spec.WireChatCompletions: "Chat Completions", spec.WireAnthropic: "Anthropic Messages",
		spec.WireGemini: "Gemini", spec.WireMock: "built in"}[p.Wire]
	return "| `" + p.Name + "` | " + wire + " | " + key + " | " + code(p.BaseURLVars) + " | " + base + " |"
}

// The README's provider table is the one provider table (spec.Providers), row for row: a
// provider added, renamed or given another variable fails here until the README says so. Run
// with -v to see the rows it wants.
func TestREADMEListsTheProviderTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `") && strings.Count(line, "|") == 6 {
			got = append(got, line)
		}
	}
	var want []string
	for _, p := range spec.Providers() {
		want = append(want, providerRow(p))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the README's provider table is not spec.Providers; want these rows:\n%s\n\ngot:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// The README's layout table names every top-level directory that holds Go code (engine
// included), and every package it names exists.
func TestREADMELayoutMatchesTheTree(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Layout")
	if start < 0 {
		t.Fatal("the README has no ## Layout section")
	}
	section := text[start:]
	if end := strings.Index(section[len("## Layout"):], "\n## "); end >= 0 {
		section = section[:len("## Layout")+end]
	}
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		for _, part := range strings.Split(cell, ",") {
			pkg := strings.Trim(strings.TrimSpace(part), "`")
			named[pkg] = true
			if fi, err := os.Stat("../" + pkg); err != nil || !fi.IsDir() {
				t.Errorf("the layout table names %s, which is not a directory of the tree", pkg)
			}
		}
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "examples" || e.Name() == "scripts" {
			continue
		}
		if !hasGo("../" + e.Name()) {
			continue
		}
		found := false
		for pkg := range named {
			if pkg == e.Name() || strings.HasPrefix(pkg, e.Name()+"/") {
				found = true
			}
		}
		if !found {
			t.Errorf("the layout table does not name %s/", e.Name())
		}
	}
}

// hasGo reports whether dir or a directory under it holds a .go file.
func hasGo(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
