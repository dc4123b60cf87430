package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nikahq/nika/spec/expr"
)

// schemaDocNeedAjv finds node and the ajv package: NIKA_AJV_DIR (a directory holding
// node_modules/ajv), else the directory .ci/run installs it to, .ci/.cache/ajv. It skips the test
// when either is missing, unless NIKA_REQUIRE_INTEGRATION=1 (.ci/run) makes that a failure.
func schemaDocNeedAjv(t *testing.T) (node, dir string) {
	t.Helper()
	missing := func(what string) {
		msg := "the ajv strict-mode test needs " + what + " (.ci/run installs ajv into .ci/.cache/ajv; NIKA_AJV_DIR names another directory holding node_modules/ajv)"
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 makes that a failure")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	dir = os.Getenv("NIKA_AJV_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".ci", ".cache", "ajv")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ajv", "package.json")); err != nil {
		missing("the npm package ajv in " + filepath.Join(dir, "node_modules"))
	}
	return node, dir
}

type ajvError struct {
	InstancePath string `json:"instancePath"`
	Keyword      string `json:"keyword"`
	Message      string `json:"message"`
}

type ajvReport struct {
	Draft        string   `json:"draft"`
	Warnings     []string `json:"warnings"`
	CompileError string   `json:"compileError"`
	Results      []struct {
		Name   string     `json:"name"`
		Valid  bool       `json:"valid"`
		Errors []ajvError `json:"errors"`
	} `json:"results"`
	Matches []bool `json:"matches"`
}

// ajv, the validator of yaml-language-server, compiles the schema in strict mode with the draft
// the schema declares, accepts what `nika check` accepts (the LANGUAGE.md examples, the checker's
// accepted fixtures, the escaped `\${{` in every literal position) and refuses an unescaped `${{`
// in a literal position where the checker does, at the same place. Its regex dialect is
// ECMA-262 with the u flag, not Go's: the patterns must mean the same in both, and the
// placeholder pattern is also run on every short string over the characters that matter.
func TestWorkflowSchemaAjvStrict(t *testing.T) {
	node, ajvDir := schemaDocNeedAjv(t)
	type ajvCase struct {
		Name string `json:"name"`
		Data any    `json:"data"`
	}
	var cases []ajvCase
	want := map[string]string{} // case name → "" (valid) or the instance location it is refused at
	add := func(name, src, at string) {
		cases = append(cases, ajvCase{Name: name, Data: schemaDocInstance(t, src)})
		want[name] = at
	}
	examples, err := filepath.Glob("testdata/schemadoc/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no LANGUAGE.md examples in testdata/schemadoc (%v)", err)
	}
	for _, f := range examples {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		add("example/"+filepath.Base(f), string(src), "")
	}
	for _, c := range schemaDocLiteralsAccepted {
		add("literal/"+c.name, c.src, "")
	}
	for _, c := range schemaDocAccepted(t) {
		add(c.name, c.src, "")
	}
	for _, c := range schemaDocLiteralsRefused {
		add("refused/"+c.name, c.src, c.schemaAt)
	}

	dir := t.TempDir()
	schemaFile, casesFile := filepath.Join(dir, "schema.json"), filepath.Join(dir, "cases.json")
	if err := os.WriteFile(schemaFile, WorkflowSchema(), 0o644); err != nil {
		t.Fatal(err)
	}
	pattern, strs := schemaDocLiteralPattern(t), schemaDocPlaceholderStrings(7)
	raw, err := json.Marshal(map[string]any{"cases": cases, "pattern": pattern, "strings": strs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(casesFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "schemadoc", "ajv-validate.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, ajvDir, schemaFile, casesFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var rep ajvReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("ajv-validate.cjs printed no report (%v):\n%.2000s\n%s", err, stdout.String(), stderr.String())
	}
	if rep.Draft != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("the schema declares %q, want draft 2020-12", rep.Draft)
	}
	if rep.CompileError != "" {
		t.Fatalf("ajv (strict: true) does not compile the schema: %s", rep.CompileError)
	}
	for _, w := range rep.Warnings {
		t.Errorf("ajv (strict: true) warns: %s", w)
	}
	if len(rep.Results) != len(cases) {
		t.Fatalf("ajv answered for %d cases, want %d", len(rep.Results), len(cases))
	}
	if len(rep.Matches) != len(strs) {
		t.Fatalf("ajv matched %d strings, want %d", len(rep.Matches), len(strs))
	}
	bad := 0
	for i, s := range strs {
		if got, want := rep.Matches[i], expr.ContainsPlaceholder(s); got != want && bad < 10 {
			bad++
			t.Errorf("%q: the schema pattern %q says placeholder=%v under ajv, nika check says %v", s, pattern, got, want)
		}
	}
	for _, r := range rep.Results {
		at, ok := want[r.Name]
		switch {
		case !ok:
			t.Errorf("ajv answered for an unknown case %q", r.Name)
		case at == "" && !r.Valid:
			t.Errorf("%s: accepted by nika check, refused by ajv: %+v", r.Name, r.Errors)
		case at != "" && r.Valid:
			t.Errorf("%s: refused by nika check, accepted by ajv", r.Name)
		case at != "":
			found := false
			for _, e := range r.Errors {
				found = found || e.InstancePath == at
			}
			if !found {
				t.Errorf("%s: ajv refuses, but not at %s: %+v", r.Name, at, r.Errors)
			}
		}
	}
}
