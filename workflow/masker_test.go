package workflow

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/nikahq/nika/spec/canon"
)

// The secret a"b\c, JSON-escaped once and twice, by hand (the example of the issue).
func TestMaskerDoublyEscaped(t *testing.T) {
	m := NewMasker(map[string]any{"S": `a"b\c`})
	for in, want := range map[string]string{
		`raw a"b\c`:                       `raw ••••••`,
		`once "a\"b\\c"`:                  `once "••••••"`,
		`twice "a\\\"b\\\\c"`:             `twice "••••••"`,
		`{"k":"{\"s\":\"a\\\"b\\\\c\"}"}`: `{"k":"{\"s\":\"••••••\"}"}`,
	} {
		if got := m(in); got != want {
			t.Errorf("mask(%s) = %s, want %s", in, got, want)
		}
	}
}

// encoders are the JSON string encoders a secret can go through in a run: canonical JSON (the
// report, the trace, stdout), encoding/json with and without HTML escaping (tools, providers), and
// gojq (nika:jq's tojson).
var encoders = map[string]func(t *testing.T, v any) string{
	"canon": func(t *testing.T, v any) string {
		b, err := canon.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	},
	"json": func(t *testing.T, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	},
	"json-no-html": func(t *testing.T, v any) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(buf.String(), "\n")
	},
	"gojq": func(t *testing.T, v any) string {
		q, err := gojq.Parse("tojson")
		if err != nil {
			t.Fatal(err)
		}
		out, ok := q.Run(v).Next()
		if !ok {
			t.Fatal("tojson: no output")
		}
		if err, isErr := out.(error); isErr {
			t.Fatal(err)
		}
		return out.(string)
	},
}

// Whatever the encoders of the two levels, masking JSON inside JSON gives exactly what encoding the
// masked value would have given (U+2022 is never escaped): no part of the secret is left, nothing
// else is touched. The secrets hold every character an encoder escapes in its own way.
func TestMaskerEscapedByEveryEncoder(t *testing.T) {
	secrets := []string{`a"b\c`, "p<w>&d", "del\x7fx", "line\u2028sep\u2029x", "ctl\x01\b\f\n\r\tx", "plain-token"}
	for _, secret := range secrets {
		m := NewMasker(map[string]any{"S": secret})
		value := func(s string) any { return map[string]any{"user": "u", "token": "Bearer " + s, "n": 1.5} }
		for n1, e1 := range encoders {
			if got, want := m(e1(t, value(secret))), e1(t, value(Mask)); got != want {
				t.Errorf("%q once by %s: mask gives %s, want %s", secret, n1, got, want)
			}
			for n2, e2 := range encoders {
				in := e2(t, map[string]any{"json": e1(t, value(secret))})
				want := e2(t, map[string]any{"json": e1(t, value(Mask))})
				if got := m(in); got != want {
					t.Errorf("%q by %s inside %s: mask gives %s, want %s", secret, n1, n2, got, want)
				}
			}
		}
	}
}

// Occurrences that overlap, of two secrets or of one, are one mask: nothing of either is left.
// Adjacent ones are two.
func TestMaskerOverlaps(t *testing.T) {
	m := NewMasker(map[string]any{"A": "hunter22", "B": "22abc", "C": "abab", "D": "secret", "E": "secret-long"})
	for in, want := range map[string]string{
		"x hunter22abc y":    "x •••••• y", // the replacer left "abc", the tail of B
		"hunter22 22abc":     "•••••• ••••••",
		"ababab":             "••••••", // the replacer left "ab"
		"secretsecret":       "••••••••••••",
		"secret-long secret": "•••••• ••••••",
		"no secret in here":  "no •••••• in here",
		"nothing to hide":    "nothing to hide",
		"":                   "",
	} {
		if got := m(in); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
}
