package provider

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nikahq/nika/spec/canon"
)

// decode parses JSON the way schemas reach the provider from JSON sources (numbers as json.Number).
func decode(t testing.TB, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test schema %s: %v", text, err)
	}
	return v
}

func canonical(t testing.TB, v any) string {
	t.Helper()
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatalf("canon.Marshal(%#v): %v", v, err)
	}
	return string(b)
}

// TestMinimalInstanceTable covers every row of the S(s) table of LANGUAGE.md §6.3.
func TestMinimalInstanceTable(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		// true, {}, or no constraining keyword
		{"true", `true`, `null`},
		{"false", `false`, `null`},
		{"empty", `{}`, `null`},
		{"annotations only", `{"title":"t","description":"d"}`, `null`},
		{"json null schema", `null`, `null`},

		// const · enum · local $ref
		{"const object", `{"const":{"b":1,"a":[2,"é"]}}`, `{"a":[2,"é"],"b":1}`},
		{"const null", `{"const":null,"type":"string"}`, `null`},
		{"const beats type", `{"type":"string","const":5}`, `5`},
		{"const beats enum", `{"enum":["a"],"const":"c"}`, `"c"`},
		{"enum first", `{"enum":["b","a"]}`, `"b"`},
		{"enum first object", `{"type":"object","enum":[{"k":true},{}]}`, `{"k":true}`},
		{"enum empty ignored", `{"enum":[],"type":"boolean"}`, `false`},
		{"ref defs", `{"$defs":{"n":{"type":"integer","minimum":3}},"$ref":"#/$defs/n"}`, `3`},
		{"ref definitions", `{"definitions":{"s":{"type":"string","format":"uuid"}},"$ref":"#/definitions/s"}`, `"00000000-0000-0000-0000-000000000000"`},
		{"ref nested in property", `{"$defs":{"b":{"type":"boolean"}},"type":"object","required":["x"],"properties":{"x":{"$ref":"#/$defs/b"}}}`, `{"x":false}`},
		{"ref chain", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"const":"end"}},"$ref":"#/$defs/a"}`, `"end"`},
		{"ref pointer escapes", `{"$defs":{"a/b":{"const":1},"c~d":{"const":2}},"type":"array","minItems":2,"prefixItems":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/c~0d"}]}`, `[1,2]`},
		{"ref percent-encoded", `{"$defs":{"a b":{"const":"sp"}},"$ref":"#/$defs/a%20b"}`, `"sp"`},
		{"ref array index", `{"anyOf":[{"$ref":"#/$defs/l/1"}],"$defs":{"l":[{"const":0},{"const":1}]}}`, `1`},
		{"ref anchor", `{"$defs":{"x":{"$anchor":"thing","type":"boolean"}},"$ref":"#thing"}`, `false`},
		{"ref root recursion", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, `{}`},
		{"ref embedded resource", `{"$defs":{"r":{"$id":"https://ex/r","$defs":{"v":{"const":"inner"}},"$ref":"#/$defs/v"},"v":{"const":"outer"}},"$ref":"#/$defs/r"}`, `"inner"`},
		{"ref unresolvable ignored", `{"$ref":"#/nope","type":"string"}`, `""`},
		{"ref remote ignored", `{"$ref":"https://example.com/s.json","type":"boolean"}`, `false`},

		// anyOf / oneOf / allOf
		{"anyOf first", `{"anyOf":[{"type":"string","format":"email"},{"type":"integer"}]}`, `"user@example.com"`},
		{"oneOf first", `{"oneOf":[{"type":"integer","minimum":7},{"type":"string"}]}`, `7`},
		{"allOf first", `{"allOf":[{"type":"object","required":["a"]},{"required":["b"]}]}`, `{"a":null}`},
		{"combinator before type", `{"type":"object","anyOf":[{"type":"string"}]}`, `""`},
		{"anyOf before oneOf", `{"oneOf":[{"const":2}],"anyOf":[{"const":1}]}`, `1`},
		{"oneOf before allOf", `{"allOf":[{"const":3}],"oneOf":[{"const":2}]}`, `2`},
		{"empty anyOf ignored", `{"anyOf":[],"type":"boolean"}`, `false`},

		// type list
		{"type list null first", `{"type":["null","integer"],"minimum":4}`, `4`},
		{"type list string", `{"type":["string","null"],"minLength":2}`, `"xx"`},
		{"type list all null", `{"type":["null"]}`, `null`},
		{"type list object", `{"type":["object","array"],"required":["k"]}`, `{"k":null}`},

		// no type
		{"untyped properties", `{"properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":""}`},
		{"untyped properties no required", `{"properties":{"a":{"type":"string"}}}`, `{}`},
		{"untyped required", `{"required":["a"]}`, `{"a":null}`},
		{"untyped items", `{"items":{"type":"integer"},"minItems":2}`, `[0,0]`},
		{"untyped minItems only", `{"minItems":2}`, `null`},
		{"untyped minLength only", `{"minLength":2}`, `null`},
		{"untyped minimum only", `{"minimum":2}`, `null`},

		// object
		{"object empty", `{"type":"object"}`, `{}`},
		{"object required only", `{"type":"object","required":["b","a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}}}`, `{"a":0,"b":""}`},
		{"object additionalProperties schema", `{"type":"object","required":["a","b"],"properties":{"a":{"type":"boolean"}},"additionalProperties":{"type":"integer","minimum":1}}`, `{"a":false,"b":1}`},
		{"object additionalProperties false", `{"type":"object","required":["b"],"additionalProperties":false}`, `{"b":null}`},
		{"object additionalProperties true", `{"type":"object","required":["b"],"additionalProperties":true}`, `{"b":null}`},
		{"object no schema for key", `{"type":"object","required":["z"],"properties":{"a":{"type":"string"}}}`, `{"z":null}`},
		{"object duplicate required", `{"type":"object","required":["a","a"],"properties":{"a":{"const":1}}}`, `{"a":1}`},
		{"object nested", `{"type":"object","required":["o"],"properties":{"o":{"type":"object","required":["d"],"properties":{"d":{"type":"string","format":"date"}}}}}`, `{"o":{"d":"1970-01-01"}}`},

		// array
		{"array empty", `{"type":"array","items":{"type":"string"}}`, `[]`},
		{"array minItems items", `{"type":"array","minItems":2,"items":{"type":"boolean"}}`, `[false,false]`},
		{"array prefixItems then items", `{"type":"array","minItems":3,"prefixItems":[{"type":"string"},{"type":"boolean"}],"items":{"type":"integer"}}`, `["",false,0]`},
		{"array prefixItems beyond minItems", `{"type":"array","minItems":1,"prefixItems":[{"const":"a"},{"const":"b"}]}`, `["a"]`},
		{"array no items", `{"type":"array","minItems":2}`, `[null,null]`},
		{"array minItems zero", `{"type":"array","minItems":0,"items":{"const":1}}`, `[]`},
		{"array draft tuple items", `{"type":"array","minItems":3,"items":[{"const":1},{"const":2}]}`, `[1,2,null]`},

		// string
		{"string plain", `{"type":"string"}`, `""`},
		{"format date-time", `{"type":"string","format":"date-time"}`, `"1970-01-01T00:00:00Z"`},
		{"format date", `{"type":"string","format":"date"}`, `"1970-01-01"`},
		{"format time", `{"type":"string","format":"time"}`, `"00:00:00Z"`},
		{"format email", `{"type":"string","format":"email"}`, `"user@example.com"`},
		{"format uri", `{"type":"string","format":"uri"}`, `"https://example.com"`},
		{"format url", `{"type":"string","format":"url"}`, `"https://example.com"`},
		{"format uuid", `{"type":"string","format":"uuid"}`, `"00000000-0000-0000-0000-000000000000"`},
		{"format hostname", `{"type":"string","format":"hostname"}`, `"example.com"`},
		{"format ipv4", `{"type":"string","format":"ipv4"}`, `"0.0.0.0"`},
		{"format ipv6", `{"type":"string","format":"ipv6"}`, `"::"`},
		{"format unknown", `{"type":"string","format":"regex"}`, `""`},
		{"minLength pads x", `{"type":"string","minLength":3}`, `"xxx"`},
		{"minLength pads format", `{"type":"string","format":"date","minLength":12}`, `"1970-01-01xx"`},
		{"minLength shorter than format", `{"type":"string","format":"ipv6","minLength":1}`, `"::"`},
		{"minLength fraction rounds up", `{"type":"string","minLength":2.5}`, `"xxx"`},
		{"minLength negative", `{"type":"string","minLength":-2}`, `""`},

		// integer
		{"integer zero", `{"type":"integer"}`, `0`},
		{"integer minimum positive", `{"type":"integer","minimum":5}`, `5`},
		{"integer minimum negative", `{"type":"integer","minimum":-5}`, `0`},
		{"integer minimum zero", `{"type":"integer","minimum":0}`, `0`},
		{"integer exclusiveMinimum", `{"type":"integer","exclusiveMinimum":5}`, `6`},
		{"integer exclusiveMinimum zero", `{"type":"integer","exclusiveMinimum":0}`, `1`},
		{"integer exclusiveMinimum negative", `{"type":"integer","exclusiveMinimum":-1}`, `0`},
		{"integer maximum negative", `{"type":"integer","maximum":-3}`, `-3`},
		{"integer maximum positive", `{"type":"integer","maximum":3}`, `0`},
		{"integer exclusiveMaximum negative", `{"type":"integer","exclusiveMaximum":-3}`, `-4`},
		{"integer exclusiveMaximum zero", `{"type":"integer","exclusiveMaximum":0}`, `-1`},
		{"integer min and max", `{"type":"integer","minimum":2,"maximum":10}`, `2`},
		{"integer both lower bounds", `{"type":"integer","minimum":3,"exclusiveMinimum":5}`, `6`},
		{"integer both upper bounds", `{"type":"integer","maximum":-9,"exclusiveMaximum":-2}`, `-9`},
		{"integer fractional minimum", `{"type":"integer","minimum":2.5}`, `3`},
		{"integer fractional exclusiveMinimum", `{"type":"integer","exclusiveMinimum":2.5}`, `3`},
		{"integer fractional maximum", `{"type":"integer","maximum":-2.5}`, `-3`},
		{"integer fractional exclusiveMaximum", `{"type":"integer","exclusiveMaximum":-2.5}`, `-3`},
		{"integer integral float minimum", `{"type":"integer","minimum":4.0}`, `4`},
		{"integer beyond float precision", `{"type":"integer","minimum":9007199254740993}`, `9007199254740993`},

		// number
		{"number zero", `{"type":"number"}`, `0`},
		{"number minimum", `{"type":"number","minimum":0.5}`, `0.5`},
		{"number exclusiveMinimum", `{"type":"number","exclusiveMinimum":0.5}`, `1.5`},
		{"number exclusiveMinimum + 1 above 0", `{"type":"number","exclusiveMinimum":-0.5}`, `0.5`},
		{"number exclusiveMinimum negative", `{"type":"number","exclusiveMinimum":-3}`, `0`},
		{"number maximum", `{"type":"number","maximum":-2.25}`, `-2.25`},
		{"number exclusiveMaximum", `{"type":"number","exclusiveMaximum":-0.5}`, `-1.5`},
		{"number maximum positive", `{"type":"number","maximum":7}`, `0`},

		// boolean, null
		{"boolean", `{"type":"boolean"}`, `false`},
		{"null", `{"type":"null"}`, `null`},
		{"unknown type", `{"type":"decimal"}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := canonical(t, MinimalInstance(decode(t, tt.schema)))
			if got != tt.want {
				t.Errorf("S(%s) = %s, want %s", tt.schema, got, tt.want)
			}
			// The raw form decodes to the same schema.
			if raw := canonical(t, MinimalInstance(json.RawMessage(tt.schema))); raw != tt.want {
				t.Errorf("S(raw %s) = %s, want %s", tt.schema, raw, tt.want)
			}
		})
	}
}

// TestMinimalInstanceGoValues feeds schemas in the nika value model (int, float64, []any) and Go
// shorthands ([]string) as a YAML workflow or Go code would.
func TestMinimalInstanceGoValues(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []string{"n", "f", "s", "l"},
		"properties": map[string]any{
			"n": map[string]any{"type": "integer", "exclusiveMinimum": 41},
			"f": map[string]any{"type": "number", "minimum": 1.25},
			"s": map[string]any{"type": []string{"null", "string"}, "minLength": int64(2)},
			"l": map[string]any{"type": "array", "minItems": uint8(1), "items": map[string]any{"enum": []string{"x", "y"}}},
		},
	}
	got := canonical(t, MinimalInstance(schema))
	want := `{"f":1.25,"l":["x"],"n":42,"s":"xx"}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if n, ok := MinimalInstance(map[string]any{"type": "integer", "minimum": 3}).(int); !ok || n != 3 {
		t.Errorf("integer instance is not int 3")
	}
}

func TestMinimalInstanceDoesNotAlias(t *testing.T) {
	schema := decode(t, `{"const":{"a":[1]}}`)
	inst := MinimalInstance(schema).(map[string]any)
	inst["a"].([]any)[0] = "changed"
	inst["b"] = true
	if got := canonical(t, schema); got != `{"const":{"a":[1]}}` {
		t.Errorf("schema modified through its instance: %s", got)
	}
}

func TestMinimalInstanceBounded(t *testing.T) {
	tests := []struct{ name, schema string }{
		{"self ref required", `{"type":"object","required":["a"],"properties":{"a":{"$ref":"#"}}}`},
		{"ref loop", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`},
		{"bare self ref", `{"$ref":"#"}`},
		{"huge minItems", `{"type":"array","minItems":1000000000000}`},
		{"huge nested minItems", `{"type":"array","minItems":100000,"items":{"type":"array","minItems":100000,"items":{"type":"string","minLength":100000}}}`},
		{"huge minLength", `{"type":"string","minLength":1e300}`},
		{"array of self", `{"type":"array","minItems":50000,"items":{"$ref":"#"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(canonical(t, MinimalInstance(decode(t, tt.schema))))
			if len(b) > 8<<20 {
				t.Errorf("instance is %d bytes", len(b))
			}
		})
	}
	s := MinimalInstance(decode(t, `{"type":"string","minLength":1e300}`)).(string)
	if utf8.RuneCountInString(s) != instanceMaxBytes || strings.Trim(s, "x") != "" {
		t.Errorf("padding: %d runes", utf8.RuneCountInString(s))
	}
	if !bytes.Equal([]byte(canonical(t, MinimalInstance(json.RawMessage(`{not json`)))), []byte("null")) {
		t.Errorf("undecodable raw schema is not null")
	}
}

func TestMinimalInstanceStable(t *testing.T) {
	schema := decode(t, `{"type":"object","required":["z","a","m"],"properties":{"z":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/p"}},"a":{"anyOf":[{"$ref":"#a1"}]},"m":{"type":"number","exclusiveMaximum":-1}},"$defs":{"p":{"type":"object","required":["q"],"properties":{"q":{"type":"string","format":"hostname"}}},"x":{"$anchor":"a1","enum":[3]}}}`)
	want := `{"a":3,"m":-2,"z":[{"q":"example.com"},{"q":"example.com"}]}`
	for range 20 {
		if got := canonical(t, MinimalInstance(schema)); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}
