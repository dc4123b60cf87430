package tools

import (
	"reflect"
	"strings"
	"testing"
)

// Values written as YAML read back, through the same parser nika reads YAML with, as the same
// value.
func TestYAMLRoundTrip(t *testing.T) {
	strs := []string{
		"", " ", "a", "true", "True", "FALSE", "yes", "No", "on", "null", "Null", "~", "1", "-1", "+1",
		"1.5", "1e3", ".inf", "-.inf", ".nan", "0x1F", "0o17", "0777", "1_000", "2026-06-13",
		"2026-06-13T09:30:00Z", "a: b", "a:b", "a #b", "#x", "- x", "-x", "? x", "[x]", "{x}", "x,y",
		"&a", "*a", "!tag", "|", ">", "%x", "@x", "`x`", "'x'", "\"x\"", "x ", " x", "\tx", "x\ty",
		"a\nb", "a\nb\n", "a\nb\n\n", "\na", "a\n\nb", "a\n \nb", " a\nb", "a\r\nb", "\u0000x",
		"\u0085", "\u2028", "\ufeffx", "é", "日本語", "emoji 😀", "back\\slash", "ends with \\",
		"key: value\n- item\n# comment\n", "---", "...", "--- x", "a\n---\nb", "=", "<<",
		"12:30", "1:2:3", "0.", ".5", "1.", "+.inf", "Infinity", "NaN", "y", "n", "Y",
	}
	var list []any
	obj := map[string]any{}
	for _, s := range strs {
		list = append(list, s)
		obj[s] = s
	}
	values := []any{
		list,
		obj,
		map[string]any{"nested": []any{obj, []any{list, []any{}}, map[string]any{}}, "n": []any{0, -5, 1 << 62, 0.1, -2.5e-7, true, false, nil}},
		"top-level multi\nline\n",
		nil,
	}
	for i, v := range values {
		text := renderYAML(v)
		back, err := parseYAML(text)
		if err != nil {
			t.Fatalf("value %d: the YAML does not parse back: %v\n%s", i, err, text)
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("value %d: read back differently\n%s", i, text)
			if l, ok := v.([]any); ok {
				bl, _ := back.([]any)
				for j := range l {
					if j < len(bl) && !reflect.DeepEqual(l[j], bl[j]) {
						t.Errorf("  %q became %#v", l[j], bl[j])
					}
				}
			}
		}
	}
}

func TestYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("a")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(": &a")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(" [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a")
			b.WriteString(string(rune('0' + i - 1)))
		}
		b.WriteString("]\n")
	}
	_, err := exec(t, Call{Name: "nika:convert", Args: map[string]any{"input": b.String(), "from": "yaml", "to": "json"}})
	if codeOf(t, err) != "NIKA-BUILTIN-CONVERT-001" {
		t.Fatalf("err = %v", err)
	}
}

// parseYAML is spec's materialiser under this package's budget: an alias to no anchor is an
// error (a workflow file reads it as null); TestYAMLAliasBomb covers the limit.
func TestParseYAMLLimits(t *testing.T) {
	if _, err := parseYAML("a: *nowhere\n"); err == nil || err.Error() != "an alias refers to an unknown anchor" {
		t.Errorf("dangling alias: %v", err)
	}
	if v, err := parseYAML("a: &x [1]\nb: *x\n"); err != nil || !reflect.DeepEqual(v, map[string]any{"a": []any{1}, "b": []any{1}}) {
		t.Errorf("alias: %#v, %v", v, err)
	}
	deep := strings.Repeat("[", 120) + strings.Repeat("]", 120) // within the parser's flow depth
	if _, err := parseYAML(deep); err != nil {
		t.Errorf("120 levels: %v", err)
	}
}
