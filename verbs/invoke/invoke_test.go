package invoke

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// verb is the planner's Verb interface, restated (verbs do not import the planner).
type verb interface {
	Run(ctx context.Context, job workflow.Job) workflow.Outcome
}

var _ verb = (*Verb)(nil)

type emitted struct {
	kind   string
	fields map[string]any
}

// recorder collects what a job emits.
type recorder struct {
	mu  sync.Mutex
	evs []emitted
}

func (r *recorder) emit(kind string, fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, emitted{kind, fields})
}

func job(rec *recorder, f map[string]any, p *spec.Permits) workflow.Job {
	return workflow.Job{Verb: "invoke", Fields: f, Permits: p, Attempt: 1, Iteration: -1, Emit: rec.emit}
}

func TestRun(t *testing.T) {
	fixed := time.Date(2026, 6, 13, 9, 30, 0, 0, time.UTC)
	v := &Verb{Builtins: tools.NewBuiltins(), Now: func() time.Time { return fixed }}
	jq := map[string]any{"tool": "nika:jq", "args": map[string]any{"expression": ".a + 1", "input": map[string]any{"a": 1}}}
	tests := []struct {
		name    string
		verb    *Verb
		fields  map[string]any
		permits *spec.Permits
		want    any
		code    string
		msg     string         // part of the error message
		events  []emitted      // the events before tool_invoked
		invoked map[string]any // the tool_invoked fields; nil: no event at all
	}{
		{name: "nika:jq through the builtins", fields: jq, want: 2,
			invoked: map[string]any{"tool": "nika:jq", "is_error": false}},
		{name: "nika:jq error", fields: map[string]any{"tool": "nika:jq", "args": map[string]any{"expression": ".[", "input": nil}},
			code: "NIKA-BUILTIN-JQ-001", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-BUILTIN-JQ-001"}},
		{name: "args are checked", fields: map[string]any{"tool": "nika:jq", "args": map[string]any{"input": 1}},
			code: "NIKA-INVOKE-002", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-INVOKE-002"}},
		{name: "args not an object", fields: map[string]any{"tool": "nika:jq", "args": []any{1}},
			code: "NIKA-INVOKE-002", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-INVOKE-002"}},
		{name: "args default to {}", fields: map[string]any{"tool": "nika:uuid"},
			invoked: map[string]any{"tool": "nika:uuid", "is_error": false}},
		{name: "the engine clock", fields: map[string]any{"tool": "nika:date", "args": map[string]any{"op": "now"}},
			want: "2026-06-13T09:30:00.000Z", invoked: map[string]any{"tool": "nika:date", "is_error": false}},
		{name: "builtin events come first", fields: map[string]any{"tool": "nika:log", "args": map[string]any{"message": "hi"}},
			want:    nil,
			events:  []emitted{{event.Log, map[string]any{"level": "info", "message": "hi"}}},
			invoked: map[string]any{"tool": "nika:log", "is_error": false}},

		{name: "permits.tools refuses", fields: jq, permits: &spec.Permits{Tools: []string{"nika:read"}, ToolsSet: true},
			code: "NIKA-SEC-004", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-SEC-004"}},
		{name: "permits.tools negation", fields: jq, permits: &spec.Permits{Tools: []string{"nika:*", "!nika:jq"}, ToolsSet: true},
			code: "NIKA-SEC-004", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-SEC-004"}},
		{name: "permits {} refuses every tool", fields: jq, permits: &spec.Permits{},
			code: "NIKA-SEC-004", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-SEC-004"}},
		{name: "permits.tools admits", fields: jq, permits: &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}, want: 2,
			invoked: map[string]any{"tool": "nika:jq", "is_error": false}},
		{name: "permits.tools gates mcp too", fields: map[string]any{"tool": "mcp:github/search"}, permits: &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true},
			code: "NIKA-SEC-004", invoked: map[string]any{"tool": "mcp:github/search", "is_error": true, "code": "NIKA-SEC-004"}},

		{name: "mcp without a registry", fields: map[string]any{"tool": "mcp:github/search", "args": map[string]any{"q": "x"}},
			code: "NIKA-INVOKE-001", msg: "this engine has no MCP registry — create .nika/mcp_servers.json",
			invoked: map[string]any{"tool": "mcp:github/search", "is_error": true, "code": "NIKA-INVOKE-001"}},
		{name: "catalog builtin not in this build", fields: map[string]any{"tool": "nika:compose", "args": map[string]any{"workflow_yaml": "nika: v1"}},
			code: "NIKA-INVOKE-001", msg: "not in this build",
			invoked: map[string]any{"tool": "nika:compose", "is_error": true, "code": "NIKA-INVOKE-001"}},
		{name: "unknown builtin", fields: map[string]any{"tool": "nika:nope"},
			code: "NIKA-INVOKE-001", invoked: map[string]any{"tool": "nika:nope", "is_error": true, "code": "NIKA-INVOKE-001"}},
		{name: "unknown namespace", fields: map[string]any{"tool": "x:y"},
			code: "NIKA-INVOKE-001", invoked: map[string]any{"tool": "x:y", "is_error": true, "code": "NIKA-INVOKE-001"}},
		{name: "no builtins", verb: &Verb{}, fields: jq,
			code: "NIKA-INVOKE-001", invoked: map[string]any{"tool": "nika:jq", "is_error": true, "code": "NIKA-INVOKE-001"}},
		{name: "no tool name", fields: map[string]any{"args": map[string]any{}}, code: "NIKA-VAR-006"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vb := v
			if tt.verb != nil {
				vb = tt.verb
			}
			rec := &recorder{}
			out := vb.Run(context.Background(), job(rec, tt.fields, tt.permits))
			if tt.code != "" {
				if out.Err == nil || out.Err.Code != tt.code {
					t.Fatalf("outcome %+v, want %s", out, tt.code)
				}
				if !strings.Contains(out.Err.Message, tt.msg) {
					t.Errorf("message %q lacks %q", out.Err.Message, tt.msg)
				}
			} else {
				if out.Err != nil {
					t.Fatalf("error %v (%v)", out.Err, out.Err.Details)
				}
				if tt.fields["tool"] == "nika:uuid" {
					if s, _ := out.Output.(string); len(s) != 36 {
						t.Errorf("uuid %#v", out.Output)
					}
				} else if !reflect.DeepEqual(out.Output, tt.want) {
					t.Errorf("output %#v, want %#v", out.Output, tt.want)
				}
			}
			var want []emitted
			want = append(want, tt.events...)
			if tt.invoked != nil {
				want = append(want, emitted{event.ToolInvoked, tt.invoked})
			}
			if !reflect.DeepEqual(rec.evs, want) {
				t.Errorf("events %+v, want %+v", rec.evs, want)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	cause := errors.New("task deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	rec := &recorder{}
	out := (&Verb{Builtins: tools.NewBuiltins()}).Run(ctx, job(rec,
		map[string]any{"tool": "nika:wait", "args": map[string]any{"duration": "1h"}}, nil))
	if out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, cause) {
		t.Fatalf("outcome %+v", out)
	}
	if len(rec.evs) != 1 || rec.evs[0].fields["code"] != "NIKA-CANCEL-001" {
		t.Errorf("events %+v", rec.evs)
	}
}

func TestNilEmit(t *testing.T) {
	j := workflow.Job{Fields: map[string]any{"tool": "nika:log", "args": map[string]any{"message": "x"}}}
	if out := (&Verb{Builtins: tools.NewBuiltins()}).Run(context.Background(), j); out.Err != nil {
		t.Fatalf("error %v", out.Err)
	}
}

// A tool call is reported to the live stream as started, then finished
// with its code (D19).
func TestLiveToolCall(t *testing.T) {
	var kinds []string
	j := workflow.Job{Verb: "invoke", Attempt: 1, Iteration: -1, Emit: func(string, map[string]any) {},
		Fields: map[string]any{"tool": "nika:assert", "args": map[string]any{"condition": false}},
		Live:   func(n workflow.LiveNote) { kinds = append(kinds, n.Kind+" "+n.Tool+" "+n.Code) }}
	(&Verb{Builtins: tools.NewBuiltins()}).Run(context.Background(), j)
	if strings.Join(kinds, "|") != "tool_call_started nika:assert |tool_call_finished nika:assert NIKA-BUILTIN-ASSERT-001" {
		t.Errorf("live notes = %v", kinds)
	}
}
