package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaDocID = "https://nika.dev/schema/workflow-v1.json"

func schemaDocCompile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw := WorkflowSchema()
	if !json.Valid(raw) {
		t.Fatal("workflow.schema.json is not valid JSON")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("decode schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaDocID, doc); err != nil {
		t.Fatalf("add schema: %v", err)
	}
	sch, err := c.Compile(schemaDocID)
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return sch
}

// schemaDocDecodeYAML decodes one YAML document into the value model jsonschema/v6 validates:
// map[string]any, []any, json.Number, float64, string, bool, nil.
func schemaDocDecodeYAML(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	out, err := schemaDocJSONModel(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func schemaDocJSONModel(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ev, err := schemaDocJSONModel(e)
			if err != nil {
				return nil, err
			}
			m[k] = ev
		}
		return m, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("non-string key %v (%T)", k, k)
			}
			ev, err := schemaDocJSONModel(e)
			if err != nil {
				return nil, err
			}
			m[ks] = ev
		}
		return m, nil
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			ev, err := schemaDocJSONModel(e)
			if err != nil {
				return nil, err
			}
			s[i] = ev
		}
		return s, nil
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return x, nil
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	default:
		return nil, fmt.Errorf("unexpected YAML value %v (%T)", v, v)
	}
}

func TestWorkflowSchemaIsACopy(t *testing.T) {
	a := WorkflowSchema()
	a[0] = 'X'
	if b := WorkflowSchema(); b[0] == 'X' {
		t.Fatal("WorkflowSchema returned the embedded slice, not a copy")
	}
}

func TestWorkflowSchemaHeader(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(WorkflowSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     schemaDocID,
		"title":   "nika workflow v1",
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s = %v, want %q", k, doc[k], v)
		}
	}
}

// Every property of every object schema carries a description (directly or through its $ref),
// so that editors can show hover text everywhere.
func TestWorkflowSchemaDescriptions(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(WorkflowSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	defs, _ := doc["$defs"].(map[string]any)
	hasDescription := func(s map[string]any) bool {
		for range 10 {
			if _, ok := s["description"]; ok {
				return true
			}
			ref, _ := s["$ref"].(string)
			name, ok := strings.CutPrefix(ref, "#/$defs/")
			if !ok {
				return false
			}
			s, _ = defs[name].(map[string]any)
		}
		return false
	}
	var missing []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for name, p := range props {
					if p == true {
						continue // declared only, for ajv's strictRequired: see TestWorkflowSchemaRequiredDeclared
					}
					ps, _ := p.(map[string]any)
					if !hasDescription(ps) {
						missing = append(missing, path+"/properties/"+name)
					}
				}
			}
			for k, e := range x {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	walk("#", doc)
	// Properties used only as discriminators inside if/not/shape tests need no text.
	var real []string
	for _, m := range missing {
		if strings.Contains(m, "/if/") || strings.Contains(m, "/not/") || strings.Contains(m, "Shape/") ||
			strings.Contains(m, "/then/") {
			continue
		}
		real = append(real, m)
	}
	sort.Strings(real)
	if len(real) > 0 {
		t.Errorf("properties without a description:\n%s", strings.Join(real, "\n"))
	}
}

func TestWorkflowSchemaLanguageExamples(t *testing.T) {
	sch := schemaDocCompile(t)
	files, err := filepath.Glob("testdata/schemadoc/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("want the 6 examples of LANGUAGE.md §11, found %d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(schemaDocDecodeYAML(t, src)); err != nil {
				t.Errorf("valid example rejected:\n%v", err)
			}
		})
	}
}

const schemaDocBase = `nika: v1
workflow: demo
model: mock/echo
tasks:
  - id: ask
    infer: { prompt: "hello" }
`

func TestWorkflowSchemaValidDocuments(t *testing.T) {
	sch := schemaDocCompile(t)
	docs := map[string]string{
		"minimal": schemaDocBase,
		"typed and untyped vars": schemaDocBase + `vars:
  topic: "Go"
  limit: { type: integer, default: 10, description: "n" }
  must: { type: string, required: true }
  list: [1, 2]
  shape: { a: 1 }
`,
		"secrets": schemaDocBase + `secrets:
  A: { source: env, key: A_TOKEN }
  B: { source: file, path: "./b" }
`,
		"permits": schemaDocBase + `permits:
  fs: { read: ["src/**"], write: [] }
  net: { http: ["localhost:8080"] }
  exec: false
  tools: ["nika:*", "mcp:github/*", "!nika:write", "**"]
`,
		"on_finally and on_error": `nika: v1
workflow: demo
tasks:
  - id: build
    timeout: "1h30m"
    exec: { command: ["make"], capture: structured, env: { CI: "1" } }
    on_error: { recover: "n/a", on_codes: [NIKA-EXEC-001, NIKA-TIMEOUT-001] }
    on_finally:
      - when: ${{ tasks.build.status == 'failure' }}
        timeout: "5s"
        invoke: { tool: nika:log, args: { level: warn, message: "failed" } }
      - exec: { command: "rm -f ./lock" }
`,
		"expressions in numeric fields": `nika: v1
workflow: demo
vars:
  t: 0.5
tasks:
  - id: ask
    infer: { prompt: "x", model: "openrouter/meta-llama/llama-3.3-70b", temperature: "${{ vars.t }}", max_tokens: 100 }
  - id: each
    for_each: [1, 2]
    max_parallel: 1
    fail_fast: false
    retry: { max_attempts: 2, backoff_strategy: fixed, on_codes: [NIKA-VAR-006] }
    invoke: { tool: mcp:github/list_issues }
`,
	}
	for name, src := range docs {
		t.Run(name, func(t *testing.T) {
			if err := sch.Validate(schemaDocDecodeYAML(t, []byte(src))); err != nil {
				t.Errorf("valid document rejected:\n%v", err)
			}
		})
	}
}

func TestWorkflowSchemaInvalidDocuments(t *testing.T) {
	sch := schemaDocCompile(t)
	task := func(lines string) string {
		return "nika: v1\nworkflow: demo\nmodel: mock/echo\ntasks:\n" + lines
	}
	// want is a fragment of the validation error: the instance location, or the offending name.
	docs := map[string]struct{ src, want string }{
		"unknown top-level key":   {schemaDocBase + "flows: []\n", "'flows' not allowed"},
		"engine key":              {schemaDocBase + "max_parallel_tools: 4\n", "'max_parallel_tools' not allowed"},
		"nika v2":                 {strings.Replace(schemaDocBase, "nika: v1", "nika: v2", 1), "'/nika'"},
		"missing tasks":           {"nika: v1\nworkflow: demo\n", "missing property 'tasks'"},
		"empty tasks":             {"nika: v1\nworkflow: demo\ntasks: []\n", "'/tasks'"},
		"bad workflow id":         {strings.Replace(schemaDocBase, "workflow: demo", "workflow: Demo_1", 1), "'/workflow'"},
		"two verbs":               {task("  - id: a\n    infer: { prompt: x }\n    exec: { command: [ls] }\n"), "'/tasks/0'"},
		"no verb":                 {task("  - id: a\n    depends_on: []\n"), "'/tasks/0'"},
		"task without id":         {task("  - infer: { prompt: x }\n"), "missing property 'id'"},
		"bad task id":             {task("  - id: fetch-page\n    infer: { prompt: x }\n"), "'/tasks/0/id'"},
		"retry without max":       {task("  - id: a\n    retry: { backoff_ms: 10 }\n    infer: { prompt: x }\n"), "missing property 'max_attempts'"},
		"retry bad strategy":      {task("  - id: a\n    retry: { max_attempts: 2, backoff_strategy: random }\n    infer: { prompt: x }\n"), "'/tasks/0/retry/backoff_strategy'"},
		"retry on timeout":        {task("  - id: a\n    retry: { max_attempts: 2, on_codes: [NIKA-TIMEOUT-001] }\n    infer: { prompt: x }\n"), "'/tasks/0/retry/on_codes/0'"},
		"timeout number":          {task("  - id: a\n    timeout: 60\n    infer: { prompt: x }\n"), "'/tasks/0/timeout'"},
		"timeout units ascending": {task("  - id: a\n    timeout: \"30m1h\"\n    infer: { prompt: x }\n"), "'/tasks/0/timeout'"},
		"timeout zero":            {task("  - id: a\n    timeout: \"0s\"\n    infer: { prompt: x }\n"), "'/tasks/0/timeout'"},
		"on_error two actions":    {task("  - id: a\n    on_error: { skip: true, recover: 1 }\n    infer: { prompt: x }\n"), "'/tasks/0/on_error'"},
		"max_parallel alone":      {task("  - id: a\n    max_parallel: 2\n    infer: { prompt: x }\n"), "'for_each' required"},
		"invoke done":             {task("  - id: a\n    invoke: { tool: nika:done }\n"), "'/tasks/0/invoke/tool'"},
		"bad tool name":           {task("  - id: a\n    invoke: { tool: \"agent:compose\" }\n"), "'/tasks/0/invoke/tool'"},
		"max_turns range":         {task("  - id: a\n    agent: { prompt: x, max_turns: 5000 }\n"), "'/tasks/0/agent/max_turns'"},
		"reserved binding":        {task("  - id: a\n    infer: { prompt: x }\n    output: { status: \".s\" }\n"), "'status'"},
		"unknown verb field":      {task("  - id: a\n    infer: { prompt: x, promt: y }\n"), "'promt' not allowed"},
		"bad model":               {strings.Replace(schemaDocBase, "model: mock/echo", "model: gpt-4o", 1), "'/model'"},
		"inline secret":           {schemaDocBase + "secrets:\n  A: \"sk-123\"\n", "'/secrets/A'"},
		"vault secret":            {schemaDocBase + "secrets:\n  A: { source: vault, path: kv/app }\n", "'/secrets/A/source'"},
		"required with default":   {schemaDocBase + "vars:\n  n: { type: integer, required: true, default: 1 }\n", "'/vars/n'"},
		"default mismatch":        {schemaDocBase + "vars:\n  n: { type: integer, default: \"ten\" }\n", "'/vars/n/default'"},
		"unknown var type":        {schemaDocBase + "vars:\n  n: { type: int, default: 1 }\n", "'/vars/n/type'"},
		"bad typed output":        {schemaDocBase + "outputs:\n  s: { value: 1, type: float }\n", "'/outputs/s/type'"},
		"permits exec string":     {schemaDocBase + "permits: { exec: \"git\" }\n", "'/permits/exec'"},
		"expression in env":       {schemaDocBase + "env:\n  A: \"${{ vars.x }}\"\n", "'/env/A'"},
	}
	for name, d := range docs {
		t.Run(name, func(t *testing.T) {
			err := sch.Validate(schemaDocDecodeYAML(t, []byte(d.src)))
			if err == nil {
				t.Fatalf("invalid document accepted:\n%s", d.src)
			}
			if !strings.Contains(err.Error(), d.want) {
				t.Errorf("rejected, but not for the expected reason (want %q):\n%v", d.want, err)
			}
		})
	}
}
