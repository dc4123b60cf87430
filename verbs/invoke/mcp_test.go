package invoke

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
)

// fakeSource is a tools.Source that records its calls.
type fakeSource struct {
	mu    sync.Mutex
	calls []string
	args  []map[string]any
	out   any
	err   error
}

func (f *fakeSource) Servers() []string { return []string{"gh"} }
func (f *fakeSource) List(context.Context, string) ([]tools.Def, error) {
	return nil, nil
}
func (f *fakeSource) Call(_ context.Context, name string, args map[string]any) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	f.args = append(f.args, args)
	return f.out, f.err
}

func TestRunMCP(t *testing.T) {
	failure := spec.NewError("NIKA-MCP-002", "rate limited by the server", map[string]any{"tool": "mcp:gh/search"})
	tests := []struct {
		name    string
		src     *fakeSource
		permits *spec.Permits
		want    any
		code    string
		called  bool
	}{
		{name: "output passes through", src: &fakeSource{out: map[string]any{"total": 2}}, want: map[string]any{"total": 2}, called: true},
		{name: "permitted", src: &fakeSource{out: "ok"}, permits: &spec.Permits{Tools: []string{"mcp:gh/*"}, ToolsSet: true}, want: "ok", called: true},
		{name: "permits.tools is checked before the call", src: &fakeSource{out: "ok"}, permits: &spec.Permits{Tools: []string{"nika:*", "mcp:fs/*"}, ToolsSet: true},
			code: "NIKA-SEC-004"},
		{name: "the source's error is the outcome's", src: &fakeSource{err: failure}, code: "NIKA-MCP-002", called: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			v := &Verb{Builtins: tools.NewBuiltins(), Tools: tc.src}
			out := v.Run(context.Background(), job(rec, map[string]any{"tool": "mcp:gh/search", "args": map[string]any{"q": "bug"}}, tc.permits))
			if tc.code != "" {
				if out.Err == nil || out.Err.Code != tc.code {
					t.Fatalf("outcome = %+v, want %s", out, tc.code)
				}
			} else if out.Err != nil || !reflect.DeepEqual(out.Output, tc.want) {
				t.Fatalf("outcome = %+v, want %v", out, tc.want)
			}
			if called := len(tc.src.calls) > 0; called != tc.called {
				t.Fatalf("source called = %v, want %v", called, tc.called)
			}
			if tc.called && (tc.src.calls[0] != "mcp:gh/search" || !reflect.DeepEqual(tc.src.args[0], map[string]any{"q": "bug"})) {
				t.Errorf("source got %v %v", tc.src.calls, tc.src.args)
			}
			if len(rec.evs) != 1 || rec.evs[0].kind != event.ToolInvoked || rec.evs[0].fields["is_error"] != (tc.code != "") {
				t.Errorf("events = %+v, want one tool_invoked", rec.evs)
			}
		})
	}
}
