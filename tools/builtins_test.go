package tools

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
)

// exec runs one call with a background context.
func exec(t *testing.T, call Call) (any, error) {
	t.Helper()
	return NewBuiltins().Execute(context.Background(), call)
}

// codeOf returns the NIKA code of err ("" when nil), failing when err is not a *spec.Error.
func codeOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var se *spec.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *spec.Error", err, err)
	}
	return se.Code
}

func details(t *testing.T, err error) map[string]any {
	t.Helper()
	var se *spec.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *spec.Error", err)
	}
	return se.Details
}

func TestExecuteDispatch(t *testing.T) {
	cases := []struct {
		name string
		call Call
		code string
		msg  string
	}{
		{"unknown tool", Call{Name: "nika:nope"}, "NIKA-INVOKE-001", "unknown tool"},
		{"mcp name", Call{Name: "mcp:fs/read"}, "NIKA-INVOKE-001", "unknown tool"},
		{"catalog builtin not built", Call{Name: "nika:compose", Args: map[string]any{"workflow_yaml": "nika: v1"}}, "NIKA-INVOKE-001", "not in this build"},
		{"permits.tools denies", Call{Name: "nika:uuid", Permits: &spec.Permits{Tools: []string{"nika:*", "!nika:uuid"}}}, "NIKA-SEC-004", "permits.tools"},
		{"permits without tools denies", Call{Name: "nika:uuid", Permits: &spec.Permits{}}, "NIKA-SEC-004", "permits.tools"},
		{"permits.tools admits", Call{Name: "nika:uuid", Permits: &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}}, "", ""},
		{"unknown argument", Call{Name: "nika:uuid", Args: map[string]any{"versoin": "v4"}}, "NIKA-INVOKE-002", "versoin"},
		{"missing required", Call{Name: "nika:log", Args: map[string]any{}}, "NIKA-INVOKE-002", "message"},
		{"wrong type", Call{Name: "nika:log", Args: map[string]any{"message": 3}}, "NIKA-INVOKE-002", "/message"},
		{"bad enum", Call{Name: "nika:log", Args: map[string]any{"message": "m", "level": "loud"}}, "NIKA-INVOKE-002", "/level"},
		{"pattern", Call{Name: "nika:emit", Args: map[string]any{"event_type": "Bad-Type"}}, "NIKA-INVOKE-002", "/event_type"},
		{"cross-argument rule", Call{Name: "nika:wait", Args: map[string]any{"duration": "1ms", "until": "2026-01-01T00:00:00Z"}}, "NIKA-INVOKE-002", "exactly one"},
		{"own code kept", Call{Name: "nika:date", Args: map[string]any{"op": "now", "timezone": "Mars/Olympus"}}, "NIKA-BUILTIN-DATE-001", "timezone"},
		{"contract wins over own code", Call{Name: "nika:date", Args: map[string]any{"op": "now", "timezone": "Mars/Olympus", "date": "x"}}, "NIKA-INVOKE-002", "not used by op"},
		{"unsupported Go type", Call{Name: "nika:log", Args: map[string]any{"message": "m", "data": struct{}{}}}, "NIKA-INVOKE-002", "Go type"},
		{"normalized integers", Call{Name: "nika:jq", Args: map[string]any{"expression": ".", "input": int64(3)}}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := exec(t, c.call)
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code = %q, want %q (err: %v)", got, c.code, err)
			}
			if c.msg != "" && !strings.Contains(err.Error()+" "+renderDetails(details(t, err)), c.msg) {
				t.Errorf("error %q (details %v) does not mention %q", err, details(t, err), c.msg)
			}
		})
	}
}

func renderDetails(d map[string]any) string {
	var b strings.Builder
	if vs, ok := d["violations"].([]any); ok {
		for _, v := range vs {
			m := v.(map[string]any)
			b.WriteString(m["path"].(string) + " " + m["message"].(string) + "\n")
		}
	}
	return b.String()
}

func TestInvokeViolationsDetails(t *testing.T) {
	_, err := exec(t, Call{Name: "nika:hash", Args: map[string]any{"algo": "md5", "extra": 1}})
	if codeOf(t, err) != "NIKA-INVOKE-002" {
		t.Fatalf("err = %v", err)
	}
	d := details(t, err)
	if d["tool"] != "nika:hash" {
		t.Errorf("details.tool = %v", d["tool"])
	}
	vs, _ := d["violations"].([]any)
	if len(vs) < 3 {
		t.Fatalf("want violations for the unknown argument, the enum and the missing content, got %v", vs)
	}
	for _, v := range vs {
		m := v.(map[string]any)
		if _, ok := m["path"].(string); !ok {
			t.Errorf("violation without a path: %v", m)
		}
		if s, _ := m["message"].(string); s == "" {
			t.Errorf("violation without a message: %v", m)
		}
	}
}

func TestHasAndNames(t *testing.T) {
	b := NewBuiltins()
	want := []string{"nika:assert", "nika:convert", "nika:date", "nika:emit", "nika:hash", "nika:jq",
		"nika:json_diff", "nika:json_merge_patch",
		"nika:log", "nika:read", "nika:uuid", "nika:validate", "nika:wait", "nika:write"}
	want = append(want, "nika:edit", "nika:glob", "nika:grep", "nika:prompt") // the file builtins of issue 6
	// The network builtins of issue 6.
	want = append(want, "nika:fetch", "nika:notify")
	want = append(want, "nika:inspect") // answered by the planner through Call.Inspect
	slices.Sort(want)
	if got := b.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v", got)
	}
	for _, n := range want {
		if !b.Has(n) {
			t.Errorf("Has(%q) = false", n)
		}
		if _, ok := catalog.Lookup(n); !ok {
			t.Errorf("%s is not in the catalog", n)
		}
	}
	for _, n := range []string{"nika:compose", "nika:done", "nika:nope", ""} {
		if b.Has(n) {
			t.Errorf("Has(%q) = true", n)
		}
	}
}

func TestPanicIsRecovered(t *testing.T) {
	b := NewBuiltins()
	b.impls["nika:uuid"].run = func(context.Context, *invocation) (any, error) { panic("boom") }
	out, err := b.Execute(context.Background(), Call{Name: "nika:uuid"})
	if out != nil || codeOf(t, err) != "NIKA-INVOKE-003" || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("out, err = %v, %v", out, err)
	}
	// The other Builtins value is untouched: nothing is shared.
	if _, err := NewBuiltins().Execute(context.Background(), Call{Name: "nika:uuid"}); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	cause := errors.New("task deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	_, err := NewBuiltins().Execute(ctx, Call{Name: "nika:write", Args: map[string]any{"path": t.TempDir() + "/x", "content": "x"}})
	if codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
		t.Errorf("the error does not wrap the cause and ctx.Err(): %v", err)
	}
}

func TestNormalize(t *testing.T) {
	in := map[string]any{"a": []string{"x"}, "b": map[string]string{"k": "v"}, "c": uint8(7), "d": float32(1.5),
		"e": []any{int32(1), uint64(1 << 63)}}
	got, err := normalize(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{"x"}, "b": map[string]any{"k": "v"}, "c": 7, "d": 1.5,
		"e": []any{1, float64(1 << 63)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("normalize = %#v", got)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := normalize(cyclic, 0); err == nil {
		t.Error("a cyclic value was accepted")
	}
}

func asSpec(err error) *spec.Error {
	var se *spec.Error
	if !errors.As(err, &se) {
		return &spec.Error{}
	}
	return se
}

// One Builtins value serves concurrent calls (run under -race).
func TestConcurrentExecute(t *testing.T) {
	b := NewBuiltins()
	calls := []Call{
		{Name: "nika:jq", Args: map[string]any{"expression": ".a", "input": map[string]any{"a": 1}}},
		{Name: "nika:hash", Args: map[string]any{"content": "x"}},
		{Name: "nika:date", Args: map[string]any{"op": "diff", "from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:00:01Z"}},
		{Name: "nika:convert", Args: map[string]any{"input": map[string]any{"a": 1}, "to": "yaml"}},
		{Name: "nika:validate", Args: map[string]any{"data": 1, "schema": map[string]any{"type": "integer"}}},
	}
	for i := range 20 {
		call := calls[i%len(calls)]
		t.Run(call.Name, func(t *testing.T) {
			t.Parallel()
			if _, err := b.Execute(context.Background(), call); err != nil {
				t.Error(err)
			}
		})
	}
}
