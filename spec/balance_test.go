package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

// unbalanced says what is wrong with the backticks and parentheses of a hand-written text, or ""
// when they pair up: an even number of backticks, and outside code spans every `(` closed by a
// later `)` (inside a code span a lone parenthesis is literal text, e.g. a regular expression).
func unbalanced(s string) string {
	if strings.Count(s, "`")%2 != 0 {
		return "an odd number of backticks"
	}
	depth := 0
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			continue // inside a code span
		}
		for _, r := range part {
			switch r {
			case '(':
				depth++
			case ')':
				if depth--; depth < 0 {
					return "a `)` that closes nothing"
				}
			}
		}
	}
	if depth != 0 {
		return "an unclosed `(`"
	}
	return ""
}

func TestUnbalanced(t *testing.T) {
	for s, bad := range map[string]bool{
		"plain": false, "`a` (b `c)`) d": false, "(`)`)": false, "`(` and `)`": false,
		"`a": true, "(a": true, "a)": true, ")(": true, "Add `tasks:` with `- id: …` item (and its verb` here.": true,
	} {
		if got := unbalanced(s) != ""; got != bad {
			t.Errorf("unbalanced(%q) = %q, want bad=%v", s, unbalanced(s), bad)
		}
	}
}

// Every code's registry summary and rendered `nika explain` text pairs its backticks and parentheses.
func TestRegistryAndExplainTextsBalanced(t *testing.T) {
	for _, c := range spec.Codes() {
		if p := unbalanced(c.Summary); p != "" {
			t.Errorf("%s: summary has %s: %q", c.ID, p, c.Summary)
		}
		text, ok := spec.Explain(c.ID)
		if !ok {
			continue // TestExplainEveryCode reports it
		}
		if p := unbalanced(text); p != "" {
			t.Errorf("%s: explain text has %s:\n%s", c.ID, p, text)
		}
	}
}

// Every finding the checker reports over the fixture corpus has a message and a detail whose
// backticks and parentheses pair up. Messages that quote a third-party error verbatim (which may
// itself quote the user's unbalanced input) are exempt by fixture and code, listed here.
func TestFindingTextsBalanced(t *testing.T) {
	quotesForeignError := map[[2]string]bool{
		{"builtin-grep-001", "NIKA-BUILTIN-GREP-001"}: true, // Go's regexp error: "missing closing ): `(unclosed`"
	}
	n := 0
	for _, fx := range fixtures(t) {
		src, err := os.ReadFile(filepath.Join(fixtureDir, fx.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range spec.CheckSource(fx.file, src, fixtureOptions(fx.name)).Findings {
			n++
			if p := unbalanced(f.Message); p != "" && !quotesForeignError[[2]string{fx.name, f.Code}] {
				t.Errorf("%s %s %d:%d: message has %s: %q", fx.name, f.Code, f.Pos.Line, f.Pos.Column, p, f.Message)
			}
			if p := unbalanced(f.Detail); p != "" {
				t.Errorf("%s %s %d:%d: detail has %s: %q", fx.name, f.Code, f.Pos.Line, f.Pos.Column, p, f.Detail)
			}
		}
	}
	if n == 0 {
		t.Fatal("the corpus produced no finding")
	}
}

// NIKA-PARSE-002 for each missing top-level key: a whole, balanced sentence that names the key.
func TestParseMissingKeyDetails(t *testing.T) {
	for key, src := range map[string]string{
		"nika":     "workflow: w\ntasks:\n  - id: a\n    exec: { command: [\"true\"] }\n",
		"workflow": "nika: v1\ntasks:\n  - id: a\n    exec: { command: [\"true\"] }\n",
		"tasks":    "nika: v1\nworkflow: w\n",
	} {
		var found bool
		for _, f := range spec.CheckSource("w.nika.yaml", []byte(src), spec.CheckOptions{}).Findings {
			if f.Code != spec.CodeParseMissing || f.Message != "missing required key `"+key+"`" {
				continue
			}
			found = true
			if p := unbalanced(f.Detail); p != "" || !strings.HasPrefix(f.Detail, "Add ") || !strings.HasSuffix(f.Detail, ".") ||
				!strings.Contains(f.Detail, "`"+key+":") {
				t.Errorf("missing %s: detail %q (%s)", key, f.Detail, p)
			}
		}
		if !found {
			t.Errorf("missing %s: no NIKA-PARSE-002", key)
		}
	}
}
