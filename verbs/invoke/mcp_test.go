package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/mcp"
	"github.com/nikahq/nika/workflow"
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

// The MCP client is a source that passes progress on.
var _ tools.ProgressCaller = (*mcp.Client)(nil)

// A server's notifications/progress for an mcp: call reach the live stream as tool_call_progress
// notes, between the call's started and finished (D19): through the real MCP client, over an
// in-memory server whose tool reports twice before answering.
func TestLiveToolCallProgress(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "v1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "build", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return nil, errors.New("no progress token")
			}
			for i := 1; i <= 2; i++ {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, err
				}
			}
			// the client handles what the server sends in order: once it answers the ping, it has
			// handled both notifications
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "built"}}}, nil
		})
	reg, err := mcp.Parse("reg.json", []byte(`{"slow": {"command": "in-memory"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(reg, mcp.Options{Dial: func(ctx context.Context, _ string, _ mcp.Server) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}})
	defer c.Close()
	var mu sync.Mutex
	var notes []string
	j := job(&recorder{}, map[string]any{"tool": "mcp:slow/build"}, nil)
	j.Live = func(n workflow.LiveNote) {
		mu.Lock()
		if n.Kind == "tool_call_progress" {
			notes = append(notes, fmt.Sprintf("%s %s %v/%v %s", n.Kind, n.Tool, n.Progress, n.Total, n.Message))
		} else {
			notes = append(notes, n.Kind+" "+n.Tool)
		}
		mu.Unlock()
	}
	out := (&Verb{Tools: c}).Run(context.Background(), j)
	if out.Err != nil || out.Output != "built" {
		t.Fatalf("outcome = %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "tool_call_started mcp:slow/build|tool_call_progress mcp:slow/build 1/2 step 1|tool_call_progress mcp:slow/build 2/2 step 2|tool_call_finished mcp:slow/build"
	if got := strings.Join(notes, "|"); got != want {
		t.Errorf("live notes = %s, want %s", got, want)
	}
}
