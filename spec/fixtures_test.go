package spec_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

// The fixture corpus: testdata/fixtures/NAME.EXT is checked and its findings
// are compared with NAME.out, one line per finding in the checker's order
// (line, column, code):
//
//	NIKA-PARSE-005 14:5
//	warning[unused-with] 9:13
//
// NAME is the file name up to its first dot, so `ext.nika.txt` (checked under
// that name, for the file-extension lint) pairs with `ext.out`. An empty .out
// means the file is valid. A fixture whose expectation the checker does not
// meet yet has NAME.out.todo instead and is skipped.
//
// The expectations come from LANGUAGE.md and DECISIONS.md, not from the
// checker: -update rewrites the .out files from the checker's output, so
// review every changed line against the spec before keeping it.
//
// Name prefixes choose the check options:
//
//	mcp-…         MCPServers: ["github"] (the registry is visible)
//	model-flag-…  Model: "ollama/qwen3:8b" (as `nika check --model`)
var update = flag.Bool("update", false, "rewrite testdata/fixtures/*.out from the checker (review the diff against the spec)")

const fixtureDir = "testdata/fixtures"

// fixtureOptions returns the check options a fixture's name asks for.
func fixtureOptions(name string) spec.CheckOptions {
	var o spec.CheckOptions
	if strings.HasPrefix(name, "mcp-") {
		o.MCPServers = []string{"github"}
	}
	if strings.HasPrefix(name, "model-flag-") {
		o.Model = "ollama/qwen3:8b"
	}
	return o
}

type fixture struct {
	file string // file name in fixtureDir
	name string // NAME: the file name up to its first dot
}

// fixtures lists the checked files of the corpus, sorted by name.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []fixture
	seen := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, ".out") || strings.HasSuffix(n, ".out.todo") {
			continue
		}
		name, _, _ := strings.Cut(n, ".")
		if prev, ok := seen[name]; ok {
			t.Fatalf("fixtures %s and %s share the name %q", prev, n, name)
		}
		seen[name] = n
		out = append(out, fixture{file: n, name: name})
	}
	if len(out) == 0 {
		t.Fatal("no fixtures")
	}
	return out
}

// findingLine renders one finding as a line of a .out file.
func findingLine(f spec.Finding) string {
	label := f.Code
	switch {
	case f.Severity == spec.SeverityWarning:
		label = "warning[" + f.Rule + "]"
	case label == "":
		label = "error" // a code-less error, e.g. an internal checker error
	}
	return fmt.Sprintf("%s %d:%d", label, f.Pos.Line, f.Pos.Column)
}

// outKey is the sort key of a .out line: line, column, then code (warnings
// have no code, so they come first at a position, as in spec.SortFindings).
type outKey struct {
	line, col int
	code      string
	label     string
}

func parseOutLine(s string) (outKey, error) {
	label, pos, ok := strings.Cut(s, " ")
	if !ok {
		return outKey{}, fmt.Errorf("want `LABEL LINE:COL`, got %q", s)
	}
	ls, cs, ok := strings.Cut(pos, ":")
	line, err1 := strconv.Atoi(ls)
	col, err2 := strconv.Atoi(cs)
	if !ok || err1 != nil || err2 != nil || line < 1 || col < 1 {
		return outKey{}, fmt.Errorf("bad position in %q", s)
	}
	k := outKey{line: line, col: col, label: label}
	if !strings.HasPrefix(label, "warning[") {
		k.code = label
	}
	return k, nil
}

func (a outKey) less(b outKey) bool {
	if a.line != b.line {
		return a.line < b.line
	}
	if a.col != b.col {
		return a.col < b.col
	}
	if a.code != b.code {
		return a.code < b.code
	}
	return a.label < b.label
}

// sortOut orders .out lines as the checker orders findings; among findings
// with the same position and code (where the checker then orders by message)
// the label decides, so the comparison never depends on message wording.
func sortOut(lines []string) []string {
	keys := make([]outKey, len(lines))
	for i, l := range lines {
		keys[i], _ = parseOutLine(l)
	}
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]].less(keys[idx[j]]) })
	out := make([]string, len(lines))
	for i, j := range idx {
		out[i] = lines[j]
	}
	return out
}

func readOut(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

func checkFixture(t testing.TB, fx fixture) (*spec.Analysis, []string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(fixtureDir, fx.file))
	if err != nil {
		t.Fatal(err)
	}
	a := spec.CheckSource(fx.file, src, fixtureOptions(fx.name))
	var got []string
	for _, f := range a.Findings {
		got = append(got, findingLine(f))
	}
	return a, sortOut(got)
}

func TestFixtures(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			outPath := filepath.Join(fixtureDir, fx.name+".out")
			todoPath := outPath + ".todo"
			_, errOut := os.Stat(outPath)
			_, errTodo := os.Stat(todoPath)
			if errOut == nil && errTodo == nil {
				t.Fatalf("both %s and %s exist: keep one", outPath, todoPath)
			}
			a, got := checkFixture(t, fx)
			if *update {
				if errTodo == nil {
					t.Skipf("%s: expectation marked todo; not rewritten", fx.name)
				}
				body := strings.Join(got, "\n")
				if body != "" {
					body += "\n"
				}
				if err := os.WriteFile(outPath, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if errOut != nil {
				if errTodo == nil {
					t.Skipf("the checker does not meet the spec here yet; see %s (rename it to %s.out once it does)", todoPath, fx.name)
				}
				t.Fatalf("no %s: write the expected findings (run with -update, then review each line against the spec)", outPath)
			}
			want, err := readOut(outPath)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range want {
				k, err := parseOutLine(l)
				if err != nil {
					t.Fatalf("%s:%d: %v", outPath, i+1, err)
				}
				if i > 0 {
					if prev, _ := parseOutLine(want[i-1]); k.less(prev) {
						t.Errorf("%s:%d: %q is out of order (sort by line, column, code)", outPath, i+1, l)
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("findings differ from %s\n%s\nall findings:\n%s", outPath, lineDiff(want, got), describe(a.Findings))
			}
		})
	}
}

// lineDiff shows the expected lines missing from got (-) and the extra ones (+).
func lineDiff(want, got []string) string {
	count := map[string]int{}
	for _, l := range got {
		count[l]++
	}
	var b strings.Builder
	for _, l := range want {
		if count[l] > 0 {
			count[l]--
			continue
		}
		fmt.Fprintf(&b, "  - %s (expected, not reported)\n", l)
	}
	for _, l := range got {
		if count[l] > 0 {
			count[l]--
			fmt.Fprintf(&b, "  + %s (reported, not expected)\n", l)
		}
	}
	if b.Len() == 0 {
		b.WriteString("  (same lines, different order)\n")
	}
	return b.String()
}

func describe(fs []spec.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s: %s — %s\n", findingLine(f), f.Path, f.Message, f.Detail)
	}
	return b.String()
}

// staticCodes are the codes of LANGUAGE.md §8.3 with stage S or S/R that the
// corpus must show failing at least once (in a .out or a .out.todo).
var staticCodes = []string{
	"NIKA-PARSE-001", "NIKA-PARSE-002", "NIKA-PARSE-003", "NIKA-PARSE-004", "NIKA-PARSE-005",
	"NIKA-PARSE-006", "NIKA-PARSE-007", "NIKA-PARSE-008", "NIKA-PARSE-009", "NIKA-PARSE-010",
	"NIKA-PARSE-011", "NIKA-PARSE-012", "NIKA-PARSE-013", "NIKA-PARSE-014", "NIKA-PARSE-015",
	"NIKA-PARSE-017", "NIKA-PARSE-018", "NIKA-PARSE-019", "NIKA-PARSE-020",
	"NIKA-DAG-001", "NIKA-DAG-002", "NIKA-DAG-003", "NIKA-DAG-004",
	"NIKA-VAR-001", "NIKA-VAR-003", "NIKA-VAR-005", "NIKA-VAR-008",
	"NIKA-INVOKE-001", "NIKA-SEC-001", "NIKA-SEC-004",
	"NIKA-BUILTIN-001", "NIKA-BUILTIN-DONE-001", "NIKA-BUILTIN-COMPOSE-001",
	"NIKA-BUILTIN-GLOB-001", "NIKA-BUILTIN-GREP-001", "NIKA-BUILTIN-JQ-001",
	"NIKA-BUILTIN-VALIDATE-001", "NIKA-BUILTIN-DATE-001",
}

// lintRules are the warnings of LANGUAGE.md §9.5.
var lintRules = []string{
	"file-extension", "exec-string-interpolation", "secret-in-prompt", "unused-with",
	"redundant-when", "folded-prompt", "unknown-code", "tool-glob-star",
}

func TestFixturesCoverEveryStaticCode(t *testing.T) {
	seen := map[string]bool{}
	valid := 0
	for _, fx := range fixtures(t) {
		base := filepath.Join(fixtureDir, fx.name+".out")
		lines, err := readOut(base)
		if err != nil {
			lines, err = readOut(base + ".todo")
		}
		if err != nil {
			continue
		}
		if len(lines) == 0 {
			valid++
		}
		for _, l := range lines {
			label, _, _ := strings.Cut(l, " ")
			seen[label] = true
		}
	}
	for _, c := range staticCodes {
		if _, ok := spec.LookupCode(c); !ok {
			t.Errorf("%s is not a registered code", c)
		}
		if !seen[c] {
			t.Errorf("no fixture expects %s", c)
		}
	}
	for _, r := range lintRules {
		if !seen["warning["+r+"]"] {
			t.Errorf("no fixture expects the warning %s", r)
		}
	}
	if valid < 8 {
		t.Errorf("%d valid fixtures (empty .out), want at least 8", valid)
	}
}

// TestFixtureDetails pins the parts of a few details that the spec requires:
// "did you mean" suggestions (§9.3) and the cycle path (D11).
func TestFixtureDetails(t *testing.T) {
	cases := []struct {
		fixture, code, line string // line: LINE:COL of the finding
		want                string
	}{
		{"parse-005-did-you-mean", "NIKA-PARSE-005", "7:5", "depends_on"},
		{"parse-005-unknown", "NIKA-PARSE-005", "11:5", "retry"},
		{"parse-005-unknown", "NIKA-PARSE-005", "12:28", "temperature"},
		{"dag-002", "NIKA-DAG-002", "7:18", "fetch"},
		{"dag-001-three-cycle", "NIKA-DAG-001", "10:18", "a -> c -> b -> a"},
		{"dag-001-two-cycle", "NIKA-DAG-001", "8:18", "a -> b -> a"},
		{"dag-001-self", "NIKA-DAG-001", "5:18", "a -> a"},
		{"var-001", "NIKA-VAR-001", "12:23", "topic"},
		{"var-001", "NIKA-VAR-001", "18:23", "output"},
		{"var-001", "NIKA-VAR-001", "26:23", "REGION"},
		{"invoke-001", "NIKA-INVOKE-001", "5:21", "nika:read"},
		{"builtin-001", "NIKA-BUILTIN-001", "5:54", "level"},
		{"parse-019-provider", "NIKA-PARSE-019", "3:8", "openai"},
		{"parse-019-provider", "NIKA-PARSE-019", "6:34", "anthropic"},
		{"parse-019-glob-namespace", "NIKA-PARSE-019", "5:21", "nika:compose"},
		{"parse-019-vault", "NIKA-PARSE-019", "4:21", "env"},
	}
	byName := map[string]fixture{}
	for _, fx := range fixtures(t) {
		byName[fx.name] = fx
	}
	for _, c := range cases {
		fx, ok := byName[c.fixture]
		if !ok {
			t.Errorf("no fixture %s", c.fixture)
			continue
		}
		if _, err := os.Stat(filepath.Join(fixtureDir, fx.name+".out")); err != nil {
			continue // a .todo fixture: its positions are not met yet
		}
		a, _ := checkFixture(t, fx)
		found := false
		for _, f := range a.Findings {
			if f.Code == c.code && fmt.Sprintf("%d:%d", f.Pos.Line, f.Pos.Column) == c.line {
				found = true
				if !strings.Contains(f.Detail, c.want) && !strings.Contains(f.Message, c.want) {
					t.Errorf("%s %s %s: detail %q does not mention %q", c.fixture, c.code, c.line, f.Detail, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no %s at %s", c.fixture, c.code, c.line)
		}
	}
}

// TestCheckReportsAllFindings checks one file with independent mistakes in
// different tasks and stages: every one is reported (§9.2, no fail-fast).
func TestCheckReportsAllFindings(t *testing.T) {
	const src = `nika: v1
workflow: many-mistakes
model: mock/echo
vars:
  topic: "x"
tasks:
  - id: a
    retrys: 2
    exec: { command: ["true"] }
  - id: b
    timeout: "30m1h"
    exec: { command: ["true"] }
  - id: c
    depends_on: [missing]
    exec: { command: ["true"] }
  - id: d
    infer: { prompt: "About ${{ vars.topik }}" }
  - id: e
    exec: { command: "rm -rf /" }
  - id: f
    invoke: { tool: nika:log, args: { message: "hi", level: loud } }
  - id: g
    depends_on: [g]
    exec: { command: ["true"] }
  - id: h
    infer: { prompt: "${{ tasks.a.output }}" }
  - id: i
    timeout: "5s"
    exec: { command: ["true"] }
    timeout: "10s"
`
	want := []string{
		"NIKA-PARSE-005 8:5",     // unknown field retrys (envelope and shapes)
		"NIKA-PARSE-010 11:14",   // bad timeout (shapes)
		"NIKA-DAG-002 14:18",     // unknown dependency (DAG)
		"NIKA-VAR-001 17:29",     // undeclared var (expressions)
		"NIKA-SEC-001 19:22",     // blocklisted command (permits and blocklist)
		"NIKA-BUILTIN-001 21:61", // bad enum value (builtin contract)
		"NIKA-DAG-001 23:18",     // self-dependency (DAG)
		"NIKA-DAG-003 26:23",     // missing edge (expressions)
		"NIKA-PARSE-017 30:5",    // duplicate key (YAML)
	}
	a := spec.CheckSource("many.nika.yaml", []byte(src), spec.CheckOptions{})
	var got []string
	for _, f := range a.Findings {
		got = append(got, findingLine(f))
	}
	got = sortOut(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nall findings:\n%s", lineDiff(want, got), describe(a.Findings))
	}
}
