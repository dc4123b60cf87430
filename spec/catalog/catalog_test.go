package catalog

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nikahq/nika/spec/internal/codes"
)

// Short names for the builtins' own static codes, for the test tables.
const (
	codeGlob     = codes.BuiltinGlob
	codeGrep     = codes.BuiltinGrepRegexp
	codeJQ       = codes.BuiltinJQCompile
	codeValidate = codes.BuiltinValidateSchema
	codeData     = codes.BuiltinValidateData
	codeDate     = codes.BuiltinDate
)

var update = flag.Bool("update", false, "rewrite testdata/catalog.golden.json")

// render returns the whole catalog as the golden file shows it: sorted keys, indent 2.
func renderCatalog(t *testing.T) []byte {
	t.Helper()
	var entries []map[string]any
	for _, b := range All() {
		entries = append(entries, map[string]any{
			"name":        b.Name,
			"description": b.Description,
			"params":      b.Params,
			"output":      b.Output,
			"floor":       b.Floor,
			"agent_only":  b.AgentOnly,
			"effects":     nonNil(b.Effects),
			"codes":       nonNil(b.Codes),
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestCatalogGolden(t *testing.T) {
	got := renderCatalog(t)
	path := filepath.Join("testdata", "catalog.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./spec/catalog -run TestCatalogGolden -update`)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("catalog differs from %s; review the change and rerun with -update\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

func TestEveryBuiltinOfLanguageSection7(t *testing.T) {
	want := []string{"log", "emit", "assert", "prompt", "done", "wait", "compose", "inspect",
		"read", "write", "edit", "glob", "grep",
		"jq", "json_diff", "validate", "json_merge_patch", "convert", "uuid", "hash", "date",
		"fetch", "notify"}
	var names []string
	for _, w := range want {
		names = append(names, "nika:"+w)
	}
	sort.Strings(names)
	if got := Names(); !slices.Equal(got, names) {
		t.Fatalf("Names() = %v\nwant %v", got, names)
	}
	floor := []string{"log", "emit", "assert", "done", "compose", "wait", "read", "write", "edit",
		"glob", "grep", "jq", "fetch", "validate", "hash", "uuid", "date", "convert"}
	for _, b := range All() {
		short := strings.TrimPrefix(b.Name, "nika:")
		if got, want := b.Floor, slices.Contains(floor, short); got != want {
			t.Errorf("%s: Floor = %v, want %v", b.Name, got, want)
		}
		if got, want := b.AgentOnly, short == "done" || short == "compose"; got != want {
			t.Errorf("%s: AgentOnly = %v, want %v", b.Name, got, want)
		}
	}
}

func TestNamesSortedAndLookup(t *testing.T) {
	names := Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	all := All()
	if len(all) != len(names) {
		t.Fatalf("All() has %d builtins, Names() %d", len(all), len(names))
	}
	nameRE := regexp.MustCompile(`^nika:[a-z][a-z0-9_]*$`)
	for i, b := range all {
		if b.Name != names[i] {
			t.Errorf("All()[%d] = %s, Names()[%d] = %s", i, b.Name, i, names[i])
		}
		if !nameRE.MatchString(b.Name) {
			t.Errorf("bad builtin name %q", b.Name)
		}
		got, ok := Lookup(b.Name)
		if !ok || got != b {
			t.Errorf("Lookup(%q) = %v, %v", b.Name, got, ok)
		}
	}
	for _, unknown := range []string{"", "nika:reed", "read", "nika:READ", "mcp:fs/read", "nika:fs/read"} {
		if b, ok := Lookup(unknown); ok || b != nil {
			t.Errorf("Lookup(%q) = %v, %v; want nil, false", unknown, b, ok)
		}
	}
	// Fresh slices: mutating them does not touch the catalog.
	names[0] = "x"
	all[0] = nil
	if Names()[0] == "x" || All()[0] == nil {
		t.Error("Names/All return the shared slice")
	}
}

func compile(t *testing.T, loc string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", loc, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		t.Fatalf("%s: %v", loc, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("%s does not compile: %v", loc, err)
	}
	return s
}

func TestSchemasCompileAndAreClosedObjects(t *testing.T) {
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) {
			compile(t, "mem:///params.json", b.Params)
			compile(t, "mem:///output.json", b.Output)
			var p map[string]any
			if err := json.Unmarshal(b.Params, &p); err != nil {
				t.Fatal(err)
			}
			if p["type"] != "object" {
				t.Errorf("Params type = %v, want object", p["type"])
			}
			props, ok := p["properties"].(map[string]any)
			if !ok {
				t.Fatalf("Params has no properties")
			}
			if b.AgentOnly {
				return // exact AGENT.md §3.2 bytes, checked by TestAgentDefinitionsAreExact
			}
			if p["additionalProperties"] != false {
				t.Errorf("Params additionalProperties = %v, want false", p["additionalProperties"])
			}
			for name, s := range props {
				if d, _ := s.(map[string]any)["description"].(string); d == "" {
					t.Errorf("property %s has no description", name)
				}
			}
			if req, ok := p["required"].([]any); ok {
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						t.Errorf("required %v is not a property", r)
					}
				}
			}
			for _, raw := range []json.RawMessage{b.Params, b.Output} {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				if got := canonical(v); !bytes.Equal(got, raw) {
					t.Errorf("not canonical JSON:\n%s\nwant\n%s", raw, got)
				}
			}
			if b.Description == "" || strings.Contains(b.Description, "\n") {
				t.Errorf("bad description %q", b.Description)
			}
			for _, code := range b.Codes {
				if !regexp.MustCompile(`^NIKA-BUILTIN-[A-Z_]+-[0-9]{3}$`).MatchString(code) {
					t.Errorf("bad code %q", code)
				}
			}
			for _, e := range b.Effects {
				if e != "fs.read" && e != "fs.write" && e != "net" {
					t.Errorf("bad effect %q", e)
				}
			}
		})
	}
}

func TestAgentDefinitionsAreExact(t *testing.T) {
	done, _ := Lookup("nika:done")
	if done.Description != "Call this when the task is finished. Put the answer in `result` when it is a value; leave `result` out to finish with your last message as the answer." {
		t.Errorf("done description = %q", done.Description)
	}
	if string(done.Params) != `{"type":"object","properties":{"result":{"description":"The final answer, any JSON value."}}}` {
		t.Errorf("done params = %s", done.Params)
	}
	compose, _ := Lookup("nika:compose")
	if compose.Description != "Statically check a draft nika workflow without running it. Returns whether it is valid, its first findings with their NIKA codes, and its planned waves." {
		t.Errorf("compose description = %q", compose.Description)
	}
	if string(compose.Params) != `{"type":"object","properties":{"workflow_yaml":{"type":"string","description":"The complete workflow YAML to check."}},"required":["workflow_yaml"]}` {
		t.Errorf("compose params = %s", compose.Params)
	}
}

func TestEffectsAndCodes(t *testing.T) {
	want := map[string][]string{
		"nika:read": {"fs.read"}, "nika:write": {"fs.write"}, "nika:edit": {"fs.read", "fs.write"},
		"nika:glob": {"fs.read"}, "nika:grep": {"fs.read"}, "nika:fetch": {"net"}, "nika:notify": {"net"},
	}
	for _, b := range All() {
		if !slices.Equal(b.Effects, want[b.Name]) && !(len(b.Effects) == 0 && len(want[b.Name]) == 0) {
			t.Errorf("%s: Effects = %v, want %v", b.Name, b.Effects, want[b.Name])
		}
		if !sort.StringsAreSorted(b.Codes) {
			t.Errorf("%s: Codes not sorted: %v", b.Name, b.Codes)
		}
	}
}

// The builtins' static codes are listed in their Codes.
func TestStaticCodesAreListed(t *testing.T) {
	for name, code := range map[string]string{
		"nika:glob": codeGlob, "nika:grep": codeGrep, "nika:jq": codeJQ, "nika:fetch": codeJQ,
		"nika:validate": codeValidate, "nika:date": codeDate,
	} {
		b, _ := Lookup(name)
		if !slices.Contains(b.Codes, code) {
			t.Errorf("%s: Codes %v lacks %s", name, b.Codes, code)
		}
	}
	b, _ := Lookup("nika:validate")
	if !slices.Contains(b.Codes, codeData) {
		t.Errorf("validate lacks %s", codeData)
	}
}

func TestParamsAccessors(t *testing.T) {
	b, _ := Lookup("nika:edit")
	if got := b.Required(); !slices.Equal(got, []string{"path", "find", "replace"}) {
		t.Errorf("Required() = %v", got)
	}
	if got := b.PropertyNames(); !slices.Equal(got, []string{"count", "find", "path", "replace"}) {
		t.Errorf("PropertyNames() = %v", got)
	}
}
