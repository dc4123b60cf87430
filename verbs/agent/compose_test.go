package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

func TestComposeBrokenDraft(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "k", Name: "nika:compose", Input: `{"workflow_yaml":"nika: v1\ntasks:\n  - id: a\n    infer: {prompt: hi}\n    depends_on: [missing]\n"}`}),
		providertest.Reply("done"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := p.Requests()
	msgs := reqs[1].Messages
	res := msgs[len(msgs)-1].Blocks[0]
	if !res.IsError || !strings.HasPrefix(res.Content, `{"valid":false`) || !strings.Contains(res.Content, "NIKA-") {
		t.Fatalf("compose result %+v", res)
	}
	found := false
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "agent_compose_checked") && strings.Contains(l, `"valid":false`) {
			found = true
		}
		if strings.HasPrefix(l, "tool_invoked") {
			t.Fatalf("compose emitted tool_invoked: %s", l)
		}
	}
	if !found {
		t.Fatalf("no compose event: %v", ev.lines)
	}
}

// §13.5 (D31): a valid draft is checked, never run: the exec task in it would create a file.
func TestComposeValidDraftNeverExecutes(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	draft := fmt.Sprintf("nika: v1\nworkflow: draft\npermits:\n  exec: true\ntasks:\n  - id: a\n    exec:\n      command: [\"touch\", %q]\n  - id: b\n    depends_on: [a]\n    exec:\n      command: [\"touch\", %q]\n", marker, marker)
	args, _ := json.Marshal(map[string]string{"workflow_yaml": draft})
	p := providertest.NewScripted(providertest.ToolCalls("", providertest.Call{ID: "k", Name: "nika:compose", Input: string(args)}), providertest.Reply("checked"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := p.Requests()
	res := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks[0]
	var c map[string]any
	if err := json.Unmarshal([]byte(res.Content), &c); err != nil {
		t.Fatal(err)
	}
	if res.IsError || c["valid"] != true || c["stage"] != "check" || c["tasks"] != 2.0 || c["waves"] != 2.0 || c["certificate"] != nil {
		t.Fatalf("compose result %s", res.Content)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the draft ran: %v", err)
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 ||
		countPrefix(ev.lines, `agent_compose_checked {"turn":1,"valid":true,"violations":0}`) != 1 {
		t.Fatalf("execs %d events %v", execs.Load(), ev.lines)
	}
}

// AGENT.md §13.5 as amended by D31/D40: a broken draft, then a valid one,
// then text — 3 turns, nothing executed, round 1 names a NIKA- code, round 2
// is valid (D31 shape: no certificate), compose events [false, true].
func TestComposeRepairLoopConvergesAndNeverExecutes(t *testing.T) {
	broken := "nika: v1\ntasks:\n  - id: a\n    infer: {prompt: hi}\n    depends_on: [missing]\n"
	valid := "nika: v1\nworkflow: draft\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: {prompt: hi}\n"
	arg := func(y string) string {
		b, _ := json.Marshal(map[string]string{"workflow_yaml": y})
		return string(b)
	}
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "k1", Name: "nika:compose", Input: arg(broken)}),
		providertest.ToolCalls("", providertest.Call{ID: "k2", Name: "nika:compose", Input: arg(valid)}),
		providertest.Reply("converged"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "converged" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d turns", len(reqs))
	}
	r1 := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks[0]
	r2 := reqs[2].Messages[len(reqs[2].Messages)-1].Blocks[0]
	if !r1.IsError || !strings.Contains(r1.Content, "NIKA-") {
		t.Fatalf("round 1 %+v", r1)
	}
	if r2.IsError || !strings.Contains(r2.Content, `"valid":true`) || strings.Contains(r2.Content, "certificate") {
		t.Fatalf("round 2 %+v", r2)
	}
	var flags []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "agent_compose_checked") {
			if strings.Contains(l, `"valid":true`) {
				flags = append(flags, "true")
			} else {
				flags = append(flags, "false")
			}
		}
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 || strings.Join(flags, ",") != "false,true" {
		t.Fatalf("execs %d, compose flags %v, events %v", execs.Load(), flags, ev.lines)
	}
}

// §13.5 / §9 (D31): args and parse failures give their exact result shapes, is_error, violations 1.
func TestComposeArgsAndParseErrors(t *testing.T) {
	argsErr := `{"valid":false,"stage":"args","error":"NIKA-BUILTIN-001 · nika:compose needs a string workflow_yaml"}`
	badYAML, _ := json.Marshal(map[string]string{"workflow_yaml": "nika: v1\ntasks: [\n  - id: a\n    infer: {prompt: \"unterminated\n"})
	p := providertest.NewScripted(
		providertest.ToolCalls("",
			providertest.Call{ID: "missing", Name: "nika:compose", Input: `{}`},
			providertest.Call{ID: "number", Name: "nika:compose", Input: `{"workflow_yaml":5}`},
			providertest.Call{ID: "parse", Name: "nika:compose", Input: string(badYAML)}),
		providertest.Reply("done"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := p.Requests()
	blocks := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks
	if len(blocks) != 3 {
		t.Fatalf("blocks %+v", blocks)
	}
	for i, b := range blocks[:2] {
		if !b.IsError || b.Content != argsErr {
			t.Fatalf("args result %d: %+v", i, b)
		}
	}
	var res map[string]any
	pb := blocks[2]
	if err := json.Unmarshal([]byte(pb.Content), &res); err != nil {
		t.Fatal(err)
	}
	msg, _ := res["error"].(string)
	if !pb.IsError || !strings.HasPrefix(pb.Content, `{"valid":false,"stage":"parse","error":"NIKA-`) ||
		!strings.Contains(msg, dispatch.Separator) || len(res) != 3 {
		t.Fatalf("parse result %s", pb.Content)
	}
	var checked []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, event.AgentComposeChecked+" ") {
			checked = append(checked, l)
		}
	}
	one := `agent_compose_checked {"turn":1,"valid":false,"violations":1}`
	if !slices.Equal(checked, []string{one, one, one}) || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("events %v", ev.lines)
	}
}

// §13.1 / §6.2: two compose checks of one batch produce agent_compose_checked in request order.
func TestConcurrentComposeChecksReportInRequestOrder(t *testing.T) {
	valid, _ := json.Marshal(map[string]string{"workflow_yaml": "nika: v1\nworkflow: ok\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: {prompt: hi}\n"})
	broken, _ := json.Marshal(map[string]string{"workflow_yaml": "nika: v1\ntasks:\n  - id: a\n    infer: {prompt: hi}\n    depends_on: [missing]\n"})
	for _, order := range [][2]string{{string(valid), string(broken)}, {string(broken), string(valid)}} {
		p := providertest.NewScripted(
			providertest.ToolCalls("", providertest.Call{ID: "k1", Name: "nika:compose", Input: order[0]},
				providertest.Call{ID: "k2", Name: "nika:compose", Input: order[1]}),
			providertest.Reply("done"))
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:compose"}}, 8)
		if out := v.Run(context.Background(), job); out.Err != nil {
			t.Fatal(out.Err)
		}
		var flags []bool
		for _, l := range ev.lines {
			if rest, ok := strings.CutPrefix(l, event.AgentComposeChecked+" "); ok {
				var f map[string]any
				_ = json.Unmarshal([]byte(rest), &f)
				flags = append(flags, f["valid"] == true)
			}
		}
		want := []bool{order[0] == string(valid), order[1] == string(valid)}
		if !slices.Equal(flags, want) {
			t.Fatalf("compose_checked valid flags %v, want %v", flags, want)
		}
	}
}
