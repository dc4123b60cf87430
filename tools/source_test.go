package tools

import (
	"reflect"
	"testing"
)

func TestCanAdmitServer(t *testing.T) {
	cases := []struct {
		globs  []string
		server string
		want   bool
	}{
		{[]string{"mcp:**"}, "fs", true},
		{[]string{"**"}, "fs", true},
		{[]string{"mcp:fs/*"}, "fs", true},
		{[]string{"mcp:fs/read_*"}, "fs", true},
		{[]string{"mcp:fs/read_text_file"}, "fs", true},
		{[]string{"mcp:fs/*"}, "fsx", false},
		{[]string{"mcp:fs/*"}, "f", false},
		{[]string{"mcp:*/search"}, "github", true},
		{[]string{"mcp:git*/*"}, "github", true},
		{[]string{"mcp:git*/*"}, "gitlab", true},
		{[]string{"mcp:git*/*"}, "fs", false},
		{[]string{"mcp:*"}, "fs", false}, // `*` never crosses `/`
		{[]string{"*"}, "fs", false},
		{[]string{"nika:*", "nika:read"}, "fs", false},
		{[]string{"!mcp:fs/*"}, "fs", false},
		{[]string{"mcp:**", "!mcp:fs/**"}, "fs", true}, // listed; ToolAllowed then drops its tools
		{[]string{"nika:*", "mcp:gh/*"}, "gh", true},
		{[]string{"m**"}, "fs", true},
		{[]string{"mcp:f**"}, "fs", true},
		{[]string{"mcp:f**"}, "gh", false},
		{nil, "fs", false},
	}
	for _, tc := range cases {
		if got := CanAdmitServer(tc.globs, tc.server); got != tc.want {
			t.Errorf("CanAdmitServer(%q, %q) = %v, want %v", tc.globs, tc.server, got, tc.want)
		}
	}
}

func TestJSONValue(t *testing.T) {
	in := map[string]any{"n": float64(3), "f": 2.5, "b": []byte("hi"), "l": []any{float64(1), "x", nil, true}, "m": map[string]any{"k": int64(7)}}
	got, err := JSONValue(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 3, "f": 2.5, "b": "aGk=", "l": []any{1, "x", nil, true}, "m": map[string]any{"k": 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSONValue = %#v, want %#v", got, want)
	}
}

func TestCanAdmitMCP(t *testing.T) {
	cases := []struct {
		globs []string
		want  bool
	}{
		{[]string{"mcp:fs/*"}, true},
		{[]string{"**"}, true},
		{[]string{"m*:x/y"}, true},
		{[]string{"nika:*", "*"}, false},
		{[]string{"!mcp:**"}, false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := CanAdmitMCP(tc.globs); got != tc.want {
			t.Errorf("CanAdmitMCP(%q) = %v, want %v", tc.globs, got, tc.want)
		}
	}
}
