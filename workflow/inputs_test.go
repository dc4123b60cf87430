package workflow

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nikahq/nika/spec"
)

func compileSrc(t *testing.T, src string) *Workflow {
	t.Helper()
	a := spec.CheckSource("t.nika.yaml", []byte(src), spec.CheckOptions{})
	if !a.Valid() {
		t.Fatalf("invalid: %v", a.Findings)
	}
	w, err := Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const varsSrc = `nika: v1
workflow: v
vars:
  name: "world"
  count: 3
  ratio: 0.5
  flag: false
  nothing: null
  list: { type: array, default: [1] }
  obj: { type: object }
  n: { type: integer, required: true }
  num: { type: number, default: 1 }
  s: { type: string }
  b: { type: boolean, default: true }
tasks:
  - id: a
    exec: { command: ["true"] }
`

func TestResolveVars(t *testing.T) {
	w := compileSrc(t, varsSrc)
	got, err := ResolveVars(w, map[string]string{
		"n": "42", "count": "7", "ratio": "1e2", "flag": "true", "nothing": "verbatim text",
		"list": `[1, 2.5, "x"]`, "obj": `{"a": {"b": 1}}`, "num": "2", "s": "  spaced ",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "world", "count": 7, "ratio": 100.0, "flag": true, "nothing": "verbatim text",
		"list": []any{1, 2.5, "x"}, "obj": map[string]any{"a": map[string]any{"b": 1}}, "n": 42, "num": 2,
		"s": "  spaced ", "b": true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("vars =\n%#v\nwant\n%#v", got, want)
	}
}

func TestResolveVarsRefusals(t *testing.T) {
	w := compileSrc(t, varsSrc)
	for _, tc := range []struct {
		name     string
		supplied map[string]string
		code     string
	}{
		{"missing required", map[string]string{}, "NIKA-VAR-001"},
		{"undeclared", map[string]string{"n": "1", "nope": "x"}, "NIKA-VAR-001"},
		{"bad integer", map[string]string{"n": "4.2"}, "NIKA-VAR-006"},
		{"bad boolean", map[string]string{"n": "1", "b": "yes"}, "NIKA-VAR-006"},
		{"array not object", map[string]string{"n": "1", "obj": "[1]"}, "NIKA-VAR-006"},
		{"untyped int from text", map[string]string{"n": "1", "count": "many"}, "NIKA-VAR-006"},
		{"number from a string", map[string]string{"n": "1", "num": `"2"`}, "NIKA-VAR-006"},
	} {
		_, err := ResolveVars(w, tc.supplied)
		if err == nil || err.Code != tc.code {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.code)
		}
	}
}

func TestResolveSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("hunter22\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := compileSrc(t, `nika: v1
workflow: s
secrets:
  TOKEN: { source: env, key: MY_TOKEN }
  PW: { source: file, path: pw }
tasks:
  - id: a
    exec: { command: ["true"] }
`)
	env := map[string]string{"MY_TOKEN": "tok-123456"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got, err := ResolveSecrets(w, dir, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if got["TOKEN"] != "tok-123456" || got["PW"] != "hunter22" {
		t.Errorf("secrets = %v", got)
	}
	for name, e := range map[string]map[string]string{"unset": {}, "empty": {"MY_TOKEN": ""}, "short": {"MY_TOKEN": "abc"}} {
		env = e
		if _, err := ResolveSecrets(w, dir, lookup); err == nil || err.Code != "NIKA-VAR-001" || err.Details["secret"] != "TOKEN" {
			t.Errorf("%s: err = %v, want NIKA-VAR-001 for TOKEN", name, err)
		}
	}
	env = map[string]string{"MY_TOKEN": "tok-123456"}
	if _, err := ResolveSecrets(w, t.TempDir(), lookup); err == nil || err.Details["secret"] != "PW" {
		t.Errorf("unreadable file: err = %v", err)
	}
}

func TestMasker(t *testing.T) {
	m := NewMasker(map[string]any{"A": `p"ss\word`, "B": "secret-long", "C": "secret"})
	for in, want := range map[string]string{
		`token p"ss\word here`:   "token •••••• here",
		`json "p\"ss\\word"`:     `json "••••••"`,
		"secret-long and secret": "•••••• and ••••••",
		"nothing to hide":        "nothing to hide",
	} {
		if got := m(in); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
	if NewMasker(nil)("x") != "x" {
		t.Error("an empty masker must be the identity")
	}
}

func TestMaskerHTMLCharacters(t *testing.T) {
	m := NewMasker(map[string]any{"A": `s3cr"et<x>&`})
	for _, in := range []string{`s3cr"et<x>&`, `s3cr\"et<x>&`, `s3cr\"et\u003cx\u003e\u0026`} {
		if got := m("v=" + in); got != "v=••••••" {
			t.Errorf("mask(%q) = %q", in, got)
		}
	}
}
