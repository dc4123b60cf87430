package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// doc decodes JSON text the way nika's JSON reader does (json.Number for numbers).
func doc(t testing.TB, text string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", text, err)
	}
	return v
}

func mustCompile(t testing.TB, text string) *Schema {
	t.Helper()
	s, err := Compile(doc(t, text))
	if err != nil {
		t.Fatalf("Compile(%s): %v", text, err)
	}
	return s
}

func TestCompileRefs(t *testing.T) {
	refused := []struct {
		text, pointer string
	}{
		{`{"$ref": "http://example.com/s.json"}`, "/$ref"},
		{`{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, "/$ref"},
		{`{"$ref": "other-file.json"}`, "/$ref"},
		{`{"$ref": "other.json#/x"}`, "/$ref"},
		{`{"properties": {"a": {"items": {"$ref": "file:///etc/passwd"}}}}`, "/properties/a/items/$ref"},
		{`{"$defs": {"x": {"$dynamicRef": "meta.json#meta"}}}`, "/$defs/x/$dynamicRef"},
		{`{"properties": {"const": {"$ref": "a.json"}}}`, "/properties/const/$ref"},
		{`{"properties": {"a~b/c": {"$ref": "a.json"}}}`, "/properties/a~0b~1c/$ref"},
		{`{"anyOf": [{"type": "string"}, {"$ref": "x.json"}]}`, "/anyOf/1/$ref"},
		{`{"x-custom": {"$ref": "x.json"}}`, "/x-custom/$ref"}, // conservative
	}
	for _, tt := range refused {
		_, err := Compile(doc(t, tt.text))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%s): want *Error, got %v", tt.text, err)
			continue
		}
		if e.Pointer != tt.pointer {
			t.Errorf("Compile(%s): pointer %q, want %q (%s)", tt.text, e.Pointer, tt.pointer, e.Message)
		}
		if strings.Contains(e.Message, "\n") || !strings.Contains(e.Message, "not a fragment") {
			t.Errorf("Compile(%s): message %q", tt.text, e.Message)
		}
	}

	accepted := []string{
		`{"$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x"}`,
		`{"type": "object", "properties": {"child": {"$ref": "#"}}}`,
		`{"$defs": {"x": {"$anchor": "xa", "type": "string"}}, "properties": {"a": {"$ref": "#xa"}}}`,
		`{"$id": "https://example.com/root.json", "$defs": {"x": {"type": "integer"}}, "$ref": "#/$defs/x"}`,
		`{"const": {"$ref": "http://not-a-ref"}, "enum": [{"$ref": "x"}], "default": {"$ref": "y"}, "examples": [{"$ref": "z"}]}`,
		`{"properties": {"$ref": {"type": "string"}}}`,
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {}}, "$ref": "#/definitions/a"}`,
		`true`,
		`false`,
		`{}`,
	}
	for _, text := range accepted {
		if _, err := Compile(doc(t, text)); err != nil {
			t.Errorf("Compile(%s): %v", text, err)
		}
	}
	s := mustCompile(t, `{"$defs": {"x": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/x"}}}`)
	if vs := s.Validate(map[string]any{"a": 1}); len(vs) != 1 || vs[0].Path != "/a" {
		t.Errorf("local $ref not applied: %v", vs)
	}
}

func TestCompileInvalid(t *testing.T) {
	tests := []struct {
		text, pointer, substr string
	}{
		{`{"type": 12}`, "/type", "invalid schema at /type"},
		{`{"properties": {"a": {"type": "strin"}}}`, "/properties/a/type", "must be one of"},
		{`{"minLength": -1}`, "/minLength", "invalid schema"},
		{`{"required": "a"}`, "/required", "want array"},
		{`"just a string"`, "", "want boolean or object"},
		{`{"pattern": "(?=x)"}`, "/pattern", "regex"},
		{`{"patternProperties": {"(?=x)": {}}}`, "/patternProperties", "invalid propertyName '(?=x)': '(?=x)' is not valid regex"},
		{`{"$ref": "#/$defs/missing"}`, "/$ref", "#/$defs/missing does not exist"},
		{`{"properties": {"a": {"$ref": "#nope"}}}`, "/properties/a/$ref", "nope does not exist"},
		{`{"$schema": "http://example.com/my-meta"}`, "", "cannot load"},
	}
	for _, tt := range tests {
		_, err := Compile(doc(t, tt.text))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%s): want *Error, got %v", tt.text, err)
			continue
		}
		if e.Pointer != tt.pointer || !strings.Contains(e.Message, tt.substr) || strings.ContainsAny(e.Message, "\r\n") {
			t.Errorf("Compile(%s): got pointer %q message %q; want pointer %q containing %q", tt.text, e.Pointer, e.Message, tt.pointer, tt.substr)
		}
	}
}

func TestCompileNumberKinds(t *testing.T) {
	for _, d := range []any{
		map[string]any{"type": "array", "maxItems": 2},
		map[string]any{"type": "array", "maxItems": int64(2)},
		map[string]any{"type": "array", "maxItems": 2.0},
		map[string]any{"type": "array", "maxItems": json.Number("2")},
	} {
		s, err := Compile(d)
		if err != nil {
			t.Fatalf("Compile(%#v): %v", d, err)
		}
		if vs := s.Validate([]any{1, 2, 3}); len(vs) != 1 {
			t.Errorf("%#v: want one violation, got %v", d, vs)
		}
		if vs := s.Validate([]any{1, 2}); vs != nil {
			t.Errorf("%#v: want valid, got %v", d, vs)
		}
	}
}

func TestFormatNotAsserted(t *testing.T) {
	for _, text := range []string{
		`{"type": "string", "format": "email"}`,
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "date-time"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "format": "email"}`,
		`{"$schema": "http://json-schema.org/draft-04/schema#", "format": "ipv4"}`,
		`{"format": "no-such-format"}`,
	} {
		s := mustCompile(t, text)
		if vs := s.Validate("x"); vs != nil {
			t.Errorf("%s: format asserted: %v", text, vs)
		}
	}
}

func TestValidate(t *testing.T) {
	s := mustCompile(t, `{
		"type": "object",
		"properties": {
			"title": {"type": "string", "minLength": 3},
			"tags":  {"type": "array", "items": {"type": "string"}},
			"n":     {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 3}]},
			"a/b":   {"type": "boolean"},
			"blob":  {"type": "string", "maxLength": 4},
			"ratio": {"type": "number", "maximum": 1},
			"count": {"type": "integer"}
		},
		"required": ["title"],
		"additionalProperties": false
	}`)

	valid := map[string]any{"title": "abc", "tags": []any{"x"}, "n": 5, "a/b": true, "blob": []byte("hi"), "ratio": 0.5, "count": 3}
	if vs := s.Validate(valid); vs != nil {
		t.Fatalf("valid instance: %v", vs)
	}
	if vs := s.Validate(map[string]any{"title": "abc", "count": 3.0}); vs != nil {
		t.Errorf("3.0 is an integer in JSON Schema: %v", vs)
	}

	got := s.Validate(map[string]any{
		"tags":  []any{"x", 2, true},
		"n":     2,
		"a/b":   "no",
		"extra": 1,
		"blob":  []byte("hello"), // "aGVsbG8=" is 8 characters
		"ratio": 1.5,
		"count": 1.5,
	})
	want := []Violation{
		{"", "additional properties 'extra' not allowed"},
		{"", "missing property 'title'"},
		{"/a~1b", "got string, want boolean"},
		{"/blob", "maxLength: got 8, want 4"},
		{"/count", "got number, want integer"},
		{"/n", "'anyOf' failed: got number, want string; minimum: got 2, want 3"},
		{"/ratio", "maximum: got 1.5, want 1"},
		{"/tags/1", "got number, want string"},
		{"/tags/2", "got boolean, want string"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations:\n got %#v\nwant %#v", got, want)
	}
	for _, v := range got {
		if strings.ContainsAny(v.Message, "\r\n") {
			t.Errorf("multi-line message %q", v.Message)
		}
	}

	// Nested branch failures keep their location.
	s = mustCompile(t, `{"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": "array"}]}`)
	got = s.Validate(map[string]any{"a": 1})
	want = []Violation{{"", "'oneOf' failed, none matched: at /a: got number, want string; got object, want array"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("oneOf:\n got %#v\nwant %#v", got, want)
	}

	// Messages that quote values with newlines stay on one line.
	s = mustCompile(t, `{"const": "a\nb"}`)
	got = s.Validate("c\nd")
	if len(got) != 1 || strings.ContainsAny(got[0].Message, "\r\n") {
		t.Errorf("const: %#v", got)
	}

	// Unsupported Go types are reported, not panicking.
	s = mustCompile(t, `{}`)
	got = s.Validate(map[string]any{"a": []any{1, struct{}{}}, "b": 2})
	want = []Violation{{"/a/1", "value of Go type struct {} is not a JSON value"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unsupported type: %#v", got)
	}
}

func TestValidateDoesNotModifyInput(t *testing.T) {
	s := mustCompile(t, `{"type": "object"}`)
	in := map[string]any{"b": []any{[]byte("x")}}
	s.Validate(in)
	if _, ok := in["b"].([]any)[0].([]byte); !ok {
		t.Fatalf("input modified: %#v", in)
	}
}

func TestShapes(t *testing.T) {
	for _, d := range []any{StringShape, StructuredExecShape, ArrayOf(StringShape), ArrayOf(StructuredExecShape)} {
		if _, err := Compile(d); err != nil {
			t.Errorf("Compile(%#v): %v", d, err)
		}
	}
	s, _ := Compile(StructuredExecShape)
	if vs := s.Validate(map[string]any{"stdout": "", "stderr": "", "exit_code": 0}); vs != nil {
		t.Errorf("structured exec: %v", vs)
	}
	want := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	if !reflect.DeepEqual(ArrayOf(StringShape), want) {
		t.Errorf("ArrayOf: %#v", ArrayOf(StringShape))
	}
}

func TestWalk(t *testing.T) {
	person := `{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"age": {"type": "integer"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"pets": {"type": "array", "items": {"type": "object", "properties": {"kind": {"type": "string"}}, "additionalProperties": false}},
			"meta": {"type": "object"},
			"either": {"type": ["string", "array"], "items": {"type": "object", "properties": {"x": {"type": "boolean"}}}},
			"maybe": {"type": ["object", "null"], "properties": {"v": {"type": "string"}}, "additionalProperties": false},
			"choice": {"anyOf": [{"type": "string"}, {"type": "object"}]},
			"ref": {"$ref": "#/$defs/r"},
			"untyped": {"properties": {"s": {"type": "string"}}},
			"list": {"items": {"type": "string"}},
			"tuple": {"type": "array", "prefixItems": [{"type": "string"}]},
			"numbered": {"type": "object", "properties": {"0": {"type": "string"}}},
			"typo": {"type": "strin"},
			"open": true,
			"closed": false,
			"ap": {"type": "object", "additionalProperties": {"type": "integer"}}
		},
		"additionalProperties": false,
		"$defs": {"r": {"type": "string"}}
	}`
	d := doc(t, person)
	tests := []struct {
		path   string // dot-separated
		bad    int
		reason string // substring
	}{
		{"", -1, ""},
		{"name", -1, ""},
		{"name.first", 1, "'name' is a string; it has no field 'first'"},
		{"name.0", 1, "'name' is a string; it cannot be indexed with [0]"},
		{"age.x", 1, "'age' is an integer; it has no field 'x'"},
		{"unknown", 0, "the value has no field 'unknown' (additionalProperties is false; known: age, ap, choice"},
		{"0", 0, "the value is an object; it cannot be indexed with [0]"},
		{"tags.0", -1, ""},
		{"tags.-1", -1, ""},
		{"tags.0.x", 2, "'tags[0]' is a string; it has no field 'x'"},
		{"tags.length", 1, "'tags' is an array; it has no field 'length'"},
		{"pets.3.kind", -1, ""},
		{"pets.3.kind.x", 3, "'pets[3].kind' is a string"},
		{"pets.3.owner", 2, "'pets[3]' has no field 'owner'"},
		{"meta.anything.deep", -1, ""},
		{"meta.0", 1, "'meta' is an object; it cannot be indexed with [0]"},
		{"either.0.x", -1, ""},
		{"either.0.y", -1, ""},
		{"either.0.x.z", 3, "'either[0].x' is a boolean; it has no field 'z'"},
		{"either.f", 1, "'either' is a string or an array; it has no field 'f'"},
		{"maybe.v", -1, ""},
		{"maybe.w", -1, ""}, // null accepts
		{"choice.a.b", -1, ""},
		{"ref.a", -1, ""},
		{"untyped.s", -1, ""},
		{"untyped.s.t", 2, "'untyped.s' is a string"},
		{"untyped.other.t", -1, ""},
		{"list.0.x", 2, "'list[0]' is a string"},
		{"tuple.0.x", -1, ""},
		{"numbered.0", -1, ""},
		{"numbered.0.x", 2, "'numbered[0]' is a string"},
		{"numbered.1", 1, "cannot be indexed with [1]"},
		{"typo.x", -1, ""},
		{"open.x.y", -1, ""},
		{"closed.x", -1, ""},
		{"ap.k", -1, ""},
		{"ap.k.x", 2, "'ap.k' is an integer"},
	}
	for _, tt := range tests {
		var path []string
		if tt.path != "" {
			path = strings.Split(tt.path, ".")
		}
		bad, reason := Walk(d, path)
		if bad != tt.bad || !strings.Contains(reason, tt.reason) || (tt.bad < 0) != (reason == "") {
			t.Errorf("Walk(%q) = %d, %q; want %d, %q", tt.path, bad, reason, tt.bad, tt.reason)
		}
	}

	shapes := []struct {
		doc    any
		path   string
		bad    int
		reason string
	}{
		{StringShape, "x", 0, "the value is a string; it has no field 'x'"},
		{StringShape, "0", 0, "the value is a string; it cannot be indexed with [0]"},
		{StructuredExecShape, "stdout", -1, ""},
		{StructuredExecShape, "exit_code", -1, ""},
		{StructuredExecShape, "status", 0, "known: exit_code, stderr, stdout"},
		{StructuredExecShape, "stdout.x", 1, "'stdout' is a string"},
		{ArrayOf(StringShape), "0", -1, ""},
		{ArrayOf(StringShape), "x", 0, "the value is an array; it has no field 'x'"},
		{ArrayOf(StructuredExecShape), "2.stderr", -1, ""},
		{ArrayOf(StructuredExecShape), "2.err", 1, "'[2]' has no field 'err'"},
		{nil, "a.b", -1, ""},
		{true, "a.b", -1, ""},
		{map[string]any{"type": []any{"string", "integer"}}, "a", 0, "is a string or an integer"},
		{map[string]any{"type": []any{"string", "object"}, "additionalProperties": false}, "a", 0, "is a string or an object; it has no field 'a' (as an object: additionalProperties is false)"},
		{map[string]any{"type": "object", "additionalProperties": false}, "a", 0, "no properties are declared"},
		{map[string]any{"type": "object", "patternProperties": map[string]any{"^a": true}, "additionalProperties": false}, "a", -1, ""},
		{map[string]any{"type": "array", "items": []any{map[string]any{"type": "string"}}}, "0.x", -1, ""},
		{map[string]any{"type": 12}, "a", -1, ""},
		{map[string]any{"type": []any{}}, "a", -1, ""},
	}
	for _, tt := range shapes {
		bad, reason := Walk(tt.doc, strings.Split(tt.path, "."))
		if bad != tt.bad || !strings.Contains(reason, tt.reason) || (tt.bad < 0) != (reason == "") {
			t.Errorf("Walk(%#v, %q) = %d, %q; want %d, %q", tt.doc, tt.path, bad, reason, tt.bad, tt.reason)
		}
	}
}

func TestWalkAllocations(t *testing.T) {
	d := doc(t, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}}}}}}`)
	path := []string{"a", "0", "b"}
	if n := testing.AllocsPerRun(100, func() { Walk(d, path) }); n != 0 {
		t.Errorf("Walk allocates %v times on an accepted path", n)
	}
}

func BenchmarkCompileSmall(b *testing.B) {
	d := doc(b, `{"type":"object","properties":{"title":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"score":{"type":"number","minimum":0}},"required":["title"],"additionalProperties":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	d := doc(b, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}}}}}}`)
	path := []string{"a", "0", "b"}
	b.ReportAllocs()
	for b.Loop() {
		Walk(d, path)
	}
}

func TestConcurrentValidate(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				if vs := s.Validate(map[string]any{"a": 1, "b": 2}); len(vs) != 2 {
					t.Errorf("got %v", vs)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}
