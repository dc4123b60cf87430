package tools

import (
	"math"
	"reflect"
	"testing"
)

func TestConvert(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		// to json
		{"value to json", map[string]any{"input": map[string]any{"b": 1, "a": []any{"<x>", nil, 1.5}}, "to": "json"}, `{"a":["<x>",null,1.5],"b":1}`, ""},
		{"json to json canonicalizes", map[string]any{"input": "{ \"b\": 1.0, \"a\": 12345678901234567890 }", "from": "json", "to": "json"}, `{"a":12345678901234567000,"b":1}`, ""},
		{"yaml to json", map[string]any{"input": "b: [1, 0x1F, 0o17]\na: {c: ~, d: 'x'}\ne: 1.5\nf: yes\n", "from": "yaml", "to": "json"},
			`{"a":{"c":null,"d":"x"},"b":[1,31,15],"e":1.5,"f":"yes"}`, ""},
		{"toml to json", map[string]any{"input": "title = \"x\"\nwhen = 1979-05-27T07:32:00Z\nday = 1979-05-27\n[owner]\nage = 42\n", "from": "toml", "to": "json"},
			`{"day":"1979-05-27","owner":{"age":42},"title":"x","when":"1979-05-27T07:32:00Z"}`, ""},
		{"csv to json with header", map[string]any{"input": "name,age\nann,3\n\"b, c\",\"4\"\"\"\n", "from": "csv", "to": "json"},
			`[{"age":"3","name":"ann"},{"age":"4\"","name":"b, c"}]`, ""},
		{"csv to json without header", map[string]any{"input": "a,b\r\n1,2\r\n", "from": "csv", "to": "json", "has_header": false}, `[["a","b"],["1","2"]]`, ""},
		{"csv header only", map[string]any{"input": "a,b\n", "from": "csv", "to": "json"}, `[]`, ""},
		{"empty csv", map[string]any{"input": "", "from": "csv", "to": "json"}, `[]`, ""},
		{"csv with bom", map[string]any{"input": "\uFEFFa\n1\n", "from": "csv", "to": "json"}, `[{"a":"1"}]`, ""},
		{"bytes input with from", map[string]any{"input": []byte(`[1]`), "from": "json", "to": "json"}, `[1]`, ""},
		{"bytes value", map[string]any{"input": []any{[]byte("hi")}, "to": "json"}, `["aGk="]`, ""},
		// to yaml
		{"value to yaml", map[string]any{"input": map[string]any{"b": []any{1, "two", map[string]any{"y": true, "x": nil}}, "a": map[string]any{}, "c": []any{}}, "to": "yaml"},
			"a: {}\nb:\n  - 1\n  - two\n  - x: null\n    \"y\": true\nc: []\n", ""}, // y is a YAML 1.1 boolean: quoted
		{"scalar to yaml", map[string]any{"input": 3, "to": "yaml"}, "3\n", ""},
		{"json to yaml quoting", map[string]any{"input": `{"k":["true","1","","a: b","- x","#c"," lead","ok text"]}`, "from": "json", "to": "yaml"},
			"k:\n  - \"true\"\n  - \"1\"\n  - \"\"\n  - \"a: b\"\n  - \"- x\"\n  - \"#c\"\n  - \" lead\"\n  - ok text\n", ""},
		{"multi-line to yaml", map[string]any{"input": map[string]any{"text": "line 1\n  line 2\n\nline 4\n", "raw": "a\nb"}, "to": "yaml"},
			"raw: |-\n  a\n  b\ntext: |\n  line 1\n    line 2\n\n  line 4\n", ""},
		{"nested lists to yaml", map[string]any{"input": []any{[]any{1, 2}, []any{}, []any{[]any{3}}}, "to": "yaml"},
			"- - 1\n  - 2\n- []\n- - - 3\n", ""},
		{"floats to yaml", map[string]any{"input": []any{1.5, 1e21, math.Inf(1), math.NaN()}, "to": "yaml"}, "- 1.5\n- 1e+21\n- .inf\n- .nan\n", ""},
		// to toml
		{"value to toml", map[string]any{"input": map[string]any{"z": 1, "a": "s", "t": map[string]any{"y": 1.5, "x": []any{1, 2}}}, "to": "toml"},
			"a = 's'\nz = 1\n\n[t]\nx = [1, 2]\ny = 1.5\n", ""},
		{"json to toml", map[string]any{"input": `{"servers":[{"name":"a"},{"name":"b"}]}`, "from": "json", "to": "toml"},
			"[[servers]]\nname = 'a'\n\n[[servers]]\nname = 'b'\n", ""},
		{"toml root not an object", map[string]any{"input": []any{1}, "to": "toml"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		{"toml null", map[string]any{"input": map[string]any{"a": map[string]any{"b": nil}}, "to": "toml"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		// to csv
		{"objects to csv", map[string]any{"input": []any{map[string]any{"b": 1, "a": "x,y"}, map[string]any{"c": true, "a": nil}}, "to": "csv"},
			"a,b,c\n\"x,y\",1,\n,,true\n", ""},
		{"objects to csv without header", map[string]any{"input": []any{map[string]any{"b": 1, "a": "x"}}, "to": "csv", "has_header": false}, "x,1\n", ""},
		{"lists to csv", map[string]any{"input": []any{[]any{"a", "b\nc"}, []any{1.5, []byte("hi")}, []any{""}}, "to": "csv"}, "a,\"b\nc\"\n1.5,aGk=\n\"\"\n", ""},
		{"empty list to csv", map[string]any{"input": []any{}, "to": "csv"}, "", ""},
		{"nested cell", map[string]any{"input": []any{map[string]any{"a": []any{1}}}, "to": "csv"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		{"mixed rows", map[string]any{"input": []any{map[string]any{"a": 1}, []any{1}}, "to": "csv"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		{"scalar rows", map[string]any{"input": []any{1, 2}, "to": "csv"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		{"csv of an object", map[string]any{"input": map[string]any{"a": 1}, "to": "csv"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		{"NaN to json", map[string]any{"input": []any{math.NaN()}, "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-002"},
		// parse failures
		{"bad json", map[string]any{"input": "{", "from": "json", "to": "yaml"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"json with trailing data", map[string]any{"input": "{} {}", "from": "json", "to": "yaml"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"empty json", map[string]any{"input": " ", "from": "json", "to": "yaml"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"bad yaml", map[string]any{"input": "a: [", "from": "yaml", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"two yaml documents", map[string]any{"input": "a: 1\n---\nb: 2\n", "from": "yaml", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"yaml non-string key", map[string]any{"input": "1: a\n", "from": "yaml", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"bad toml", map[string]any{"input": "a = = 1", "from": "toml", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"ragged csv", map[string]any{"input": "a,b\n1\n", "from": "csv", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"bad csv quote", map[string]any{"input": "a\n\"x\n", "from": "csv", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"duplicate csv header", map[string]any{"input": "a,a\n1,2\n", "from": "csv", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		{"invalid utf-8 bytes", map[string]any{"input": []byte{0xff}, "from": "json", "to": "json"}, nil, "NIKA-BUILTIN-CONVERT-001"},
		// contract
		{"string without from", map[string]any{"input": "a: 1", "to": "json"}, nil, "NIKA-INVOKE-002"},
		{"value with from", map[string]any{"input": map[string]any{}, "from": "json", "to": "yaml"}, nil, "NIKA-INVOKE-002"},
		{"missing to", map[string]any{"input": map[string]any{}}, nil, "NIKA-INVOKE-002"},
		{"bad to", map[string]any{"input": map[string]any{}, "to": "xml"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:convert", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output =\n%v\nwant\n%v", out, c.out)
			}
		})
	}
}

// CSV and TOML written from values read back as the same values.
func TestCSVAndTOMLRoundTrip(t *testing.T) {
	rows := []any{
		map[string]any{"a": "plain", "b": "with,comma", "c": "with \"quotes\"", "d": "multi\nline", "e": " lead"},
		map[string]any{"a": "", "b": "\n\n", "c": "x", "d": "é", "e": "\\."},
	}
	text, err := renderCSV(rows, true)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseCSV(text, true)
	if err != nil || !reflect.DeepEqual(back, rows) {
		t.Errorf("csv round trip: %#v, %v\n%s", back, err, text)
	}
	doc := map[string]any{"s": "x'y\"z\n", "i": 3, "f": 1.5, "b": true, "l": []any{1, "a", []any{true}},
		"t": map[string]any{"k e y": "v", "arr": []any{map[string]any{"x": 1}, map[string]any{"x": 2}}}}
	text, err = renderTOML(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err = parseTOML(text)
	if err != nil || !reflect.DeepEqual(back, doc) {
		t.Errorf("toml round trip: %#v, %v\n%s", back, err, text)
	}
}
