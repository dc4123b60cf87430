package spec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
)

// billionLaughs is the classic alias bomb: anchors each a list of nine aliases of the previous
// one. Six levels expand to 9^6 leaves, far past the budget: D12 says aliases are never expanded
// while checking, and materializing stops at 10,000 nodes or 1 MiB (NIKA-PARSE-001). More levels
// would only make the seed longer, and every one of its executions as costly (the budget is hit
// either way).
func billionLaughs() []byte {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: lol\nvars:\n  l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 6; i++ {
		b.WriteString("  l" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("tasks:\n  - id: a\n    with: { bomb: *a5 }\n    exec: { command: [\"echo\", \"${{ with.bomb }}\"] }\n")
	return []byte(b.String())
}

// deepFlow nests n flow sequences inside a with value.
func deepFlow(n int) []byte {
	return []byte("nika: v1\nworkflow: deep\ntasks:\n  - id: a\n    with: { x: " +
		strings.Repeat("[", n) + strings.Repeat("]", n) +
		" }\n    exec: { command: [\"echo\", \"${{ with.x }}\"] }\n")
}

// fuzzCheckFixtures are the fixtures FuzzCheck starts from. Not the whole of testdata/fixtures
// (TestFixtures runs every one of them): a fuzz run mutates each seed in turn and minimizes
// every mutant that finds new coverage, which costs up to n²/2 executions for an n-byte input,
// so 160 fixtures of up to 3 KB kept a 60 s run busy minimizing mutants of the first few dozen.
// These are small files (TestFuzzSeedBudget bounds them) picked greedily by the spec/...
// blocks each adds to the others: together they cover about 70% of what all the fixtures do.
// The shapes: every verb and the envelope keys (parse-020), expressions in when, for_each, with
// and prompts (valid-quoted-colon, var-005-literal, review-valid-escapes-and-nested-braces,
// review-valid-braces-not-placeholders), jq outputs (var-005-jq), permits and globs
// (sec-004-glob-root, review-grep-root-reaches-permit, lint-tool-glob-star, builtin-glob-001),
// builtin arguments (builtin-date-001, builtin-validate-002), value ranges and types
// (parse-019-ranges, parse-019-types, parse-typed-detection), YAML 1.2 core tags, CRLF and tabs
// (review-yaml-core-tags, pos-crlf, parse-001-tab-indent), vars (var-001-has, parse-015), the
// DAG (dag-004-self), task shapes (parse-012) and a lint (lint-secret-in-prompt).
var fuzzCheckFixtures = []string{
	"parse-020.nika.yaml",
	"valid-quoted-colon.nika.yaml",
	"sec-004-glob-root.nika.yaml",
	"var-005-jq.nika.yaml",
	"builtin-date-001.nika.yaml",
	"parse-019-ranges.nika.yaml",
	"var-001-has.nika.yaml",
	"parse-015.nika.yaml",
	"lint-secret-in-prompt.nika.yaml",
	"parse-typed-detection.nika.yaml",
	"review-yaml-core-tags.nika.yaml",
	"review-valid-braces-not-placeholders.nika.yaml",
	"lint-tool-glob-star.nika.yaml",
	"review-grep-root-reaches-permit.nika.yaml",
	"pos-crlf.nika.yaml",
	"parse-012.nika.yaml",
	"parse-019-types.nika.yaml",
	"builtin-glob-001.nika.yaml",
	"builtin-validate-002.nika.yaml",
	"var-005-literal.nika.yaml",
	"review-valid-escapes-and-nested-braces.nika.yaml",
	"dag-004-self.nika.yaml",
	"parse-001-tab-indent.nika.yaml",
}

// fuzzCheckSeeds is FuzzCheck's seed corpus: the fixtures above and the hostile shapes no
// fixture has (an alias bomb, flow nesting one level past the parser's limit of 256, nothing,
// a lone BOM, an unclosed placeholder).
func fuzzCheckSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, n := range fuzzCheckFixtures {
		src, err := os.ReadFile(filepath.Join(fixtureDir, n))
		if err != nil {
			tb.Fatalf("FuzzCheck seed: %v", err)
		}
		seeds = append(seeds, src)
	}
	return append(seeds,
		billionLaughs(),
		deepFlow(257),
		[]byte(""),
		[]byte("\xef\xbb\xbf"),
		[]byte("nika: v1\nworkflow: x\ntasks:\n  - id: a\n    exec: { command: \"echo ${{ \" }\n"))
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// FuzzCheck feeds arbitrary bytes to the checker: it must never panic (a
// recovered panic surfaces as an internal_error finding, which fails here
// too), and every finding must be well formed.
func FuzzCheck(f *testing.F) {
	for _, src := range fuzzCheckSeeds(f) {
		f.Add(src)
	}

	f.Fuzz(func(t *testing.T, src []byte) {
		for _, opts := range []spec.CheckOptions{{}, {MCPServers: []string{"github"}, Model: "mock/echo"}} {
			a := spec.CheckSource("fuzz.nika.yaml", src, opts)
			if a == nil {
				t.Fatal("CheckSource returned nil")
			}
			checkFindings(t, src, a.Findings)
		}
	})
}

func checkFindings(t *testing.T, src []byte, fs []spec.Finding) {
	t.Helper()
	body := bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	// Line breaks are LF, CRLF and a lone CR (YAML 1.2 §5.4).
	lines := bytes.Count(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n")) +
		bytes.Count(bytes.ReplaceAll(body, []byte("\r\n"), nil), []byte("\r")) + 1
	for _, f := range fs {
		where := findingLine(f) + " " + f.Path + ": " + f.Message
		if f.Category == "internal_error" {
			t.Errorf("checker panicked: %s\ninput:\n%q", where, src)
		}
		if f.Pos.Line < 1 || f.Pos.Column < 1 {
			t.Errorf("invalid position %d:%d: %s", f.Pos.Line, f.Pos.Column, where)
		}
		if f.Pos.Line > lines {
			t.Errorf("line %d past the end of the file (%d lines): %s", f.Pos.Line, lines, where)
		}
		if f.Pos.Offset < 0 || f.Pos.Offset > len(body) {
			t.Errorf("offset %d outside the file (%d bytes): %s", f.Pos.Offset, len(body), where)
		}
		if strings.TrimSpace(f.Message) == "" {
			t.Errorf("empty message: %s", where)
		}
		if !utf8.ValidString(f.Message) || !utf8.ValidString(f.Detail) {
			t.Errorf("message or detail is not valid UTF-8: %q / %q", f.Message, f.Detail)
		}
		switch f.Severity {
		case spec.SeverityError:
			if f.Code != "" {
				if _, ok := spec.LookupCode(f.Code); !ok {
					t.Errorf("unregistered code %s: %s", f.Code, where)
				}
			}
		case spec.SeverityWarning:
			if f.Rule == "" || f.Code != "" {
				t.Errorf("a warning needs a rule and no code: %s", where)
			}
		default:
			t.Errorf("bad severity %q: %s", f.Severity, where)
		}
	}
}
