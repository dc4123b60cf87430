package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/mcp"
	"github.com/nikahq/nika/workflow"
)

// fakeSource is a tools.Source with three servers: fs, gh, and broken (whose list fails).
type fakeSource struct {
	mu     sync.Mutex
	listed []string
	calls  []string
}

func (f *fakeSource) Servers() []string { return []string{"broken", "fs", "gh"} }

func (f *fakeSource) List(_ context.Context, server string) ([]tools.Def, error) {
	f.mu.Lock()
	f.listed = append(f.listed, server)
	f.mu.Unlock()
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	switch server {
	case "fs":
		return []tools.Def{{Name: "mcp:fs/read_text_file", Description: "Read a file.", Params: params}, {Name: "mcp:fs/write_file", Description: "Write a file.", Params: params}}, nil
	case "gh":
		return []tools.Def{{Name: "mcp:gh/search", Description: "Search.", Params: params}}, nil
	}
	e := spec.NewError("NIKA-MCP-001", `MCP server "broken" could not start: exit status 1`, map[string]any{"server": server})
	e.Transient = true
	return nil, e
}

func (f *fakeSource) Call(_ context.Context, name string, args map[string]any) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%s %v", name, args["path"]))
	f.mu.Unlock()
	if args["path"] == "missing" {
		return nil, spec.NewError("NIKA-MCP-002", "ENOENT: no such file", map[string]any{"tool": name})
	}
	return fmt.Sprintf("content of %v", args["path"]), nil
}

func toolNames(defs []provider.ToolDef) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// The universe gains the MCP tools the whitelist and permits.tools admit, after the builtins in
// author rank; only servers some glob can reach are listed.
func TestUniverseMCPTools(t *testing.T) {
	cases := []struct {
		name     string
		tools    []any
		permits  *spec.Permits
		universe []string
		listed   []string
	}{
		{name: "one server by glob", tools: []any{"nika:hash", "mcp:fs/*"},
			universe: []string{"nika:hash", "mcp:fs/read_text_file", "mcp:fs/write_file"}, listed: []string{"fs"}},
		{name: "author rank first", tools: []any{"mcp:gh/*", "mcp:fs/read_text_file", "nika:hash"},
			universe: []string{"mcp:gh/search", "mcp:fs/read_text_file", "nika:hash"}, listed: []string{"fs", "gh"}},
		{name: "permits.tools narrows the servers listed", tools: []any{"mcp:**"}, permits: &spec.Permits{Tools: []string{"mcp:gh/*"}, ToolsSet: true},
			universe: []string{"mcp:gh/search"}, listed: []string{"gh"}},
		{name: "permits.tools drops one tool", tools: []any{"mcp:fs/*"}, permits: &spec.Permits{Tools: []string{"mcp:fs/*", "!mcp:fs/write_file"}, ToolsSet: true},
			universe: []string{"mcp:fs/read_text_file"}, listed: []string{"fs"}},
		{name: "no mcp glob lists nothing", tools: []any{"nika:hash"}, universe: []string{"nika:hash"}, listed: nil},
		{name: "one glob: one list sorted by name, mcp before nika (§2)", tools: []any{"**"},
			permits:  &spec.Permits{Tools: []string{"nika:hash", "mcp:gh/*"}, ToolsSet: true},
			universe: []string{"mcp:gh/search", "nika:hash"}, listed: []string{"gh"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := providertest.NewScripted(providertest.Reply("ok"))
			v, job, _ := setup(t, p, map[string]any{"prompt": "go", "tools": tc.tools}, 8)
			src := &fakeSource{}
			v.Tools = src
			job.Permits = tc.permits
			if out := v.Run(context.Background(), job); out.Err != nil {
				t.Fatal(out.Err)
			}
			if got := toolNames(p.Requests()[0].Tools); !reflect.DeepEqual(got, tc.universe) {
				t.Errorf("offered %v, want %v", got, tc.universe)
			}
			if !reflect.DeepEqual(src.listed, tc.listed) {
				t.Errorf("listed %v, want %v", src.listed, tc.listed)
			}
		})
	}
}

// A server whose tools cannot be listed fails the arming with NIKA-AGENT-006, transient as the
// source's error is, before any provider request.
func TestUniverseSourceFailure(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("ok"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "go", "tools": []any{"mcp:**"}}, 8)
	v.Tools = &fakeSource{}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeDefs || !out.Err.Transient {
		t.Fatalf("outcome %+v, want a transient %s", out.Err, CodeDefs)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("%d provider requests, want none", len(p.Requests()))
	}
}

// mcp: calls of one turn go to the source; their results come back in request order, an MCP
// error as an error result that the model sees.
func TestMCPCallsRoutedToSource(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("",
			providertest.Call{ID: "c-1", Name: "mcp:fs/read_text_file", Input: `{"path":"a.txt"}`},
			providertest.Call{ID: "c-2", Name: "mcp:fs/read_text_file", Input: `{"path":"missing"}`},
			providertest.Call{ID: "c-3", Name: "mcp:fs/read_text_file", Input: `{"path":"b.txt"}`}),
		providertest.Reply("read them"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "read", "tools": []any{"mcp:fs/read_*"}}, 8)
	src := &fakeSource{}
	v.Tools = src
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "read them" {
		t.Fatalf("outcome %+v", out)
	}
	if len(src.calls) != 3 {
		t.Fatalf("source calls %v", src.calls)
	}
	reqs := p.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	type res struct {
		id, content string
		isErr       bool
	}
	var got []res
	for _, b := range last.Blocks {
		got = append(got, res{b.ToolUseID, b.Content, b.IsError})
	}
	want := []res{{"c-1", "content of a.txt", false}, {"c-2", "NIKA-MCP-002 · ENOENT: no such file", true}, {"c-3", "content of b.txt", false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results %+v, want %+v", got, want)
	}
	invoked := 0
	for _, l := range ev.lines {
		if len(l) > 12 && l[:12] == "tool_invoked" {
			invoked++
		}
	}
	if invoked != 3 {
		t.Errorf("%d tool_invoked events, want 3:\n%v", invoked, ev.lines)
	}
}

// A run whose MCP registry cannot be used (mcp.Unusable) has no tool definitions to offer: an
// agent whose whitelist reaches mcp: tools fails its arming with NIKA-AGENT-006, not transient,
// saying why, instead of running silently without them; one that reaches none runs as usual.
func TestUniverseUnusableRegistry(t *testing.T) {
	src := mcp.Unusable("/etc/nika/mcp.json", errors.New("invalid character '}' looking for beginning of object key string"))
	p := providertest.NewScripted(providertest.Reply("ok"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "go", "tools": []any{"nika:hash", "mcp:fs/*"}}, 8)
	v.Tools = src
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeDefs || out.Err.Transient || !strings.Contains(out.Err.Message, "/etc/nika/mcp.json") {
		t.Fatalf("outcome %+v, want a non-transient %s naming the registry", out.Err, CodeDefs)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("%d provider requests, want none", len(p.Requests()))
	}

	p = providertest.NewScripted(providertest.Reply("ok"))
	v, job, _ = setup(t, p, map[string]any{"prompt": "go", "tools": []any{"nika:hash"}}, 8)
	v.Tools = src
	if out := v.Run(context.Background(), job); out.Err != nil || out.Output != "ok" {
		t.Fatalf("an agent without mcp: tools: %+v", out)
	}
	// permits.tools that admits no mcp: tool keeps the source out of the arming too.
	p = providertest.NewScripted(providertest.Reply("ok"))
	v, job, _ = setup(t, p, map[string]any{"prompt": "go", "tools": []any{"**"}}, 8)
	v.Tools = src
	job.Permits = &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatalf("permits.tools without mcp: %+v", out.Err)
	}
}

// The MCP client is a source that passes progress on.
var _ tools.ProgressCaller = (*mcp.Client)(nil)

// progressSource is a fakeSource whose calls report progress twice before answering, as the
// MCP client does for a server's notifications/progress.
type progressSource struct{ fakeSource }

func (p *progressSource) CallProgress(ctx context.Context, name string, args map[string]any, progress func(float64, float64, string)) (any, error) {
	progress(1, 2, "half")
	progress(2, 2, "done")
	return p.Call(ctx, name, args)
}

// An mcp: call's progress reaches the live stream as tool_call_progress notes with the call's
// turn and index, between that call's started and finished (D19).
func TestMCPCallProgressIsLive(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("",
			providertest.Call{ID: "c-1", Name: "mcp:fs/read_text_file", Input: `{"path":"a.txt"}`},
			providertest.Call{ID: "c-2", Name: "mcp:fs/read_text_file", Input: `{"path":"b.txt"}`}),
		providertest.Reply("read them"),
	)
	v, job, _ := setup(t, p, map[string]any{"prompt": "read", "tools": []any{"mcp:fs/read_*"}}, 8)
	v.Tools = &progressSource{}
	var mu sync.Mutex
	perCall := map[int][]string{}
	job.Live = func(n workflow.LiveNote) {
		if n.Tool == "" {
			return
		}
		mu.Lock()
		note := fmt.Sprintf("%s turn=%d", n.Kind, n.Turn)
		if n.Kind == "tool_call_progress" {
			note += fmt.Sprintf(" %v/%v %s", n.Progress, n.Total, n.Message)
		}
		perCall[n.Index] = append(perCall[n.Index], note)
		mu.Unlock()
	}
	if out := v.Run(context.Background(), job); out.Err != nil || out.Output != "read them" {
		t.Fatalf("outcome %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"tool_call_started turn=1", "tool_call_progress turn=1 1/2 half", "tool_call_progress turn=1 2/2 done", "tool_call_finished turn=1"}
	for i := 0; i < 2; i++ {
		if !reflect.DeepEqual(perCall[i], want) {
			t.Errorf("call %d: live notes %v, want %v", i, perCall[i], want)
		}
	}
}
