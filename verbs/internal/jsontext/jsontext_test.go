package jsontext

import (
	"reflect"
	"testing"
)

func TestCandidates(t *testing.T) {
	tests := []struct {
		reply string
		want  []string
	}{
		{`  {"a":1}  `, []string{`{"a":1}`}},
		{"Here:\n```json\n{\"a\": 1}\n```\nbye", []string{"Here:\n```json\n{\"a\": 1}\n```\nbye", `{"a": 1}`}},
		{"~~~\n[1, 2]\n~~~", []string{"~~~\n[1, 2]\n~~~", "[1, 2]"}},
		{"````\n```\n{}\n````", []string{"````\n```\n{}\n````", "```\n{}", "{}"}},
		{"inline ```{\"x\":true}``` block", []string{"inline ```{\"x\":true}``` block", `{"x":true}`}},
		{`text {"s": "a } \" ] {", "n": [1, {"m": 2}]} tail {"z":0}`, []string{`text {"s": "a } \" ] {", "n": [1, {"m": 2}]} tail {"z":0}`, `{"s": "a } \" ] {", "n": [1, {"m": 2}]}`}},
		{"first [x] then {\"a\":1}", []string{"first [x] then {\"a\":1}", "[x]"}},
		{"mismatched {]", []string{"mismatched {]"}},
		{"unclosed {\"a\": 1", []string{"unclosed {\"a\": 1"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Candidates(tt.reply); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("candidates(%q) = %q, want %q", tt.reply, got, tt.want)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want any
		ok   bool
	}{
		{`{"i": 1, "f": 1.5, "e": 1e3, "big": 99999999999999999999, "l": [true, null, "s"]}`,
			map[string]any{"i": 1, "f": 1.5, "e": 1000.0, "big": 1e20, "l": []any{true, nil, "s"}}, true},
		{`42`, 42, true},
		{`"s"`, "s", true},
		{`{"a":1} {"b":2}`, nil, false},
		{`{"a":1} trailing`, nil, false},
		{`{"a":}`, nil, false},
		{`1e400`, nil, false},
	}
	for _, tt := range tests {
		got, err := Decode(tt.in)
		if (err == nil) != tt.ok || (tt.ok && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("decode(%q) = %#v, %v", tt.in, got, err)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"},
		{"aéb", 3, "aé"},
		{"日本", 4, "日"},
	} {
		if got := Excerpt(tt.s, tt.n); got != tt.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
