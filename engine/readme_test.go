package engine

import (
	"os"
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
