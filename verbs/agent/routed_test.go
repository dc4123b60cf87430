package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

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
