package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"regexp"
	"testing"
)

func TestJQ(t *testing.T) {
	cases := []struct {
		name  string
		expr  string
		input any
		out   any
		code  string
	}{
		{"identity", ".", map[string]any{"a": 1}, map[string]any{"a": 1}, ""},
		{"map", ".items | map(.n * 2)", map[string]any{"items": []any{map[string]any{"n": 1}, map[string]any{"n": 2.5}}}, []any{2, 5}, ""},
		{"null input", ". == null", nil, true, ""},
		{"bytes input as base64", ".", []byte("hi"), "aGk=", ""},
		{"syntax error", ".[", nil, nil, "NIKA-BUILTIN-JQ-001"},
		{"impure builtin", "now", nil, nil, "NIKA-BUILTIN-JQ-001"},
		{"env", "$ENV", nil, nil, "NIKA-BUILTIN-JQ-001"},
		{"runtime error", `error("bad")`, nil, nil, "NIKA-BUILTIN-JQ-002"},
		{"type error", ".a", 3, nil, "NIKA-BUILTIN-JQ-002"},
		{"no value", "empty", nil, nil, "NIKA-BUILTIN-JQ-002"},
		{"several values", ".[]", []any{1, 2}, nil, "NIKA-BUILTIN-JQ-002"},
		{"empty expression", "", nil, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:jq", Args: map[string]any{"expression": c.expr, "input": c.input}})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
	_, err := exec(t, Call{Name: "nika:jq", Args: map[string]any{"expression": ".[]", "input": []any{1, 2, 3}}})
	if d := details(t, err); d["count"] != 3 {
		t.Errorf("details = %v", d)
	}
}

func TestJQCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := &invocation{call: Call{Name: "nika:jq"}, args: map[string]any{"expression": "[range(100000000)] | length", "input": nil}}
	if _, err := runJQ(ctx, in); codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Errorf("err = %v", err)
	}
}

func TestHash(t *testing.T) {
	const abc256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		{"sha256 default", map[string]any{"content": "abc"}, abc256, ""},
		{"bytes like text", map[string]any{"content": []byte("abc")}, abc256, ""},
		{"sha512", map[string]any{"content": "abc", "algo": "sha512"},
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f", ""},
		{"base64", map[string]any{"content": "abc", "encoding": "base64"}, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=", ""},
		{"empty string", map[string]any{"content": ""}, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		// canonical JSON of the object is {"a":1,"b":[true,null]}
		{"value as canonical JSON", map[string]any{"content": map[string]any{"b": []any{true, nil}, "a": 1}},
			sha256hex(`{"a":1,"b":[true,null]}`), ""},
		{"nested bytes as base64 in canonical JSON", map[string]any{"content": []any{[]byte("hi")}}, sha256hex(`["aGk="]`), ""},
		// the BLAKE3 test vector for "abc"
		{"blake3", map[string]any{"content": "abc", "algo": "blake3"}, "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85", ""},
		{"unknown algo", map[string]any{"content": "abc", "algo": "md5"}, nil, "NIKA-INVOKE-002"},
		{"missing content", map[string]any{}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:hash", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestUUID(t *testing.T) {
	canonical := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	cases := []struct {
		args    map[string]any
		version string
	}{
		{map[string]any{}, "7"},
		{map[string]any{"version": "v7"}, "7"},
		{map[string]any{"version": "v4"}, "4"},
	}
	for _, c := range cases {
		seen := map[string]bool{}
		for range 50 {
			out, err := exec(t, Call{Name: "nika:uuid", Args: c.args})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := out.(string)
			m := canonical.FindStringSubmatch(s)
			if m == nil || m[1] != c.version {
				t.Fatalf("%v: %q is not a lower-case canonical v%s UUID", c.args, s, c.version)
			}
			if seen[s] {
				t.Fatalf("duplicate UUID %s", s)
			}
			seen[s] = true
		}
	}
	if _, err := exec(t, Call{Name: "nika:uuid", Args: map[string]any{"version": "v1"}}); codeOf(t, err) != "NIKA-INVOKE-002" {
		t.Errorf("v1: %v", err)
	}
}

func TestValidate(t *testing.T) {
	person := map[string]any{
		"type":     "object",
		"required": []any{"name", "age"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "minLength": 1},
			"age":  map[string]any{"type": "integer", "minimum": 0},
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"additionalProperties": false,
	}
	valid := map[string]any{"valid": true, "errors": []any{}}
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		{"valid", map[string]any{"data": map[string]any{"name": "a", "age": 3}, "schema": person}, valid, ""},
		{"boolean schema true", map[string]any{"data": 1, "schema": true}, valid, ""},
		{"boolean schema false", map[string]any{"data": 1, "schema": false}, map[string]any{"valid": false, "errors": []any{
			map[string]any{"path": "", "message": "false schema"}}}, ""},
		{"json text", map[string]any{"data": `{"name":"a","age":3}`, "schema": person, "format": "json"}, valid, ""},
		{"yaml text", map[string]any{"data": "name: a\nage: 3\ntags: [x, y]\n", "schema": person, "format": "yaml"}, valid, ""},
		{"yaml bytes", map[string]any{"data": []byte("name: a\nage: 3\n"), "schema": person, "format": "yaml"}, valid, ""},
		{"format leaves non-strings alone", map[string]any{"data": map[string]any{"name": "a", "age": 3}, "schema": person, "format": "json"}, valid, ""},
		{"string without format is a string", map[string]any{"data": `{"name":"a","age":3}`, "schema": person}, map[string]any{"valid": false, "errors": []any{
			map[string]any{"path": "", "message": "got string, want object"}}}, ""},
		{"bad json", map[string]any{"data": `{"name":`, "schema": person, "format": "json"}, nil, "NIKA-BUILTIN-VALIDATE-002"},
		{"bad yaml", map[string]any{"data": "a: [1, 2\n", "schema": person, "format": "yaml"}, nil, "NIKA-BUILTIN-VALIDATE-002"},
		{"duplicate yaml key", map[string]any{"data": "a: 1\na: 2\n", "schema": true, "format": "yaml"}, nil, "NIKA-BUILTIN-VALIDATE-002"},
		{"bad schema", map[string]any{"data": 1, "schema": map[string]any{"type": "nope"}}, nil, "NIKA-BUILTIN-VALIDATE-001"},
		{"external ref", map[string]any{"data": 1, "schema": map[string]any{"$ref": "https://example.com/s.json"}}, nil, "NIKA-BUILTIN-VALIDATE-001"},
		{"schema not an object", map[string]any{"data": 1, "schema": "x"}, nil, "NIKA-INVOKE-002"},
		{"bad format", map[string]any{"data": "x", "schema": true, "format": "xml"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:validate", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

func TestValidateErrorsSorted(t *testing.T) {
	schema := map[string]any{
		"type":       "object",
		"required":   []any{"z"},
		"properties": map[string]any{"b": map[string]any{"type": "string"}, "a": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}},
	}
	out, err := exec(t, Call{Name: "nika:validate", Args: map[string]any{"data": map[string]any{"b": 1, "a": []any{1, "x", 2.5}}, "schema": schema}})
	if err != nil {
		t.Fatal(err)
	}
	m := out.(map[string]any)
	if m["valid"] != false {
		t.Fatalf("valid = %v", m["valid"])
	}
	var paths []string
	for _, e := range m["errors"].([]any) {
		paths = append(paths, e.(map[string]any)["path"].(string))
	}
	want := []string{"", "/a/1", "/a/2", "/b"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q (errors %v)", paths, want, m["errors"])
	}
}
