package spec

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExplainEveryCode(t *testing.T) {
	for _, c := range Codes() {
		text, ok := Explain(c.ID)
		if !ok {
			t.Errorf("%s: no explanation", c.ID)
			continue
		}
		if !strings.HasPrefix(text, c.ID+" — ") {
			t.Errorf("%s: text does not start with its id: %q", c.ID, explainFirstLine(text))
		}
		if strings.Contains(c.Stage, "S") && !strings.Contains(text, "\nExample:\n") {
			t.Errorf("%s: static code without an Example:", c.ID)
		}
		if c.Retired {
			if !strings.Contains(text, "retired") {
				t.Errorf("%s: retired code whose text does not say so", c.ID)
			}
		} else if !strings.Contains(text, "\nFix: ") {
			t.Errorf("%s: no Fix:", c.ID)
		}
		if !c.Retired && !strings.Contains(explainFirstLine(text), "("+c.Category+", ") {
			t.Errorf("%s: header does not name the category %s: %q", c.ID, c.Category, explainFirstLine(text))
		}
		for i, l := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(l); n > 110 || (i == 0 && n > 100) {
				t.Errorf("%s: line %d has %d characters: %q", c.ID, i+1, n, l)
			}
			if strings.TrimRight(l, " \t") != l {
				t.Errorf("%s: line %d has trailing white space: %q", c.ID, i+1, l)
			}
		}
		if !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
			t.Errorf("%s: text must end with exactly one newline", c.ID)
		}
	}
}

// Every explanation belongs to an allocated code: no text for a code the registry does not know.
func TestExplainOnlyAllocatedCodes(t *testing.T) {
	for id := range explanations {
		if _, ok := LookupCode(id); !ok {
			t.Errorf("explanation for unallocated code %s", id)
		}
	}
}

func TestExplainLookup(t *testing.T) {
	if _, ok := Explain("NIKA-PARSE-999"); ok {
		t.Error("unknown code explained")
	}
	if _, ok := Explain(""); ok {
		t.Error("empty id explained")
	}
	a, ok := Explain("nika-parse-010")
	b, _ := Explain("NIKA-PARSE-010")
	if !ok || a != b {
		t.Error("lookup is not case-insensitive")
	}
	want := "NIKA-PARSE-010 — bad `timeout` (validation_error, static, not transient)\n"
	if !strings.HasPrefix(b, want) {
		t.Errorf("header = %q, want %q", explainFirstLine(b), want)
	}
	for _, s := range []string{"\nExample:\n  - id: fetch\n    timeout: 60", "timeout: \"60s\""} {
		if !strings.Contains(b, s) {
			t.Errorf("NIKA-PARSE-010 text lacks %q:\n%s", s, b)
		}
	}
}

// Texts that the design documents pin down (DECISIONS.md wins over LANGUAGE.md).
func TestExplainFollowsDecisions(t *testing.T) {
	cases := []struct{ id, want string }{
		{"NIKA-EXEC-001", "{exit_code, stderr}"},
		{"NIKA-PARSE-019", "`vault`"},                    // D25
		{"NIKA-BUILTIN-001", "other than `webhook`"},     // D25
		{"NIKA-AGENT-005", "never emitted in v1"},        // D25
		{"NIKA-INFER-001", "quota_exceeded"},             // D27, D46
		{"NIKA-AGENT-004", "NIKA-VAR-006"},               // D27
		{"NIKA-SEC-003", "exits 3"},                      // D23
		{"NIKA-TIMEOUT-001", "never retried"},            // §3.9
		{"NIKA-PARSE-016", "never emitted"},              // §8.2
		{"NIKA-DAG-001", "a -> c -> b -> a"},             // D11
		{"NIKA-BUILTIN-FETCH-001", "transient for 5xx"},  // §7.5
		{"NIKA-CANCEL-001", "never retried nor handled"}, // §3.4
	}
	for _, c := range cases {
		text, _ := Explain(c.id)
		if !strings.Contains(strings.Join(strings.Fields(text), " "), c.want) {
			t.Errorf("%s: text lacks %q:\n%s", c.id, c.want, text)
		}
	}
}

func TestExplainWrapKeepsCodeSpans(t *testing.T) {
	var b strings.Builder
	explainWrap(&b, strings.Repeat("word ", 18)+"`retry: { max_attempts: 3 }` end")
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if strings.Count(l, "`")%2 != 0 {
			t.Errorf("a code span was split across lines: %q", b.String())
		}
	}
}

func explainFirstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
