package catalog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// L is a literal argument, D a dynamic one, T a mixed template (dynamic, known string).
func L(name string, v any) NamedArg { return NamedArg{Name: name, Arg: Arg{Value: v}} }
func D(name string) NamedArg        { return NamedArg{Name: name, Arg: Arg{Dynamic: true}} }
func T(name string) NamedArg {
	return NamedArg{Name: name, Arg: Arg{Dynamic: true, StringTyped: true}}
}

type obj2 = map[string]any
type arr = []any

const (
	c001 = "NIKA-BUILTIN-001"
	t0   = "2026-06-13T09:30:00Z"
)

type checkCase struct {
	name string
	tool string
	args []NamedArg
	want []string // "CODE arg" per issue, in order; arg "-" for the whole args object
	has  []string // substrings of the issues' messages and details
}

func (tc checkCase) run(t *testing.T) {
	t.Helper()
	b, ok := Lookup(tc.tool)
	if !ok {
		t.Fatalf("no builtin %s", tc.tool)
	}
	issues := CheckArgs(b, tc.args)
	var got []string
	var text strings.Builder
	for _, is := range issues {
		arg := is.Arg
		if arg == "" {
			arg = "-"
		}
		got = append(got, is.Code+" "+arg)
		fmt.Fprintf(&text, "%s\n%s\n", is.Message, is.Detail)
		if is.Message == "" || is.Detail == "" || strings.Contains(is.Message, "\n") {
			t.Errorf("issue without a one-line message and a detail: %+v", is)
		}
	}
	if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
		t.Errorf("issues = %q\nwant     %q\n%s", got, tc.want, text.String())
	}
	for _, h := range tc.has {
		if !strings.Contains(text.String(), h) {
			t.Errorf("issues lack %q:\n%s", h, text.String())
		}
	}
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

func TestCheckArgsGeneric(t *testing.T) {
	runCases(t, []checkCase{
		// unknown argument, did you mean
		{"unknown/suggest", "nika:log", []NamedArg{L("mesage", "hi")},
			[]string{c001 + " mesage", c001 + " -"}, []string{"unknown argument `mesage` for `nika:log`", "Rename it to `message` (did you mean `message`?) or remove it.", "missing required argument `message`"}},
		{"unknown/suggest-case", "nika:log", []NamedArg{L("Message", "hi"), L("message", "hi")},
			[]string{c001 + " Message"}, []string{"did you mean `message`?"}},
		{"unknown/suggest-distance-2", "nika:read", []NamedArg{L("path", "a"), L("encodng", "utf-8"), L("binry", true)},
			[]string{c001 + " encodng", c001 + " binry"}, []string{"did you mean `encoding`?", "did you mean `binary`?"}},
		{"unknown/tie-alphabetical", "nika:date", []NamedArg{L("op", "now"), L("oo", 1)},
			[]string{c001 + " oo"}, []string{"did you mean `op`?"}},
		{"unknown/no-suggestion", "nika:uuid", []NamedArg{L("flavour", "v4")},
			[]string{c001 + " flavour"}, []string{"Remove it; `nika:uuid` takes version."}},
		{"unknown/dynamic-still-unknown", "nika:hash", []NamedArg{L("content", "x"), D("algorithm")},
			[]string{c001 + " algorithm"}, nil},
		{"known/ok", "nika:log", []NamedArg{L("message", "hi"), L("level", "warn"), L("data", obj2{"a": arr{1, 2.5, nil}})}, nil, nil},

		// missing required
		{"missing/one", "nika:read", nil, []string{c001 + " -"}, []string{"missing required argument `path` for `nika:read`", "Add `path` to `args`"}},
		{"missing/two-in-schema-order", "nika:edit", []NamedArg{L("path", "a.txt")},
			[]string{c001 + " -", c001 + " -"}, []string{"`find`", "`replace`"}},
		{"missing/dynamic-counts-as-present", "nika:read", []NamedArg{D("path")}, nil, nil},
		{"missing/null-counts-as-present", "nika:jq", []NamedArg{L("expression", "."), L("input", nil)}, nil, nil},

		// wrong JSON type
		{"type/integer-given-string", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", "y"), L("count", "1")},
			[]string{c001 + " count"}, []string{"argument `count` must be an integer, got a string"}},
		{"type/boolean-given-string", "nika:write", []NamedArg{L("path", "a"), L("content", "x"), L("create_dirs", "yes")},
			[]string{c001 + " create_dirs"}, []string{"must be a boolean, got a string"}},
		{"type/nested-element", "nika:glob", []NamedArg{L("pattern", "*"), L("exclude", arr{"a", 1})},
			[]string{c001 + " exclude"}, []string{"argument `exclude` at `/1` must be a string, got a number"}},
		{"type/float-for-integer", "nika:fetch", []NamedArg{L("url", "https://example.com"), L("max_bytes", 1.5)},
			[]string{c001 + " max_bytes"}, []string{"must be an integer"}},
		{"type/ok", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", ""), L("count", 2)}, nil, nil},
		{"type/dynamic-skipped", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", "y"), D("count")}, nil, nil},
		{"type/string-typed-for-integer", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", "y"), T("count")},
			[]string{c001 + " count"}, []string{"must be an integer, but a text template always renders to a string", "exactly one placeholder"}},
		{"type/string-typed-for-boolean", "nika:assert", []NamedArg{T("condition")},
			[]string{c001 + " condition"}, []string{"must be a boolean"}},
		{"type/string-typed-for-object", "nika:fetch", []NamedArg{L("url", "https://example.com"), T("headers")},
			[]string{c001 + " headers"}, []string{"must be an object"}},
		{"type/string-typed-ok", "nika:read", []NamedArg{T("path")}, nil, nil},
		{"type/string-typed-any", "nika:log", []NamedArg{T("message"), T("data")}, nil, nil},
		{"type/headers-values", "nika:fetch", []NamedArg{L("url", "https://example.com"), L("headers", obj2{"X-N": 1})},
			[]string{c001 + " headers"}, []string{"at `/X-N` must be a string"}},

		// enum
		{"enum/suggest", "nika:log", []NamedArg{L("message", "m"), L("level", "wrn")},
			[]string{c001 + " level"}, []string{"argument `level` has a bad value `wrn`", "Use one of `debug`, `info`, `warn`, `error` (did you mean `warn`?)."}},
		{"enum/no-suggest", "nika:hash", []NamedArg{L("content", "x"), L("algo", "md5")},
			[]string{c001 + " algo"}, []string{"Use one of `sha256`, `sha512`, `blake3`."}},
		{"enum/ok", "nika:hash", []NamedArg{L("content", obj2{"a": 1}), L("algo", "blake3"), L("encoding", "base64")}, nil, nil},
		{"enum/string-typed-skipped", "nika:log", []NamedArg{L("message", "m"), T("level")}, nil, nil},
		{"enum/inspect", "nika:inspect", []NamedArg{L("view", "costs")},
			[]string{c001 + " view"}, []string{"did you mean `cost`?"}},

		// out of range
		{"range/count-negative", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", "y"), L("count", -1)},
			[]string{c001 + " count"}, []string{"argument `count` is -1, below the minimum 0", "at least 0"}},
		{"range/max-bytes-zero", "nika:fetch", []NamedArg{L("url", "https://example.com"), L("max_bytes", 0)},
			[]string{c001 + " max_bytes"}, []string{"below the minimum 1"}},
		{"range/count-zero-ok", "nika:edit", []NamedArg{L("path", "a"), L("find", "x"), L("replace", "y"), L("count", 0)}, nil, nil},

		// non-empty strings
		{"minlength/find-empty", "nika:edit", []NamedArg{L("path", "a"), L("find", ""), L("replace", "y")},
			[]string{c001 + " find"}, []string{"argument `find` must not be empty"}},
		{"minlength/path-empty", "nika:read", []NamedArg{L("path", "")}, []string{c001 + " path"}, nil},
		{"minlength/template-ok", "nika:edit", []NamedArg{L("path", "a"), T("find"), L("replace", "y")}, nil, nil},

		// pattern
		{"pattern/upper", "nika:emit", []NamedArg{L("event_type", "Report.Ready")},
			[]string{c001 + " event_type"}, []string{"`Report.Ready` does not match `^[a-z][a-z0-9_.]*$`"}},
		{"pattern/digit-first", "nika:emit", []NamedArg{L("event_type", "1abc"), L("payload", 3)},
			[]string{c001 + " event_type"}, nil},
		{"pattern/empty", "nika:emit", []NamedArg{L("event_type", "")}, []string{c001 + " event_type"}, nil},
		{"pattern/ok", "nika:emit", []NamedArg{L("event_type", "report.ready_2"), L("payload", obj2{})}, nil, nil},
		{"pattern/template-skipped", "nika:emit", []NamedArg{T("event_type")}, nil, nil},

		// duplicates: only the first occurrence is checked
		{"duplicate/first-only", "nika:read", []NamedArg{L("path", "a"), L("path", 1)}, nil, nil},

		// agent-only builtins keep a closed contract
		{"done/ok", "nika:done", []NamedArg{L("result", obj2{"a": 1})}, nil, nil},
		{"done/empty-ok", "nika:done", nil, nil, nil},
		{"done/unknown", "nika:done", []NamedArg{L("resutl", 1)}, []string{c001 + " resutl"}, []string{"did you mean `result`?"}},
	})
}

func TestCheckArgsWait(t *testing.T) {
	runCases(t, []checkCase{
		{"neither", "nika:wait", nil, []string{c001 + " -"}, []string{"needs one of `duration` or `until`"}},
		{"neither/timeout-only", "nika:wait", []NamedArg{L("timeout", "1m")}, []string{c001 + " -"}, nil},
		{"both", "nika:wait", []NamedArg{L("duration", "1s"), L("until", t0)}, []string{c001 + " -"}, []string{"exactly one of"}},
		{"both/dynamic", "nika:wait", []NamedArg{D("duration"), D("until")}, []string{c001 + " -"}, nil},
		{"duration/ok", "nika:wait", []NamedArg{L("duration", "24h")}, nil, nil},
		{"duration/dynamic", "nika:wait", []NamedArg{D("duration")}, nil, nil},
		{"duration/not-go", "nika:wait", []NamedArg{L("duration", "5 minutes")}, []string{c001 + " duration"}, []string{"is not a Go duration"}},
		{"duration/days-not-go", "nika:wait", []NamedArg{L("duration", "1d")}, []string{c001 + " duration"}, nil},
		{"duration/zero", "nika:wait", []NamedArg{L("duration", "0s")}, []string{c001 + " duration"}, []string{"not greater than 0"}},
		{"duration/negative", "nika:wait", []NamedArg{L("duration", "-1s")}, []string{c001 + " duration"}, nil},
		{"duration/over-24h", "nika:wait", []NamedArg{L("duration", "24h0m1s")}, []string{c001 + " duration"}, []string{"longer than 24h", "give `until`"}},
		{"duration/integer", "nika:wait", []NamedArg{L("duration", 5)}, []string{c001 + " duration"}, []string{"must be a string"}},
		{"until/ok", "nika:wait", []NamedArg{L("until", "2026-06-13T11:30:00.5+02:00")}, nil, nil},
		{"until/bad", "nika:wait", []NamedArg{L("until", "tomorrow")}, []string{c001 + " until"}, []string{"not an RFC 3339 timestamp"}},
		{"until/date-only", "nika:wait", []NamedArg{L("until", "2026-06-13")}, []string{c001 + " until"}, nil},
		{"timeout/bad", "nika:wait", []NamedArg{L("duration", "1s"), L("timeout", "30")}, []string{c001 + " timeout"}, nil},
		{"timeout/zero", "nika:wait", []NamedArg{L("duration", "1s"), L("timeout", "0s")}, []string{c001 + " timeout"}, nil},
		{"timeout/ok", "nika:wait", []NamedArg{L("duration", "1s"), L("timeout", "1m")}, nil, nil},
	})
}

func TestCheckArgsFetch(t *testing.T) {
	u := L("url", "https://example.com/data.json")
	runCases(t, []checkCase{
		{"ok", "nika:fetch", []NamedArg{u}, nil, nil},
		{"jq/required", "nika:fetch", []NamedArg{u, L("mode", "jq")}, []string{c001 + " -"}, []string{"mode `jq` requires `jq`"}},
		{"jq/forbidden-default-mode", "nika:fetch", []NamedArg{u, L("jq", ".a")}, []string{c001 + " jq"}, []string{"only allowed with mode `jq`, not `markdown`"}},
		{"jq/forbidden-text", "nika:fetch", []NamedArg{u, L("mode", "text"), L("jq", ".a")}, []string{c001 + " jq"}, nil},
		{"jq/forbidden-dynamic-jq", "nika:fetch", []NamedArg{u, L("mode", "links"), D("jq")}, []string{c001 + " jq"}, nil},
		{"jq/ok", "nika:fetch", []NamedArg{u, L("mode", "jq"), L("jq", ".rates | length")}, nil, nil},
		{"jq/dynamic-mode", "nika:fetch", []NamedArg{u, D("mode"), L("jq", ".a")}, nil, nil},
		{"jq/impure", "nika:fetch", []NamedArg{u, L("mode", "jq"), L("jq", ".t = now")}, []string{codeJQ + " jq"}, []string{"now is not allowed", "nika:date"}},
		{"jq/syntax", "nika:fetch", []NamedArg{u, L("mode", "jq"), L("jq", ".a |")}, []string{codeJQ + " jq"}, []string{"syntax error"}},
		{"mode/feed", "nika:fetch", []NamedArg{u, L("mode", "feed")}, []string{c001 + " mode"},
			[]string{"mode `feed` is not supported by this engine", "`markdown`, `text`, `jq`, `metadata`, `links`, `article`, `selector`"}},
		{"mode/sitemap", "nika:fetch", []NamedArg{u, L("mode", "sitemap")}, []string{c001 + " mode"}, []string{"mode `sitemap` is not supported by this engine"}},
		{"mode/feed-with-jq-no-cascade", "nika:fetch", []NamedArg{u, L("mode", "feed"), L("jq", ".")}, []string{c001 + " mode"}, nil},
		{"mode/feed-with-selector-no-cascade", "nika:fetch", []NamedArg{u, L("mode", "feed"), L("selector", "h1")}, []string{c001 + " mode"}, nil},
		{"mode/unknown", "nika:fetch", []NamedArg{u, L("mode", "markdwn")}, []string{c001 + " mode"}, []string{"did you mean `markdown`?"}},
		{"mode/template", "nika:fetch", []NamedArg{u, T("mode")}, nil, nil},
		{"mode/article", "nika:fetch", []NamedArg{u, L("mode", "article")}, nil, nil},
		{"mode/article-with-jq", "nika:fetch", []NamedArg{u, L("mode", "article"), L("jq", ".")}, []string{c001 + " jq"}, []string{"only allowed with mode `jq`, not `article`"}},
		{"selector/ok", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "article h2, li:nth-child(2n) > a[href^='https:']")}, nil, nil},
		{"selector/has-contains", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", `div:has(h2):contains("x")`)}, nil, nil},
		{"selector/required", "nika:fetch", []NamedArg{u, L("mode", "selector")}, []string{c001 + " -"}, []string{"mode `selector` requires `selector`", "selector: h2"}},
		{"selector/forbidden-default-mode", "nika:fetch", []NamedArg{u, L("selector", "h1")}, []string{c001 + " selector"}, []string{"only allowed with mode `selector`, not `markdown`"}},
		{"selector/forbidden-text", "nika:fetch", []NamedArg{u, L("mode", "text"), L("selector", "h1")}, []string{c001 + " selector"}, nil},
		{"selector/forbidden-dynamic-selector", "nika:fetch", []NamedArg{u, L("mode", "links"), D("selector")}, []string{c001 + " selector"}, nil},
		{"selector/with-jq", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "h1"), L("jq", ".")}, []string{c001 + " jq"}, nil},
		{"selector/dynamic-mode", "nika:fetch", []NamedArg{u, D("mode"), L("selector", "h1")}, nil, nil},
		{"selector/dynamic", "nika:fetch", []NamedArg{u, L("mode", "selector"), D("selector")}, nil, nil},
		{"selector/template", "nika:fetch", []NamedArg{u, L("mode", "selector"), T("selector")}, nil, nil},
		{"selector/syntax", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "a[href")}, []string{c001 + " selector"},
			[]string{"`selector` `a[href` is not a valid CSS selector", "attribute selector"}},
		{"selector/trailing-comma", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "h1,")}, []string{c001 + " selector"}, []string{"not a valid CSS selector"}},
		{"selector/pseudo-element", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "p::before")}, []string{c001 + " selector"}, []string{"pseudo-element"}},
		{"selector/unknown-pseudo-class", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", ":is(h1)")}, []string{c001 + " selector"}, []string{"unknown pseudoclass"}},
		{"selector/blank", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "  ")}, []string{c001 + " selector"}, nil},
		{"selector/empty", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", "")}, []string{c001 + " selector"}, nil},
		{"selector/not-a-string", "nika:fetch", []NamedArg{u, L("mode", "selector"), L("selector", 3)}, []string{c001 + " selector"}, nil},
		{"url/ftp", "nika:fetch", []NamedArg{L("url", "ftp://example.com/x")}, []string{c001 + " url"}, []string{"scheme `ftp` is not supported"}},
		{"url/no-scheme", "nika:fetch", []NamedArg{L("url", "example.com/x")}, []string{c001 + " url"}, []string{"has no scheme"}},
		{"url/no-host", "nika:fetch", []NamedArg{L("url", "https:///x")}, []string{c001 + " url"}, []string{"has no host"}},
		{"url/upper-scheme-ok", "nika:fetch", []NamedArg{L("url", "HTTP://example.com")}, nil, nil},
		{"url/template", "nika:fetch", []NamedArg{T("url")}, nil, nil},
		{"timeout/bad", "nika:fetch", []NamedArg{u, L("timeout", "30")}, []string{c001 + " timeout"}, nil},
		{"timeout/ok", "nika:fetch", []NamedArg{u, L("timeout", "1m30s"), L("method", "POST"), L("body", obj2{"a": 1}), L("headers", obj2{"X-A": "b"})}, nil, nil},
		{"method/bad", "nika:fetch", []NamedArg{u, L("method", "get")}, []string{c001 + " method"}, []string{"did you mean `GET`?"}},
	})
}

func TestCheckArgsNotify(t *testing.T) {
	runCases(t, []checkCase{
		{"ok", "nika:notify", []NamedArg{L("channel", "webhook"), L("target", "https://hooks.example.com/x"), L("message", "done"), L("severity", "critical")}, nil, nil},
		{"channel/slack", "nika:notify", []NamedArg{L("channel", "slack"), L("target", "#ops"), L("message", "m")},
			[]string{c001 + " channel"}, []string{"channel `slack` is not supported by this engine", "`channel: webhook`"}},
		{"channel/email", "nika:notify", []NamedArg{L("channel", "email"), L("target", "a@b.c"), L("message", "m")}, []string{c001 + " channel"}, nil},
		{"channel/unknown", "nika:notify", []NamedArg{L("channel", "pigeon"), L("target", "x"), L("message", "m")}, []string{c001 + " channel"}, []string{"Use one of `webhook`"}},
		{"channel/dynamic", "nika:notify", []NamedArg{D("channel"), L("target", "#ops"), L("message", "m")}, nil, nil},
		{"target/not-http", "nika:notify", []NamedArg{L("channel", "webhook"), L("target", "mailto:a@b.c"), L("message", "m")}, []string{c001 + " target"}, nil},
		{"target/no-scheme", "nika:notify", []NamedArg{L("channel", "webhook"), L("target", "hooks.example.com"), L("message", "m")}, []string{c001 + " target"}, nil},
		{"severity/bad", "nika:notify", []NamedArg{L("channel", "webhook"), L("target", "https://h.example.com"), L("message", "m"), L("severity", "warnig")},
			[]string{c001 + " severity"}, []string{"did you mean `warning`?"}},
		{"missing", "nika:notify", []NamedArg{L("channel", "webhook")}, []string{c001 + " -", c001 + " -"}, nil},
	})
}

func TestCheckArgsPrompt(t *testing.T) {
	m := L("message", "Proceed?")
	runCases(t, []checkCase{
		{"choices/required", "nika:prompt", []NamedArg{L("mode", "choice"), m}, []string{c001 + " -"}, []string{"mode `choice` requires `choices`"}},
		{"choices/empty", "nika:prompt", []NamedArg{L("mode", "choice"), m, L("choices", arr{})}, []string{c001 + " choices"}, []string{"at least 1 element"}},
		{"choices/only-for-choice", "nika:prompt", []NamedArg{L("mode", "input"), m, L("choices", arr{"a"})}, []string{c001 + " choices"}, []string{"only used with mode `choice`"}},
		{"choices/ok", "nika:prompt", []NamedArg{L("mode", "choice"), m, L("choices", arr{"a", "b"}), L("default", "b")}, nil, nil},
		{"choices/default-missing", "nika:prompt", []NamedArg{L("mode", "choice"), m, L("choices", arr{"apple", "pear"}), L("default", "aple")},
			[]string{c001 + " default"}, []string{"`default` `aple` is not one of `choices`", "did you mean `apple`?"}},
		{"choices/default-missing-dynamic-mode", "nika:prompt", []NamedArg{D("mode"), m, L("choices", arr{"a"}), L("default", "z")}, []string{c001 + " default"}, nil},
		{"choices/dynamic-default", "nika:prompt", []NamedArg{L("mode", "choice"), m, L("choices", arr{"a"}), D("default")}, nil, nil},
		{"default/confirm-string", "nika:prompt", []NamedArg{L("mode", "confirm"), m, L("default", "yes")}, []string{c001 + " default"}, []string{"must be a boolean for mode `confirm`"}},
		{"default/confirm-template", "nika:prompt", []NamedArg{L("mode", "confirm"), m, T("default")}, []string{c001 + " default"}, nil},
		{"default/input-bool", "nika:prompt", []NamedArg{L("mode", "input"), m, L("default", true)}, []string{c001 + " default"}, []string{"must be a string for mode `input`"}},
		{"default/confirm-ok", "nika:prompt", []NamedArg{L("mode", "confirm"), m, L("default", false)}, nil, nil},
		{"default/confirm-dynamic", "nika:prompt", []NamedArg{L("mode", "confirm"), m, D("default")}, nil, nil},
		{"default/bad-type", "nika:prompt", []NamedArg{L("mode", "input"), m, L("default", 3)}, []string{c001 + " default"}, []string{"must be a boolean or a string"}},
		{"mode/bad", "nika:prompt", []NamedArg{L("mode", "confrim"), m, L("choices", arr{"a"})}, []string{c001 + " mode"}, []string{"did you mean `confirm`?"}},
	})
}

func TestCheckArgsConvert(t *testing.T) {
	runCases(t, []checkCase{
		{"from/required", "nika:convert", []NamedArg{L("input", "a: 1"), L("to", "json")}, []string{c001 + " -"}, []string{"a string `input` needs `from`"}},
		{"from/required-template", "nika:convert", []NamedArg{T("input"), L("to", "yaml")}, []string{c001 + " -"}, nil},
		{"from/forbidden", "nika:convert", []NamedArg{L("input", obj2{"a": 1}), L("from", "yaml"), L("to", "json")}, []string{c001 + " from"}, []string{"applies only to a string `input`"}},
		{"from/forbidden-list", "nika:convert", []NamedArg{L("input", arr{arr{"a"}}), D("from"), L("to", "csv")}, []string{c001 + " from"}, nil},
		{"ok/structured", "nika:convert", []NamedArg{L("input", obj2{"a": 1}), L("to", "toml")}, nil, nil},
		{"ok/string", "nika:convert", []NamedArg{L("input", "a,b\n1,2\n"), L("from", "csv"), L("to", "json"), L("has_header", false)}, nil, nil},
		{"ok/dynamic-with-from", "nika:convert", []NamedArg{D("input"), L("from", "json"), L("to", "yaml")}, nil, nil},
		{"ok/dynamic-without-from", "nika:convert", []NamedArg{D("input"), L("to", "yaml")}, nil, nil},
		{"to/bad", "nika:convert", []NamedArg{L("input", obj2{}), L("to", "xml")}, []string{c001 + " to"}, nil},
	})
}

func TestCheckArgsGlobGrep(t *testing.T) {
	runCases(t, []checkCase{
		{"glob/unclosed-class", "nika:glob", []NamedArg{L("pattern", "src/[a-")}, []string{codeGlob + " pattern"}, []string{"invalid glob `src/[a-`", "unclosed `[`"}},
		{"glob/unclosed-brace", "nika:glob", []NamedArg{L("pattern", "*.{go,md")}, []string{codeGlob + " pattern"}, []string{"unclosed `{`"}},
		{"glob/unmatched-brace", "nika:glob", []NamedArg{L("pattern", "a}")}, []string{codeGlob + " pattern"}, []string{"unmatched `}`"}},
		{"glob/doublestar-in-segment", "nika:glob", []NamedArg{L("pattern", "src/**.go")}, []string{codeGlob + " pattern"}, []string{"whole path segment"}},
		{"glob/triple-star", "nika:glob", []NamedArg{L("pattern", "***/x")}, []string{codeGlob + " pattern"}, nil},
		{"glob/empty-class", "nika:glob", []NamedArg{L("pattern", "a[]b")}, []string{codeGlob + " pattern"}, []string{"empty character class"}},
		{"glob/bad-range", "nika:glob", []NamedArg{L("pattern", "[z-a]")}, []string{codeGlob + " pattern"}, []string{"bad range"}},
		{"glob/trailing-backslash", "nika:glob", []NamedArg{L("pattern", `a\`)}, []string{codeGlob + " pattern"}, nil},
		{"glob/exclude-bad", "nika:glob", []NamedArg{L("pattern", "**/*"), L("exclude", arr{"vendor/**", "bad["})}, []string{codeGlob + " exclude"}, []string{"at `exclude/1`"}},
		{"glob/ok", "nika:glob", []NamedArg{L("pattern", "src/**/*.{go,md}"), L("exclude", arr{"**/testdata/**", "[!a-z]?.txt"})}, nil, nil},
		{"glob/ok-brace-doublestar", "nika:glob", []NamedArg{L("pattern", `{src/**,lib/**}/x\*.go`)}, nil, nil},
		{"glob/ok-bare-doublestar", "nika:glob", []NamedArg{L("pattern", "**")}, nil, nil},
		{"glob/template", "nika:glob", []NamedArg{T("pattern")}, nil, nil},
		{"grep/unbalanced", "nika:grep", []NamedArg{L("pattern", "func (")}, []string{codeGrep + " pattern"}, []string{"invalid RE2 regular expression"}},
		{"grep/lookahead", "nika:grep", []NamedArg{L("pattern", `a(?=b)`)}, []string{codeGrep + " pattern"}, nil},
		{"grep/ok", "nika:grep", []NamedArg{L("pattern", `^func [A-Z]\w*\(`), L("path", "spec"), L("case_insensitive", true)}, nil, nil},
		{"grep/dynamic", "nika:grep", []NamedArg{D("pattern")}, nil, nil},
	})
}

func TestCheckArgsJQ(t *testing.T) {
	in := L("input", obj2{"a": 1})
	bad := func(name, expr string, has ...string) checkCase {
		return checkCase{name, "nika:jq", []NamedArg{L("expression", expr), in}, []string{codeJQ + " expression"}, has}
	}
	good := func(name, expr string) checkCase {
		return checkCase{name, "nika:jq", []NamedArg{L("expression", expr), in}, nil, nil}
	}
	runCases(t, []checkCase{
		bad("syntax", ".a |", "syntax error"),
		bad("undefined-function", "frobnicate", "does not compile"),
		bad("undefined-variable", "$x", "does not compile"),
		bad("now", "now", "builtin now is not allowed", "nika:date"),
		bad("mktime", "gmtime | mktime", "gmtime is not allowed"),
		bad("strftime", `strftime("%Y")`, "strftime is not allowed"),
		bad("strptime", `"2026" | strptime("%Y")`, "strptime is not allowed"),
		bad("localtime", "localtime"),
		bad("strflocaltime", `strflocaltime("%H")`),
		bad("env", "env.HOME", "env is not allowed"),
		bad("ENV", "$ENV.PATH", "$ENV is not allowed"),
		bad("loc", "$__loc__", "$__loc__ is not allowed"),
		bad("input", "input", "input is not allowed"),
		bad("inputs", "[inputs]", "inputs is not allowed"),
		bad("input_filename", "input_filename"),
		bad("halt", "halt"),
		bad("halt_error", `"x" | halt_error(1)`),
		bad("debug", "debug", "debug is not allowed"),
		bad("stderr", "stderr"),
		bad("nested-in-def", "def f: now; f", "now is not allowed"),
		bad("nested-in-object", `{t: (. | now)}`, "now is not allowed"),
		bad("nested-in-string", `"at \(now)"`, "now is not allowed"),
		bad("nested-in-reduce", `reduce .[] as $x (0; . + now)`),
		bad("nested-in-if", `if . then env else 1 end`),
		bad("nested-in-try", `try input catch 1`),
		bad("nested-in-index", `.[now]`),
		bad("import", `import "m" as m; .`, "import is not allowed"),
		bad("include", `include "m"; .`, "include is not allowed"),
		good("ok/path", ".items | map(.name)"),
		good("ok/select", "[.[] | select(.ok)] | length"),
		good("ok/reduce", "reduce .[] as $x (0; . + $x)"),
		good("ok/shadowed-now", "def now: 1; now"),
		good("ok/param-shadow", "def f(env): env; f(1)"),
		good("ok/todate", ".t | todate"),
		good("ok/field-named-now", ".now + .env"),
		{"dynamic", "nika:jq", []NamedArg{D("expression"), in}, nil, nil},
		{"missing-input", "nika:jq", []NamedArg{L("expression", ".")}, []string{c001 + " -"}, []string{"`input`"}},
	})
}

func TestCheckArgsValidate(t *testing.T) {
	d := L("data", obj2{"a": 1})
	runCases(t, []checkCase{
		{"schema/bad-type", "nika:validate", []NamedArg{d, L("schema", obj2{"type": "strin"})}, []string{codeValidate + " schema"}, []string{"does not compile"}},
		{"schema/bad-minimum", "nika:validate", []NamedArg{d, L("schema", obj2{"minimum": "3"})}, []string{codeValidate + " schema"}, nil},
		{"schema/external-ref", "nika:validate", []NamedArg{d, L("schema", obj2{"$ref": "https://example.com/s.json"})}, []string{codeValidate + " schema"}, []string{"is not a fragment of this schema"}},
		{"schema/relative-ref", "nika:validate", []NamedArg{d, L("schema", obj2{"properties": obj2{"a": obj2{"$ref": "defs.json#/a"}}})}, []string{codeValidate + " schema"}, []string{"\"defs.json#/a\""}},
		{"schema/fragment-ref-ok", "nika:validate", []NamedArg{d, L("schema", obj2{"$defs": obj2{"n": obj2{"type": "integer", "minimum": 1}}, "properties": obj2{"a": obj2{"$ref": "#/$defs/n"}}})}, nil, nil},
		{"schema/ref-in-const-is-data", "nika:validate", []NamedArg{d, L("schema", obj2{"const": obj2{"$ref": "x.json"}})}, nil, nil},
		{"schema/true-ok", "nika:validate", []NamedArg{d, L("schema", true)}, nil, nil},
		{"schema/string", "nika:validate", []NamedArg{d, L("schema", "{}")}, []string{c001 + " schema"}, []string{"must be a boolean or an object, got a string"}},
		{"schema/dynamic", "nika:validate", []NamedArg{d, D("schema")}, nil, nil},
		{"data/json-bad", "nika:validate", []NamedArg{L("data", `{"a":`), L("schema", true), L("format", "json")}, []string{codeData + " data"}, []string{"not valid JSON"}},
		{"data/json-bad-2", "nika:validate", []NamedArg{L("data", `{a: 1}`), L("schema", true), L("format", "json")}, []string{codeData + " data"}, nil},
		{"data/json-ok", "nika:validate", []NamedArg{L("data", `{"a": 1}`), L("schema", obj2{"type": "object"}), L("format", "json")}, nil, nil},
		{"data/yaml-not-checked", "nika:validate", []NamedArg{L("data", `{a: 1`), L("schema", true), L("format", "yaml")}, nil, nil},
	})
}

func TestCheckArgsDate(t *testing.T) {
	runCases(t, []checkCase{
		{"now/ok", "nika:date", []NamedArg{L("op", "now")}, nil, nil},
		{"now/ok-format-tz", "nika:date", []NamedArg{L("op", "now"), L("format", "%Y-%m-%dT%H:%M:%S.%L%z"), L("timezone", "UTC")}, nil, nil},
		{"now/date-not-used", "nika:date", []NamedArg{L("op", "now"), L("date", t0)}, []string{c001 + " date"}, []string{"argument `date` is not used by op `now`", "op `now` takes format?, timezone?"}},
		{"diff/timezone-not-used", "nika:date", []NamedArg{L("op", "diff"), L("from", t0), L("to", t0), L("timezone", "UTC")}, []string{c001 + " timezone"}, nil},
		{"add/missing-duration", "nika:date", []NamedArg{L("op", "add"), L("date", t0)}, []string{c001 + " -"}, []string{"op `add` requires `duration`"}},
		{"format/missing-both", "nika:date", []NamedArg{L("op", "format")}, []string{c001 + " -", c001 + " -"}, []string{"requires `date`", "requires `format`"}},
		{"add/ok", "nika:date", []NamedArg{L("op", "add"), L("date", t0), L("duration", "1d12h")}, nil, nil},
		{"subtract/ok", "nika:date", []NamedArg{L("op", "subtract"), L("date", "2026-06-13T11:30:00.123+02:00"), L("duration", "-1.5d")}, nil, nil},
		{"op/bad", "nika:date", []NamedArg{L("op", "tomorrow")}, []string{c001 + " op"}, nil},
		{"date/bad", "nika:date", []NamedArg{L("op", "add"), L("date", "yesterday"), L("duration", "1h")}, []string{codeDate + " date"}, []string{"not an RFC 3339 timestamp"}},
		{"date/no-offset", "nika:date", []NamedArg{L("op", "format"), L("date", "2026-06-13T09:30:00"), L("format", "date")}, []string{codeDate + " date"}, nil},
		{"diff/bad-to", "nika:date", []NamedArg{L("op", "diff"), L("from", t0), L("to", "2026-02-30T00:00:00Z")}, []string{codeDate + " to"}, nil},
		{"duration/bad", "nika:date", []NamedArg{L("op", "add"), L("date", t0), L("duration", "1 day")}, []string{codeDate + " duration"}, []string{"`duration` `1 day` is not a duration"}},
		{"duration/bad-unit", "nika:date", []NamedArg{L("op", "add"), L("date", t0), L("duration", "2w")}, []string{codeDate + " duration"}, nil},
		{"format/bad-directive", "nika:date", []NamedArg{L("op", "format"), L("date", t0), L("format", "%Y-%m-%d %Q")}, []string{codeDate + " format"}, []string{"unsupported directive `%Q`"}},
		{"format/lone-percent", "nika:date", []NamedArg{L("op", "now"), L("format", "100%")}, []string{codeDate + " format"}, []string{"lone `%`"}},
		{"format/named-ok", "nika:date", []NamedArg{L("op", "format"), L("date", t0), L("format", "unix_ms")}, nil, nil},
		{"timezone/unknown", "nika:date", []NamedArg{L("op", "now"), L("timezone", "Mars/Olympus_Mons")}, []string{codeDate + " timezone"}, []string{"is not a known IANA time zone"}},
		{"timezone/local", "nika:date", []NamedArg{L("op", "now"), L("timezone", "Local")}, []string{codeDate + " timezone"}, nil},
		{"parse/ok", "nika:date", []NamedArg{L("op", "parse"), L("input", t0)}, nil, nil},
		{"parse/ok-strftime-unchecked", "nika:date", []NamedArg{L("op", "parse"), L("input", "13/06/2026"), L("format", "%d/%m/%Y"), L("timezone", "UTC")}, nil, nil},
		{"parse/bad-default-rfc3339", "nika:date", []NamedArg{L("op", "parse"), L("input", "13/06/2026")}, []string{codeDate + " input"}, []string{"does not match the format `rfc3339`"}},
		{"parse/bad-date", "nika:date", []NamedArg{L("op", "parse"), L("input", "2026-13-01"), L("format", "date")}, []string{codeDate + " input"}, nil},
		{"parse/bad-unix", "nika:date", []NamedArg{L("op", "parse"), L("input", "1.5e9"), L("format", "unix")}, []string{codeDate + " input"}, nil},
		{"dynamic-op/values-still-checked", "nika:date", []NamedArg{D("op"), L("date", "bad")}, []string{codeDate + " date"}, nil},
		{"dynamic-op/ok", "nika:date", []NamedArg{D("op"), L("duration", "2d")}, nil, nil},
		{"dynamic-values", "nika:date", []NamedArg{L("op", "diff"), D("from"), T("to")}, nil, nil},
	})
}

func TestCheckArgsCompose(t *testing.T) {
	runCases(t, []checkCase{
		{"ok-at-limit", "nika:compose", []NamedArg{L("workflow_yaml", strings.Repeat("x", 262144))}, nil, nil},
		{"over-limit", "nika:compose", []NamedArg{L("workflow_yaml", strings.Repeat("x", 262145))}, []string{c001 + " workflow_yaml"}, []string{"draft is 262145 bytes; the limit is 262144"}},
		{"missing", "nika:compose", nil, []string{c001 + " -"}, nil},
		{"wrong-type", "nika:compose", []NamedArg{L("workflow_yaml", obj2{"nika": "v1"})}, []string{c001 + " workflow_yaml"}, nil},
	})
}

func TestTimezoneWithDatabase(t *testing.T) {
	if _, err := time.LoadLocation("Europe/Paris"); err != nil {
		t.Skip("no time zone database on this machine")
	}
	checkCase{"tz", "nika:date", []NamedArg{L("op", "now"), L("timezone", "Europe/Paris")}, nil, nil}.run(t)
}

func TestCheckArgsNilAndForeignBuiltin(t *testing.T) {
	if got := CheckArgs(nil, []NamedArg{L("x", 1)}); got != nil {
		t.Errorf("CheckArgs(nil) = %v", got)
	}
	b := &Builtin{Name: "nika:test", Params: params(req("n", with(integer("A number."), "minimum", 1)))}
	got := CheckArgs(b, []NamedArg{L("n", 0), L("m", 1)})
	if len(got) != 2 || got[0].Arg != "n" || got[1].Arg != "m" || got[1].Detail != "Rename it to `n` (did you mean `n`?) or remove it." {
		t.Errorf("foreign builtin issues = %+v", got)
	}
	bad := &Builtin{Name: "nika:broken", Params: []byte(`{"type":"object","properties":{"a":{"type":"nope"}}}`)}
	got = CheckArgs(bad, []NamedArg{L("a", 1), L("b", 1)})
	if len(got) != 1 || got[0].Arg != "b" {
		t.Errorf("broken schema issues = %+v", got)
	}
}

func TestCheckArgsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range All() {
				CheckArgs(b, []NamedArg{L("path", i), L("mode", "x"), L("op", "now")})
			}
		}()
	}
	wg.Wait()
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"mesage", []string{"data", "level", "message"}, "message"},
		{"dependsOn", []string{"depends_on"}, "depends_on"},         // LANGUAGE.md §9.3's example
		{"warning", []string{"debug", "error", "info", "warn"}, ""}, // distance 3
		{"dependson", []string{"depends_on"}, "depends_on"},
		{"oo", []string{"to", "op"}, "op"},
		{"xyz", []string{"path"}, ""},
		{"path", []string{"path", "pat"}, ""},
		{"PATH", []string{"path"}, "path"},
		{"été", []string{"ete", "etes"}, "ete"},
	} {
		if got := suggest(tc.name, tc.cands); got != tc.want {
			t.Errorf("suggest(%q, %v) = %q, want %q", tc.name, tc.cands, got, tc.want)
		}
	}
}

func TestParseDateDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "90m": 90 * time.Minute, "1d": 24 * time.Hour, "1d12h": 36 * time.Hour,
		"-1.5d": -36 * time.Hour, "+2d": 48 * time.Hour, "1h1d": 25 * time.Hour, "1.5h": 90 * time.Minute,
		"300ms": 300 * time.Millisecond, "2µs": 2 * time.Microsecond,
	} {
		got, err := ParseDateDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDateDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "d", "1", "1 d", "1w", "1dd", "1.2.3d", "100000000d", "1d-1h"} {
		if got, err := ParseDateDuration(in); err == nil {
			t.Errorf("ParseDateDuration(%q) = %v, want an error", in, got)
		}
	}
}

func TestCheckDateFormat(t *testing.T) {
	for _, f := range []string{"rfc3339", "date", "time", "unix", "unix_ms", "%Y", "%%Y", "%a %A %b %B %j %y %Z", "plain text"} {
		if err := CheckDateFormat(f); err != nil {
			t.Errorf("CheckDateFormat(%q) = %v", f, err)
		}
	}
	for _, f := range []string{"", "%", "%Y%", "%e", "%-d", "%é"} {
		if err := CheckDateFormat(f); err == nil {
			t.Errorf("CheckDateFormat(%q) = nil, want an error", f)
		}
	}
}

func BenchmarkCheckArgs(b *testing.B) {
	read, _ := Lookup("nika:read")
	jq, _ := Lookup("nika:jq")
	date, _ := Lookup("nika:date")
	readArgs := []NamedArg{L("path", "docs/a.md"), L("encoding", "utf-8")}
	jqArgs := []NamedArg{L("expression", "[.items[] | select(.ok) | .name] | sort"), D("input")}
	dateArgs := []NamedArg{L("op", "add"), L("date", t0), L("duration", "1d")}
	b.ReportAllocs()
	for b.Loop() {
		CheckArgs(read, readArgs)
		CheckArgs(jq, jqArgs)
		CheckArgs(date, dateArgs)
	}
}
