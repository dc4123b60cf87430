package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// §13.4: with a universe at or above MinUniverse, a turn offers a narrowed list and
// agent_tools_selected counts it.
func TestRoutingNarrowsRequestToolList(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("ok"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "compute the sha256 hash digest of this content", "tools": []any{"nika:*"}}, 8)
	v.Config.Router = router.Config{MinUniverse: 8, TopK: 2}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	var sel map[string]any
	for _, l := range ev.lines {
		if rest, ok := strings.CutPrefix(l, event.AgentToolsSelected+" "); ok {
			if err := json.Unmarshal([]byte(rest), &sel); err != nil {
				t.Fatal(err)
			}
		}
	}
	offered, universe := int(sel["offered"].(float64)), int(sel["universe"].(float64))
	tools := p.Requests()[0].Tools
	var names []string
	for _, d := range tools {
		names = append(names, d.Name)
	}
	// The universe is every builtin of this build, plus nika:done and nika:compose.
	if universe != len(v.Builtins.Names())+2 || offered >= universe || len(tools) != offered || int(sel["builtin"].(float64)) != offered ||
		!slices.Contains(names, "nika:hash") {
		t.Fatalf("selected %v, request tools %v", sel, names)
	}
	// Below MinUniverse: pass-through.
	p = providertest.NewScripted(providertest.Reply("ok"))
	v, job, ev = setup(t, p, map[string]any{"prompt": "compute the sha256 hash digest", "tools": []any{"nika:*"}}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	all := len(v.Builtins.Names()) + 2
	if n := len(p.Requests()[0].Tools); n != all || !strings.Contains(strings.Join(ev.lines, "\n"), fmt.Sprintf(`"offered":%d`, all)) {
		t.Fatalf("pass-through offered %d: %v", n, ev.lines)
	}
}

// §13.4 / §8.3: a tool used at turn 1 stays offered at turns 2 and 3 (RecencyTurns 2), not at 4.
func TestRecentlyUsedToolStaysOfferedTwoTurns(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", hashCall("a", "1")),
		providertest.ToolCalls("", providertest.Call{ID: "b", Name: "nika:jq", Input: `{"filter":"."}`}),
		providertest.ToolCalls("", providertest.Call{ID: "c", Name: "nika:jq", Input: `{"filter":".a"}`}),
		providertest.Reply("end"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "run a jq filter over json", "tools": []any{"nika:*", "!nika:done", "!nika:compose"}}, 8)
	v.Config.Router = router.Config{MinUniverse: 4, TopK: 1}
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) { return "zzz", nil, nil }
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	names := offeredNames(p.Requests())
	if len(names) != 4 || slices.Contains(names[0], "nika:hash") {
		t.Fatalf("offered %v", names)
	}
	for turn, want := range []bool{false, true, true, false} {
		if got := slices.Contains(names[turn], "nika:hash"); got != want {
			t.Fatalf("turn %d: nika:hash offered %v, want %v (offered %v)", turn+1, got, want, names)
		}
	}
}

// §13.4 / §8.3 step 5: a query with zero overlap offers the whole universe.
func TestZeroOverlapQueryFailsOpen(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("ok"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "zzz qqq xxyyzz", "tools": []any{"nika:*"}}, 8)
	v.Config.Router = router.Config{MinUniverse: 4, TopK: 1}
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	n := len(p.Requests()[0].Tools)
	if n < 4 || !strings.Contains(ev.lines[0], fmt.Sprintf(`"offered":%d,`, n)) || !strings.Contains(ev.lines[0], fmt.Sprintf(`"universe":%d}`, n)) {
		t.Fatalf("offered %d: %v", n, ev.lines[0])
	}
}

// §13.4 / §3.1 step 1: the universe holds exactly one nika:compose (and one nika:done), the
// synthesized definition of §3.2, whatever other definitions exist; this build has no upstream
// definition source, so an upstream "nika:compose" has nowhere to come from but is dropped first.
func TestPoisonedDefNeverShadowsCompose(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("ok"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	var composes, dones []provider.ToolDef
	for _, d := range p.Requests()[0].Tools {
		switch d.Name {
		case router.NameCompose:
			composes = append(composes, d)
		case router.NameDone:
			dones = append(dones, d)
		}
	}
	const desc = "Statically check a draft nika workflow without running it. Returns whether it is valid, its first findings with their NIKA codes, and its planned waves."
	const params = `{"type":"object","properties":{"workflow_yaml":{"type":"string","description":"The complete workflow YAML to check."}},"required":["workflow_yaml"]}`
	if len(composes) != 1 || len(dones) != 1 || composes[0].Description != desc || strings.Contains(composes[0].Description, "EVIL") {
		t.Fatalf("compose defs %+v, done defs %d", composes, len(dones))
	}
	var got, want any
	if err := json.Unmarshal(composes[0].Parameters, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(params), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("compose parameters %s", composes[0].Parameters)
	}
}

// wideSource is a tools.Source with one server, "big", listing 40 tools: enough for the router
// (32 or more) to offer only some of them each turn.
type wideSource struct {
	mu    sync.Mutex
	calls []string
}

func (s *wideSource) Servers() []string { return []string{"big"} }

func (s *wideSource) List(context.Context, string) ([]tools.Def, error) {
	var defs []tools.Def
	for i := range 40 {
		defs = append(defs, tools.Def{Name: fmt.Sprintf("mcp:big/tool_%02d", i),
			Description: fmt.Sprintf("Tool number %d about topic%d.", i, i),
			Params:      json.RawMessage(`{"type":"object","properties":{}}`)})
	}
	return defs, nil
}

func (s *wideSource) Call(_ context.Context, name string, _ map[string]any) (any, error) {
	s.mu.Lock()
	s.calls = append(s.calls, name)
	s.mu.Unlock()
	return "done by " + name, nil
}

// AGENT.md §5.2(b): the whitelist decides, not the offered set. A model that calls an admitted
// tool the router did not offer this turn (it saw it in an earlier turn, or guessed its wire
// name) gets it run, not NIKA-SEC-002. Built as `nika run` builds it: the OpenAI-compatible
// adapter behind a Front, against a local server that answers with the wire name of a tool
// missing from the request's tools.
func TestRoutedOutToolIsAdmitted(t *testing.T) {
	var mu sync.Mutex
	var called string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body.Messages) > 1 { // the tool result came back: finish
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"finished"},"finish_reason":"stop"}]}`)
			return
		}
		var offered []string
		for _, t := range body.Tools {
			offered = append(offered, t.Function.Name)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range 40 {
			if n := fmt.Sprintf("mcp_big_tool_%02d", i); !slices.Contains(offered, n) {
				called = n
				break
			}
		}
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":%q,"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, called)
	}))
	defer srv.Close()

	prof, _ := openai.Lookup("openai")
	a, err := openai.New(prof, func(k string) (string, bool) {
		return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1"}[k], true
	}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry()
	reg.Register("openai", provider.NewFront("openai", a, provider.FrontConfig{}))
	src := &wideSource{}
	v := &Verb{Providers: reg, Tools: src}
	r := &rec{}
	job := workflow.Job{Verb: "agent", Model: "openai/gpt-test", Attempt: 1, Iteration: -1, Emit: r.emit,
		Fields: map[string]any{"prompt": "use the tool about topic3", "tools": []any{"mcp:big/*"}}}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatalf("agent failed: %v", out.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if called == "" {
		t.Fatal("the router offered every tool; the test needs one it left out")
	}
	want := "mcp:big/" + called[len("mcp_big_"):]
	if out.Output != "finished" || !slices.Equal(src.calls, []string{want}) {
		t.Errorf("output %v, calls %v; want finished after calling %s", out.Output, src.calls, want)
	}
}
