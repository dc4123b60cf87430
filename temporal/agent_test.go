package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent"
)

// agentVerbs are verbs whose agent asks a scripted model (under the mock provider's name, which
// the engine's check of providers admits): a turn of eight nika:hash calls, then nika:done.
func agentVerbs(par int) func() map[string]planner.Verb {
	return func() map[string]planner.Verb {
		calls := make([]providertest.Call, 8)
		for i := range calls {
			calls[i] = providertest.Call{ID: fmt.Sprintf("c%d", i), Name: "nika:hash", Input: fmt.Sprintf(`{"content":"item %d"}`, i)}
		}
		p := providertest.NewScripted(providertest.ToolCalls("hashing", calls...),
			providertest.ToolCalls("", providertest.Call{ID: "d", Name: "nika:done", Input: `{"result":"hashed"}`}))
		reg := provider.NewRegistry()
		reg.Register("mock", p)
		return map[string]planner.Verb{"agent": &agent.Verb{Providers: reg, Builtins: tools.NewBuiltins(), Config: agent.Config{MaxParallelTools: par}}}
	}
}

const agentSrc = `nika: v1
workflow: hashes
model: mock/echo
permits: { tools: ["nika:hash", "nika:done"] }
tasks:
  - id: hasher
    agent:
      prompt: "Hash the items."
      tools: ["nika:hash", "nika:done"]
      max_turns: 4
outputs:
  result: ${{ tasks.hasher.output }}
`

// An agent's tool batch folds in request order whatever the number of calls in flight: for
// max_parallel_tools 1 and 8 the Temporal run's trace is the local run's, with the eight
// tool_invoked events in the order the model asked for them.
func TestAgentBatchInRequestOrder(t *testing.T) {
	for _, par := range []int{1, 8} {
		t.Run(fmt.Sprint("max_parallel_tools=", par), func(t *testing.T) {
			rc := runCase{name: "agent", src: agentSrc, verbs: agentVerbs(par)}
			want, res := rc.local(t, context.Background())
			out, _ := rc.onTemporal(t, nil)
			sameLines(t, want, out.Events)
			if res.State != planner.StatusSuccess || out.State != "success" {
				t.Fatalf("states: local %s, temporal %s\n%s", res.State, out.State, strings.Join(out.Events, "\n"))
			}
			var order []string
			for _, l := range out.Events {
				var e struct {
					Kind   string
					Fields struct {
						Index int
						Tool  string
					}
				}
				if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "tool_invoked" && e.Fields.Tool == "nika:hash" {
					order = append(order, fmt.Sprint(e.Fields.Index))
				}
			}
			if got := strings.Join(order, ","); got != "0,1,2,3,4,5,6,7" {
				t.Errorf("tool_invoked order %s", got)
			}
		})
	}
}
