package spec

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
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
	es, _ := explanations()
	for id := range es {
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

// The embedded Markdown files read without an error: every section has a header, a body, at
// most one closed example and a last `Fix:` paragraph, and no code is explained twice.
func TestExplainFiles(t *testing.T) {
	es, err := explanations()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != len(Codes()) {
		t.Errorf("%d explanations for %d codes", len(es), len(Codes()))
	}
}

func TestExplainFileFormat(t *testing.T) {
	fsys := fstest.MapFS{
		"explain/A.md": {Data: []byte("# Title\n\nIntro, not read.\n\n" +
			"## NIKA-A-001 — first `one`\n\nOne line\nwrapped.\n\nAmong them:\n* a bullet\n  continued;\n* another.\n\n" +
			"```yaml\n  - id: x   \n\n    y: 1\n```\n\nFix: Do\nthis.\n" +
			"## NIKA-A-002 — runtime only\n\nNo example, no fix.\n")},
		"explain/B.md": {Data: []byte("## NIKA-A-001 — again\n\nx\n\n## bad header\n\nx\n\n" +
			"## NIKA-B-001 — t\n\nFix: a\n\nafter the fix\n\n## NIKA-B-002 — t\n\n```yaml\nunclosed\n")},
	}
	got, err := parseExplanations(fsys)
	want := map[string]explanation{
		"NIKA-A-001": {title: "first `one`", body: "One line wrapped.\n\nAmong them:\n* a bullet continued;\n* another.",
			example: "  - id: x   \n\n    y: 1", fix: "Do this."}, // verbatim: the rendering trims,
		"NIKA-A-002": {title: "runtime only", body: "No example, no fix."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, s := range []string{
		"explain/B.md:1: NIKA-A-001 is explained twice",
		"explain/B.md:5: a section header is `## NIKA-… — title`",
		"explain/B.md:13: NIKA-B-001: text after the `Fix:` paragraph",
		"explain/B.md:9: NIKA-B-001 has no text",
		"explain/B.md:17: NIKA-B-002: the example's fence is not closed",
	} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v\nlacks %q", err, s)
		}
	}
}
