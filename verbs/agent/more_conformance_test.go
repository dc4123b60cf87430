package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// §10.1 as amended by D18/D40: inside a dispatch turn the order is agent_tools_selected,
// agent_budget_checkpoint, one tool_invoked per call in request order; tool_invoked carries
// exactly {tool, is_error, code?, turn, index}.
func TestEventOrderWithinTurnAndToolInvokedFields(t *testing.T) {
	p := providertest.NewScripted(
		usageOf(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "b", Name: "nika:jq", Input: `{}`}, hashCall("c", "3")), 7, 3),
		usageOf(providertest.Reply("fin"), 5, 5),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:jq"}}, 8)
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if c.Name == "nika:jq" {
			return "", nil, spec.NewError("NIKA-BUILTIN-001", "bad jq args", nil)
		}
		if c.Index == 0 {
			time.Sleep(2 * time.Millisecond) // finishes last: events must still follow request order
		}
		return "ok", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "fin" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	want := []string{
		`agent_tools_selected {"builtin":2,"mcp":0,"offered":2,"other":0,"turn":1,"universe":2}`,
		`infer_completed {"input_tokens":7,"model":"test/m","output_tokens":3,"turn":1,"usage_reported":true}`,
		`agent_budget_checkpoint {"budget":null,"total_tokens":10,"turn":1}`,
		`tool_invoked {"index":0,"is_error":false,"tool":"nika:hash","turn":1}`,
		`tool_invoked {"code":"NIKA-BUILTIN-001","index":1,"is_error":true,"tool":"nika:jq","turn":1}`,
		`tool_invoked {"index":2,"is_error":false,"tool":"nika:hash","turn":1}`,
		`agent_tools_selected {"builtin":2,"mcp":0,"offered":2,"other":0,"turn":2,"universe":2}`,
		`infer_completed {"input_tokens":5,"model":"test/m","output_tokens":5,"turn":2,"usage_reported":true}`,
		`agent_budget_checkpoint {"budget":null,"total_tokens":20,"turn":2}`,
	}
	if !slices.Equal(ev.lines, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(ev.lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range ev.lines {
		if strings.Contains(l, `"error"`) || strings.Contains(l, `"name"`) {
			t.Fatalf("pre-D18 field in %s", l)
		}
	}
}

// §10.1: a nudge closes its turn, after every tool_invoked; a budget is reported when set.
func TestNudgeIsLastEventOfItsTurn(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a")), providertest.ToolCalls("", sameHash("b")),
		providertest.ToolCalls("", sameHash("c")), providertest.Reply("ok"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 1000}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	k := kindsOf(ev)
	i := slices.Index(k, event.AgentNudge)
	if i < 0 || k[i-1] != event.ToolInvoked || k[i+1] != event.AgentToolsSelected {
		t.Fatalf("kinds %v", k)
	}
	if !slices.Contains(ev.lines, `agent_budget_checkpoint {"budget":1000,"total_tokens":0,"turn":1}`) {
		t.Fatalf("events %v", ev.lines)
	}
}

// gateProvider answers every request with a reply naming its model once `need` requests are in
// flight at the same time (a rendezvous: sequential jobs would hang); the test bounds the wait.
type gateProvider struct {
	mu      sync.Mutex
	waiting int
	need    int
	open    chan struct{}
}

func (g *gateProvider) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.need {
		close(g.open)
	}
	g.mu.Unlock()
	out := make([]provider.Outcome, len(reqs))
	for i, r := range reqs {
		select {
		case <-g.open:
			out[i] = providertest.Reply("answer from " + r.Model + " to " + r.Messages[0].Blocks[0].Text)
		case <-ctx.Done():
			out[i] = providertest.Fail(provider.ReasonCancelled)
		}
	}
	return out
}

// §11.3 / D5: RunBatch runs the jobs' loops concurrently and returns one outcome per job in
// job order; a failing job (bad field, panic) is an outcome beside the others; each job's
// events go to that job's own emitter, so the runtime stamps them with its task, attempt and
// iteration.
func TestRunBatchRunsJobsConcurrentlyOneOutcomePerJobInOrder(t *testing.T) {
	g := &gateProvider{need: 3, open: make(chan struct{})}
	reg := provider.NewRegistry()
	reg.Register("test", g)
	v := &Verb{Providers: reg, Builtins: tools.NewBuiltins()}
	recs := make([]*rec, 5)
	jobs := make([]workflow.Job, 5)
	for i := range jobs {
		recs[i] = &rec{}
		jobs[i] = workflow.Job{Verb: "agent", Model: "test/m", Attempt: 1, Iteration: i, Emit: recs[i].emit,
			Fields: map[string]any{"prompt": fmt.Sprint("item ", i), "tools": []any{"nika:hash"}}}
	}
	jobs[1].Fields = map[string]any{"prompt": "  "} // fails at arming
	jobs[3].Emit = func(string, map[string]any) { panic("boom\nsecond line") }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outs := v.RunBatch(ctx, jobs)
	if len(outs) != len(jobs) {
		t.Fatalf("%d outcomes", len(outs))
	}
	for _, i := range []int{0, 2, 4} {
		if outs[i].Err != nil || outs[i].Output != fmt.Sprint("answer from test/m to item ", i) || len(outs[i].Usage) != 1 {
			t.Fatalf("job %d: %v %v (sequential jobs never meet the rendezvous)", i, outs[i].Output, outs[i].Err)
		}
		if len(recs[i].lines) != 3 || !strings.HasPrefix(recs[i].lines[0], event.AgentToolsSelected) || !strings.HasPrefix(recs[i].lines[1], event.InferCompleted) {
			t.Fatalf("job %d events %v", i, recs[i].lines)
		}
	}
	if outs[1].Err == nil || outs[1].Err.Code != spec.CodeVarRuntime || len(recs[1].lines) != 0 {
		t.Fatalf("job 1: %v %v", outs[1].Err, recs[1].lines)
	}
	if outs[3].Err == nil || outs[3].Err.Code != CodePanic || outs[3].Err.Details["panic"] != "boom second line" {
		t.Fatalf("job 3: %v", outs[3].Err)
	}
	if got := v.RunBatch(ctx, nil); len(got) != 0 {
		t.Fatalf("empty batch: %v", got)
	}
}

// §11.3: Run is RunBatch of one.
func TestRunIsBatchOfOne(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("one"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p"}, 8)
	outs := v.RunBatch(context.Background(), []workflow.Job{job})
	if len(outs) != 1 || outs[0].Err != nil || outs[0].Output != "one" {
		t.Fatalf("%+v", outs)
	}
}

// §13.2: control character, padding and a 257-byte name each fail NIKA-SEC-002 with zero dispatch
// (an allowed sibling before the offender included); details.tool is redacted.
func TestUncleanNameFailsWithZeroDispatch(t *testing.T) {
	long := "nika:" + strings.Repeat("h", 252)
	for _, bad := range []string{"nika:ha\x07sh", " nika:hash", "nika:hash ", long} {
		p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "x", Name: bad, Input: `{}`}))
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
		var execs atomic.Int32
		v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
			execs.Add(1)
			return "", nil, nil
		}
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeWhitelist {
			t.Fatalf("%q: %v", bad, out.Err)
		}
		tool, _ := out.Err.Details["tool"].(string)
		if len([]rune(tool)) > 64 || strings.ContainsFunc(tool, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("%q: details.tool %q", bad, tool)
		}
		if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
			t.Fatalf("%q: dispatched", bad)
		}
	}
}

// §13.2: max_turns out of range fails at arming, before any request; 1 and 1000 are accepted.
func TestMaxTurnsRangeIsEnforced(t *testing.T) {
	for _, n := range []any{0, 1001, -1} {
		p := providertest.NewScripted(providertest.Reply("x"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "max_turns": n}, 8)
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Details["field"] != "max_turns" || len(p.Requests()) != 0 {
			t.Fatalf("max_turns %v: %v, %d requests", n, out.Err, len(p.Requests()))
		}
	}
	for _, n := range []any{1, 1000} {
		p := providertest.NewScripted(providertest.Reply("x"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "max_turns": n}, 8)
		if out := v.Run(context.Background(), job); out.Err != nil {
			t.Fatalf("max_turns %v: %v", n, out.Err)
		}
	}
	t.Run("check", maxTurnsRangeByCheck)
}

// maxTurnsCheckErrors reports whether `nika check` (spec.CheckSource) finds
// an error on the max_turns field for the given literal.
func maxTurnsCheckErrors(t *testing.T, lit string) bool {
	t.Helper()
	src := "nika: v1\nworkflow: w\nmodel: mock/echo\nvars:\n  n: {type: integer, default: 3}\ntasks:\n  - id: a\n    agent:\n      prompt: hi\n      max_turns: " + lit + "\n"
	a := spec.CheckSource("w.nika.yaml", []byte(src), spec.CheckOptions{})
	for _, f := range a.Findings {
		if f.IsError() && strings.Contains(f.Path, "max_turns") {
			return true
		}
	}
	return false
}

// maxTurnsRangeByCheck is the check half of AGENT.md §13.2's max_turns range — 0, 1001 and an
// expression are rejected by check; 1 and 1000 pass.
func maxTurnsRangeByCheck(t *testing.T) {
	for _, lit := range []string{"0", "1001", `"${{ vars.n }}"`} {
		if !maxTurnsCheckErrors(t, lit) {
			t.Errorf("max_turns %s accepted by check", lit)
		}
	}
	for _, lit := range []string{"1", "1000"} {
		if maxTurnsCheckErrors(t, lit) {
			t.Errorf("max_turns %s rejected by check", lit)
		}
	}
}

// §13.2 / §3 step 2: a schema that does not compile is NIKA-INFER-002 stage compile, no request.
func TestSchemaCompileFailsBeforeAnyRequest(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("x"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": map[string]any{"type": 12}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageCompile {
		t.Fatalf("got %v", out.Err)
	}
	if len(p.Requests()) != 0 || len(ev.lines) != 0 {
		t.Fatalf("%d requests, events %v", len(p.Requests()), ev.lines)
	}
}

func doneCall(input string) providertest.Call {
	return providertest.Call{ID: "d", Name: "nika:done", Input: input}
}

// §5.3: a result that is a value is the output as it is.
func TestDoneWithResultIsExplicitStructured(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("prose", doneCall(`{"result":{"n":[1,2]}}`)))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}}, 8)
	out := v.Run(context.Background(), job)
	m, ok := out.Output.(map[string]any)
	if out.Err != nil || !ok || fmt.Sprint(m["n"]) != "[1 2]" {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
}

// §5.3: no result (or input not an object) → the last assistant text, also from an earlier turn.
func TestDoneWithoutResultUsesLastText(t *testing.T) {
	for _, in := range []string{`{}`, `[1]`, `"x"`} {
		p := providertest.NewScripted(
			providertest.ToolCalls("the answer is 7", hashCall("a", "1")),
			providertest.ToolCalls("", doneCall(in)))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done", "nika:hash"}}, 8)
		out := v.Run(context.Background(), job)
		if out.Err != nil || out.Output != "the answer is 7" {
			t.Fatalf("input %s: %#v %v", in, out.Output, out.Err)
		}
	}
}

// §5.3: a string result holding JSON is replaced by the parsed value; other strings stay strings.
func TestDoneJSONStringIsUnwrapped(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", doneCall(`{"result":"{\"answer\": 42}"}`)))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if m, ok := out.Output.(map[string]any); out.Err != nil || !ok || m["answer"] != 42 {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
	p = providertest.NewScripted(providertest.ToolCalls("", doneCall(`{"result":"plain words"}`)))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}}, 8)
	if out := v.Run(context.Background(), job); out.Err != nil || out.Output != "plain words" {
		t.Fatalf("%#v %v", out.Output, out.Err)
	}
}

// §13.2: a rate-limited provider outcome at turn 2 fails NIKA-INFER-001, transient.
func TestInferenceErrorMidLoopKeepsTransience(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1")), providertest.Fail(provider.ReasonRateLimited))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != "NIKA-INFER-001" || !out.Err.Transient || provider.ReasonOf(out.Err) != provider.ReasonRateLimited {
		t.Fatalf("got %+v", out.Err)
	}
	if len(out.Usage) != 1 || len(p.Requests()) != 2 {
		t.Fatalf("usage %v, %d requests", out.Usage, len(p.Requests()))
	}
	// A non-transient reason stays non-transient.
	p = providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1")), providertest.Fail(provider.ReasonAuthFailed))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	if out := v.Run(context.Background(), job); out.Err == nil || out.Err.Transient {
		t.Fatalf("got %+v", out.Err)
	}
}

// offeredNames returns the tool names of every request.
func offeredNames(reqs []provider.Request) [][]string {
	out := make([][]string, len(reqs))
	for i, r := range reqs {
		for _, d := range r.Tools {
			out[i] = append(out[i], d.Name)
		}
	}
	return out
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
