package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec/expr"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The JSON Schema is an editor aid (yaml-language-server underlines what it refuses), so it must
// never refuse a file that `nika check` accepts. The tests here hold it to the checker on the
// placeholder rule of the literal positions (LANGUAGE.md §4.1): a `${{` there is NIKA-VAR-005
// unless a backslash stands right before it (`\${{`, expr.ContainsPlaceholder), and the schema's
// literalString pattern must say the same.

// schemaDocCase is one workflow given to both the checker and the schema.
type schemaDocCase struct {
	name string
	src  string
	opts CheckOptions
	// For a refused case: where the checker reports its NIKA-VAR-005 (Finding.Path) and where
	// the schema refuses (the JSON pointer of the instance).
	checkPath, schemaAt string
}

// schemaDocLiteralHead starts a valid file, so that each case adds one literal position.
const schemaDocLiteralHead = "nika: v1\nworkflow: lit\nmodel: mock/echo\n"

const schemaDocLiteralTask = "tasks:\n  - id: a\n    infer: { prompt: \"hi\" }\n"

// schemaDocLiteralsAccepted puts the escaped `\${{` in every literal position the checker scans
// for placeholders, plus the edge cases of its rule (two backslashes, a `$` or `{{` alone, a
// mapping key, the plain-text description) and of the literal patterns (a tool glob with a `*`
// namespace, a model name with a space that is not one of the checker's). Each is a file
// `nika check` accepts.
var schemaDocLiteralsAccepted = []schemaDocCase{
	{name: "envelope model", src: "nika: v1\nworkflow: lit\nmodel: 'openai/\\${{x}}'\n" + schemaDocLiteralTask},
	{name: "infer model", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer: { prompt: hi, model: 'ollama/\\${{x}}' }\n"},
	{name: "agent model and tools", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    agent: { prompt: hi, model: 'openai/\\${{x}}', tools: ['nika:\\${{x}}', 'mcp:\\${{x}}/*'] }\n"},
	{name: "env value", src: schemaDocLiteralHead + "env:\n  A: 'Hello \\${{ not an expr }}'\n" + schemaDocLiteralTask},
	{name: "env value at the start", src: schemaDocLiteralHead + "env:\n  A: \\${{ at the start }}\n" + schemaDocLiteralTask},
	{name: "env value nested", src: schemaDocLiteralHead + "env:\n  A: ['\\${{ x }}', { k: [ '\\${{ y }}' ] }]\n" + schemaDocLiteralTask},
	{name: "env value double-quoted", src: schemaDocLiteralHead + "env:\n  A: \"\\\\${{ x }}\"\n" + schemaDocLiteralTask},
	{name: "env value two backslashes", src: schemaDocLiteralHead + "env:\n  A: 'a \\\\${{ b'\n" + schemaDocLiteralTask},
	{name: "env value dollar without braces", src: schemaDocLiteralHead + "env:\n  A: '$HOME ${ x } ${x}} {{ y }} $ {{'\n" + schemaDocLiteralTask},
	{name: "env key", src: schemaDocLiteralHead + "env:\n  A: { '${{ a key }}': 1 }\n" + schemaDocLiteralTask},
	{name: "untyped var default", src: schemaDocLiteralHead + "vars:\n  v: '\\${{ x }}'\n  l: ['\\${{ y }}']\n" + schemaDocLiteralTask},
	{name: "typed var", src: schemaDocLiteralHead + "vars:\n  v: { type: string, default: '\\${{ x }}', description: 'see \\${{' }\n" + schemaDocLiteralTask},
	{name: "secret key and path", src: schemaDocLiteralHead + "secrets:\n  A: { source: env, key: '\\${{A}}' }\n  B: { source: file, path: './\\${{b}}' }\n" + schemaDocLiteralTask},
	{name: "permits", src: schemaDocLiteralHead + "permits:\n  fs: { read: ['src/\\${{x}}/**'], write: ['out/\\${{y}}'] }\n  exec: ['\\${{x}}']\n  tools: ['nika:\\${{x}}']\n" + schemaDocLiteralTask},
	{name: "jq binding", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer: { prompt: hi }\n    output: { x: '\"\\\\${{\"', y: '.a # \\${{ a comment' }\n"},
	{name: "infer schema", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer:\n      prompt: hi\n      schema: { type: object, description: '\\${{ x }}', properties: { s: { const: '\\${{' } } }\n"},
	{name: "agent schema", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    agent: { prompt: hi, schema: { type: string, enum: ['\\${{ a }}'] } }\n"},
	{name: "description is plain text", src: schemaDocLiteralHead + "description: 'A ${{ is plain text here, even unclosed'\n" + schemaDocLiteralTask},
	{name: "tool glob with a star namespace", src: schemaDocLiteralHead + "permits:\n  tools: ['n*:read', '!*', '!!*']\n" + schemaDocLiteralTask},
	{name: "model name with a non-breaking space", src: "nika: v1\nworkflow: lit\nmodel: \"openai/gpt\u00a0x\"\n" + schemaDocLiteralTask},
}

// schemaDocLiteralsRefused puts an unescaped `${{` in the literal positions: each is
// NIKA-VAR-005 for the checker and refused by the schema at the same place.
var schemaDocLiteralsRefused = []schemaDocCase{
	{name: "envelope model", src: "nika: v1\nworkflow: lit\nmodel: 'openai/${{vars.m}}'\n" + schemaDocLiteralTask, checkPath: "model", schemaAt: "/model"},
	{name: "infer model", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer: { prompt: hi, model: 'ollama/${{vars.m}}' }\n", checkPath: "tasks[0].infer.model", schemaAt: "/tasks/0/infer/model"},
	{name: "agent model", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    agent: { prompt: hi, model: 'openai/${{vars.m}}' }\n", checkPath: "tasks[0].agent.model", schemaAt: "/tasks/0/agent/model"},
	{name: "agent tool glob", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    agent: { prompt: hi, tools: ['nika:${{vars.t}}'] }\n", checkPath: "tasks[0].agent.tools[0]", schemaAt: "/tasks/0/agent/tools/0"},
	{name: "env value", src: schemaDocLiteralHead + "env:\n  A: 'x ${{ vars.a }}'\n" + schemaDocLiteralTask, checkPath: "env.A", schemaAt: "/env/A"},
	{name: "env value nested", src: schemaDocLiteralHead + "env:\n  A: [ok, { k: ['${{ vars.a }}'] }]\n" + schemaDocLiteralTask, checkPath: "env.A[1].k[0]", schemaAt: "/env/A/1/k/0"},
	{name: "env value after an escaped one", src: schemaDocLiteralHead + "env:\n  A: '\\${{ ok }} ${{ vars.a }}'\n" + schemaDocLiteralTask, checkPath: "env.A", schemaAt: "/env/A"},
	{name: "env value after a dollar", src: schemaDocLiteralHead + "env:\n  A: '$${{ vars.a }}'\n" + schemaDocLiteralTask, checkPath: "env.A", schemaAt: "/env/A"},
	{name: "env value on a second line", src: schemaDocLiteralHead + "env:\n  A: |\n    one \\${{\n    ${{ vars.a }}\n" + schemaDocLiteralTask, checkPath: "env.A", schemaAt: "/env/A"},
	{name: "untyped var default", src: schemaDocLiteralHead + "vars:\n  v: ['${{ env.A }}']\n" + schemaDocLiteralTask, checkPath: "vars.v[0]", schemaAt: "/vars/v/0"},
	{name: "typed var default", src: schemaDocLiteralHead + "vars:\n  v: { type: string, default: '${{ env.A }}' }\n" + schemaDocLiteralTask, checkPath: "vars.v.default", schemaAt: "/vars/v/default"},
	{name: "typed var description", src: schemaDocLiteralHead + "vars:\n  v: { type: string, description: 'see ${{ x }}' }\n" + schemaDocLiteralTask, checkPath: "vars.v.description", schemaAt: "/vars/v/description"},
	{name: "secret key", src: schemaDocLiteralHead + "secrets:\n  A: { source: env, key: '${{ vars.k }}' }\n" + schemaDocLiteralTask, checkPath: "secrets.A.key", schemaAt: "/secrets/A/key"},
	{name: "secret path", src: schemaDocLiteralHead + "secrets:\n  A: { source: file, path: './${{ vars.k }}' }\n" + schemaDocLiteralTask, checkPath: "secrets.A.path", schemaAt: "/secrets/A/path"},
	{name: "permits fs read", src: schemaDocLiteralHead + "permits:\n  fs: { read: ['${{ vars.dir }}/**'] }\n" + schemaDocLiteralTask, checkPath: "permits.fs.read[0]", schemaAt: "/permits/fs/read/0"},
	{name: "permits net http", src: schemaDocLiteralHead + "permits:\n  net: { http: ['${{ vars.host }}'] }\n" + schemaDocLiteralTask, checkPath: "permits.net.http[0]", schemaAt: "/permits/net/http/0"},
	{name: "permits exec", src: schemaDocLiteralHead + "permits:\n  exec: ['${{ vars.prog }}']\n" + schemaDocLiteralTask, checkPath: "permits.exec[0]", schemaAt: "/permits/exec/0"},
	{name: "permits tools", src: schemaDocLiteralHead + "permits:\n  tools: ['nika:${{ vars.t }}']\n" + schemaDocLiteralTask, checkPath: "permits.tools[0]", schemaAt: "/permits/tools/0"},
	{name: "jq binding", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer: { prompt: hi }\n    output: { x: '.a # ${{ vars.a }}' }\n", checkPath: "tasks[0].output.x", schemaAt: "/tasks/0/output/x"},
	{name: "infer schema", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    infer:\n      prompt: hi\n      schema: { type: object, properties: { s: { const: '${{ vars.a }}' } } }\n", checkPath: "tasks[0].infer.schema.properties.s.const", schemaAt: "/tasks/0/infer/schema/properties/s/const"},
	{name: "agent schema", src: schemaDocLiteralHead + "tasks:\n  - id: a\n    agent: { prompt: hi, schema: { type: string, enum: ['${{ vars.a }}'] } }\n", checkPath: "tasks[0].agent.schema.enum[0]", schemaAt: "/tasks/0/agent/schema/enum/0"},
}

// schemaDocErrors returns the error findings of `nika check` on one file.
func schemaDocErrors(c schemaDocCase) []Finding {
	var out []Finding
	for _, f := range CheckSource(c.name, []byte(c.src), c.opts).Findings {
		if f.IsError() {
			out = append(out, f)
		}
	}
	return out
}

// schemaDocAccepted lists the files of the checker's fixture corpus (testdata/fixtures, read
// here, kept by the checker's tests) that `nika check` accepts, with the options fixtures_test.go
// derives from their names.
func schemaDocAccepted(t *testing.T) []schemaDocCase {
	t.Helper()
	files, err := filepath.Glob("testdata/fixtures/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []schemaDocCase
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, ".out") || strings.HasSuffix(base, ".todo") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := schemaDocCase{name: "fixtures/" + base, src: string(src)}
		if strings.HasPrefix(base, "mcp-") {
			c.opts.MCPServers = []string{"github"}
		}
		if strings.HasPrefix(base, "model-flag-") {
			c.opts.Model = "ollama/qwen3:8b"
		}
		if len(schemaDocErrors(c)) == 0 {
			out = append(out, c)
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d accepted files in testdata/fixtures: is the corpus there?", len(out))
	}
	return out
}

// schemaDocInstance is the value an editor validates: the YAML document, without the byte
// order mark that a YAML parser skips and the decoder of this test does not.
func schemaDocInstance(t *testing.T, src string) any {
	t.Helper()
	return schemaDocDecodeYAML(t, []byte(strings.TrimPrefix(src, "\uFEFF")))
}

// schemaDocLeaves lists the instance locations (JSON pointers) of the innermost causes of a
// validation error: where an editor underlines.
func schemaDocLeaves(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			var b strings.Builder
			for _, tok := range e.InstanceLocation {
				b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
			}
			out = append(out, b.String())
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
}

// schemaDocLiteralPattern is the pattern of $defs/literalString: a `${{` that opens a placeholder.
func schemaDocLiteralPattern(t *testing.T) string {
	t.Helper()
	var doc struct {
		Defs map[string]struct {
			Not struct {
				Pattern string `json:"pattern"`
			} `json:"not"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(WorkflowSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	pat := doc.Defs["literalString"].Not.Pattern
	if pat == "" {
		t.Fatal("$defs/literalString has no not.pattern")
	}
	return pat
}

// schemaDocPlaceholderStrings lists every string of up to n characters over the characters that
// matter to the placeholder rule: `$`, `{`, the backslash, and two others ("a", and a line break,
// which `.` would not match).
func schemaDocPlaceholderStrings(n int) []string {
	out := []string{""}
	for from, to := 0, 1; n > 0; n-- {
		for _, s := range out[from:to] {
			for _, c := range []string{"$", "{", "\\", "a", "\n"} {
				out = append(out, s+c)
			}
		}
		from, to = to, len(out)
	}
	return out
}

// The pattern of $defs/literalString matches exactly the strings in which the checker finds a
// placeholder (expr.ContainsPlaceholder, behind every NIKA-VAR-005 of a literal position), with
// Go's regexp as jsonschema/v6 runs it: every string of up to 7 characters over the characters
// that matter. TestWorkflowSchemaAjvStrict does the same with ajv's ECMA-262 regexps.
func TestWorkflowSchemaLiteralPatternIsTheCheckersRule(t *testing.T) {
	pat := schemaDocLiteralPattern(t)
	re, err := regexp.Compile(pat)
	if err != nil {
		t.Fatalf("$defs/literalString: %v", err)
	}
	bad := 0
	for _, s := range schemaDocPlaceholderStrings(7) {
		if got, want := re.MatchString(s), expr.ContainsPlaceholder(s); got != want && bad < 10 {
			bad++
			t.Errorf("%q: the schema pattern %q says placeholder=%v, nika check says %v", s, pat, got, want)
		}
	}
}

// Every file `nika check` accepts is accepted by the schema: the checker's whole corpus of
// accepted fixtures, and one file per literal position holding the escaped `\${{`.
func TestWorkflowSchemaAcceptsWhatCheckAccepts(t *testing.T) {
	sch := schemaDocCompile(t)
	for _, c := range schemaDocLiteralsAccepted {
		t.Run("literal/"+c.name, func(t *testing.T) {
			if errs := schemaDocErrors(c); len(errs) > 0 {
				t.Fatalf("nika check refuses the case itself: %v\n%s", errs, c.src)
			}
			if err := sch.Validate(schemaDocInstance(t, c.src)); err != nil {
				t.Errorf("accepted by nika check, refused by the schema:\n%s\n%v", c.src, err)
			}
		})
	}
	for _, c := range schemaDocAccepted(t) {
		t.Run(c.name, func(t *testing.T) {
			if err := sch.Validate(schemaDocInstance(t, c.src)); err != nil {
				t.Errorf("accepted by nika check, refused by the schema:\n%v", err)
			}
		})
	}
}

// An unescaped `${{` in a literal position is NIKA-VAR-005 for the checker and refused by the
// schema, at the same place.
func TestWorkflowSchemaRefusesPlaceholdersInLiterals(t *testing.T) {
	sch := schemaDocCompile(t)
	for _, c := range schemaDocLiteralsRefused {
		t.Run(c.name, func(t *testing.T) {
			errs := schemaDocErrors(c)
			var at []string
			found := false
			for _, f := range errs {
				at = append(at, f.Code+" at "+f.Path)
				found = found || (f.Code == CodeVarStatic && f.Path == c.checkPath)
			}
			if !found {
				t.Errorf("nika check: want %s at %s, got %v\n%s", CodeVarStatic, c.checkPath, at, c.src)
			}
			err := sch.Validate(schemaDocInstance(t, c.src))
			if err == nil {
				t.Fatalf("refused by nika check, accepted by the schema:\n%s", c.src)
			}
			if leaves := schemaDocLeaves(err); !contains(leaves, c.schemaAt) {
				t.Errorf("the schema refuses at %v, want %s:\n%v", leaves, c.schemaAt, err)
			}
		})
	}
}

// Every name listed in a `required` is declared in the `properties` beside it, as ajv's
// strictRequired asks (the schema must compile under ajv's strict mode for the editors that
// use it; TestWorkflowSchemaAjvStrict runs ajv itself).
func TestWorkflowSchemaRequiredDeclared(t *testing.T) {
	var doc any
	if err := json.Unmarshal(WorkflowSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if req, ok := x["required"].([]any); ok {
				props, _ := x["properties"].(map[string]any)
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						bad = append(bad, path+": "+r.(string))
					}
				}
			}
			for k, e := range x {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range x {
				walk(path+"/"+itoa(i), e)
			}
		}
	}
	walk("#", doc)
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("required but not declared in the properties beside it (ajv strictRequired):\n%s", strings.Join(bad, "\n"))
	}
}
