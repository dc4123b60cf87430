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
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
)

// lockedRec is a canonical-event recorder safe to read from executor goroutines.
type lockedRec struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedRec) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *lockedRec) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// §13.1 / §6.2: phase 1 touches no loop state. While every call of a batch is in flight, the event
// log and the requests made are exactly what they were before the batch started, and no event
// arrives while any tool runs; the fold then reports everything in request order.
func TestPhaseOneTouchesNoLoopState(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", hashCall("1a", "a"), hashCall("1b", "b"), hashCall("1c", "c")),
		providertest.ToolCalls("", hashCall("2a", "d"), hashCall("2b", "e"), hashCall("2c", "f")),
		providertest.Reply("finished"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	var inflight, early atomic.Int32
	logged := &lockedRec{}
	emit := job.Emit
	job.Emit = func(kind string, f map[string]any) {
		if inflight.Load() > 0 {
			early.Add(1)
		}
		emit(kind, f)
		logged.add(ev.lines[len(ev.lines)-1])
	}
	type seen struct {
		events   []string
		requests int
	}
	var mu sync.Mutex
	seenBy := map[string]seen{}
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var arrived [2]atomic.Int32
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		inflight.Add(1)
		defer inflight.Add(-1)
		turn := int(c.ID[0] - '1')
		if arrived[turn].Add(1) == 3 {
			close(gates[turn])
		}
		select {
		case <-gates[turn]:
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
		s := seen{events: logged.snapshot(), requests: len(p.Requests())}
		mu.Lock()
		seenBy[c.ID] = s
		mu.Unlock()
		return "r:" + c.ID, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := v.Run(ctx, job)
	if out.Err != nil || out.Output != "finished" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	if n := early.Load(); n != 0 {
		t.Fatalf("%d events arrived while a tool was in flight", n)
	}
	final := logged.snapshot()
	for turn := 1; turn <= 2; turn++ {
		checkpoint := fmt.Sprintf(`agent_budget_checkpoint {"budget":null,"total_tokens":0,"turn":%d}`, turn)
		cut := slices.Index(final, checkpoint)
		if cut < 0 {
			t.Fatalf("no checkpoint for turn %d in %v", turn, final)
		}
		want := final[:cut+1] // everything up to the batch's own request, nothing of its fold
		for _, id := range []string{"a", "b", "c"} {
			s, ok := seenBy[fmt.Sprint(turn)+id]
			if !ok {
				t.Fatalf("call %d%s not run", turn, id)
			}
			if !slices.Equal(s.events, want) {
				t.Fatalf("call %d%s saw events\n%v\nwant\n%v", turn, id, s.events, want)
			}
			if s.requests != turn {
				t.Fatalf("call %d%s saw %d requests, want %d", turn, id, s.requests, turn)
			}
		}
	}
	// The fold reported every call, in request order, and fed back every result, in request order.
	var idx []string
	for _, l := range final {
		if rest, ok := strings.CutPrefix(l, "tool_invoked "); ok {
			var f map[string]any
			_ = json.Unmarshal([]byte(rest), &f)
			idx = append(idx, fmt.Sprint(f["turn"], "/", f["index"]))
		}
	}
	if !slices.Equal(idx, []string{"1/0", "1/1", "1/2", "2/0", "2/1", "2/2"}) {
		t.Fatalf("tool_invoked %v", idx)
	}
	reqs := p.Requests()
	for turn, ids := range [][]string{{"1a", "1b", "1c"}, {"2a", "2b", "2c"}} {
		last := reqs[turn+1].Messages[len(reqs[turn+1].Messages)-1]
		var got []string
		for _, b := range last.Blocks {
			got = append(got, b.ToolUseID+"="+b.Content)
		}
		want := make([]string, len(ids))
		for i, id := range ids {
			want[i] = id + "=r:" + id
		}
		if !slices.Equal(got, want) {
			t.Fatalf("turn %d fed back %v", turn+1, got)
		}
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

// nativeScripted is a scripted provider that reports native schema support (provider.NativeSchema).
type nativeScripted struct{ *providertest.Scripted }

func (nativeScripted) SupportsSchema(string) bool { return true }

var _ provider.NativeSchema = nativeScripted{}

// §13.2 / §5.4: the re-ask is tools-off, carries Request.Schema iff the provider reports native
// support, and the re-ask text is exact.
func TestSchemaReaskIsToolsOffWithNativeFormat(t *testing.T) {
	for _, native := range []bool{true, false} {
		sp := providertest.NewScripted(providertest.Reply("forty-two"), providertest.Reply(`{"answer":42}`))
		var p provider.Provider = sp
		if native {
			p = nativeScripted{sp}
		}
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": answerSchema}, 8)
		out := v.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		reqs := sp.Requests()
		if len(reqs) != 2 {
			t.Fatalf("native=%v: %d requests", native, len(reqs))
		}
		re := reqs[1]
		if len(re.Tools) != 0 || re.ToolChoice != provider.ChoiceNone {
			t.Fatalf("native=%v: re-ask offers tools", native)
		}
		if native {
			if b, _ := json.Marshal(re.Schema); re.Schema == nil || !strings.Contains(string(b), `"required":["answer"]`) {
				t.Fatalf("native re-ask schema %s", b)
			}
		} else if re.Schema != nil {
			t.Fatalf("non-native re-ask carries a schema: %v", re.Schema)
		}
		want := "Your previous reply does not match the required output schema. Validation error: no JSON value found in the reply. " +
			"Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n" +
			`{"properties":{"answer":{"type":"integer"}},"required":["answer"],"type":"object"}`
		last := re.Messages[len(re.Messages)-1]
		if len(last.Blocks) != 1 || last.Blocks[0].Text != want {
			t.Fatalf("re-ask text %q", last.Blocks[0].Text)
		}
	}
}

// §13.2 / §5.4 step 2: nika:done among siblings under schema, with a prose answer: the re-ask
// transcript holds no tool_use without a result, keeps the prose, and nothing was dispatched.
func TestDoneAmongSiblingsUnderSchemaStripsOrphanToolUse(t *testing.T) {
	sp := providertest.NewScripted(
		providertest.ToolCalls("the answer is forty-two", hashCall("h1", "x"),
			providertest.Call{ID: "d", Name: "nika:done", Input: `{}`}, hashCall("h2", "y")),
		providertest.Reply(`{"answer":42}`))
	v, job, ev := setup(t, nativeScripted{sp}, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:done"}, "schema": answerSchema}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if m, ok := out.Output.(map[string]any); !ok || m["answer"] != 42 {
		t.Fatalf("output %#v", out.Output)
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatal("a sibling of nika:done was dispatched")
	}
	reqs := sp.Requests()
	if len(reqs) != 2 || reqs[1].Schema == nil || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d requests; re-ask schema %v tools %d", len(reqs), reqs[1].Schema, len(reqs[1].Tools))
	}
	uses, results := map[string]bool{}, map[string]bool{}
	for _, m := range reqs[1].Messages {
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockToolUse:
				uses[b.ID] = true
			case provider.BlockToolResult:
				results[b.ToolUseID] = true
			}
		}
	}
	for id := range uses {
		if !results[id] {
			t.Fatalf("orphan tool_use %q in the re-ask transcript", id)
		}
	}
	asst := reqs[1].Messages[1]
	if asst.Role != provider.RoleAssistant || len(asst.Blocks) != 1 || asst.Blocks[0].Text != "the answer is forty-two" {
		t.Fatalf("stripped assistant message %+v", asst)
	}
}

// §13.3 / §7.1: the same call polled with results that change every time never trips the guard.
func TestPollingWithChangingResultsNeverTrips(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("polling", providertest.Call{ID: fmt.Sprint("p", i), Name: "nika:hash", Input: `{"content":"status"}`}))
	}
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_turns": 4}, 8)
	var n atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		return fmt.Sprintf("progress %d%%", n.Add(1)*25), nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeMaxTurns {
		t.Fatalf("got %v", out.Err)
	}
	if countPrefix(ev.lines, event.AgentNudge) != 0 || countPrefix(ev.lines, event.AgentStalled) != 0 {
		t.Fatalf("guard tripped: %v", ev.lines)
	}
	if got := len(p.Requests()); got != 4 || n.Load() != 3 {
		t.Fatalf("%d requests, %d calls", got, n.Load())
	}
}

// §13.3 / §7.3-7.5: two all-error turns with different args draw the error-streak nudge, exact text,
// period 0; the run completes in 3 turns.
func TestErrorStreakDrawsNudge(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "e1", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", providertest.Call{ID: "e2", Name: "nika:jq", Input: `{"bad":2}`}),
		providertest.Reply("gave up"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:jq"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "gave up" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if len(last.Blocks) != 2 || last.Blocks[0].Type != provider.BlockToolResult || !last.Blocks[0].IsError ||
		last.Blocks[1].Type != provider.BlockText || last.Blocks[1].Text != guard.ErrorStreakText {
		t.Fatalf("request 3 last message %+v", last.Blocks)
	}
	if prev := reqs[1].Messages[len(reqs[1].Messages)-1]; len(prev.Blocks) != 1 {
		t.Fatalf("nudge after one failing turn: %+v", prev.Blocks)
	}
	var nudges []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, event.AgentNudge+" ") {
			nudges = append(nudges, l)
		}
	}
	if !slices.Equal(nudges, []string{`agent_nudge {"period":0,"reason":"error_streak","turn":2}`}) {
		t.Fatalf("nudges %v", nudges)
	}
}

// §13.3 / §7.3: stall is checked first, so a preceding nudge never masks it: with NudgeAfter >=
// StallAfter the stall fires at NudgeAfter+1, and an error-streak nudge does not postpone the
// default stall at the fifth repeat.
func TestStallIsNeverMaskedByNudge(t *testing.T) {
	t.Run("NudgeAfterAtLeastStallAfter", func(t *testing.T) {
		p := providertest.NewScripted()
		for i := range 9 {
			p.Push(providertest.ToolCalls("working", sameHash(fmt.Sprint("s", i))))
		}
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_turns": 20}, 8)
		v.Config.Guard = guard.Config{NudgeAfter: 5, StallAfter: 3}
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["repeats"] != 6 || out.Err.Details["period"] != 1 {
			t.Fatalf("got %v", out.Err)
		}
		if n := len(p.Requests()); n != 6 {
			t.Fatalf("%d requests, want 6", n)
		}
		k := kindsOf(ev)
		if countPrefix(ev.lines, `agent_nudge {"period":1,"reason":"repeated_actions","turn":5}`) != 1 ||
			countPrefix(ev.lines, event.AgentNudge) != 1 || k[len(k)-1] != event.AgentStalled ||
			ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":6,"turn":6}` {
			t.Fatalf("events %v", ev.lines)
		}
	})
	t.Run("AfterErrorStreakNudge", func(t *testing.T) {
		p := providertest.NewScripted()
		for i := range 7 {
			p.Push(providertest.ToolCalls("trying", providertest.Call{ID: fmt.Sprint("e", i), Name: "nika:jq", Input: `{"bad":1}`}))
		}
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:jq"}}, 8)
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["repeats"] != 5 {
			t.Fatalf("got %v", out.Err)
		}
		if n := len(p.Requests()); n != 5 {
			t.Fatalf("%d requests, want 5", n)
		}
		if countPrefix(ev.lines, `agent_nudge {"period":0,"reason":"error_streak","turn":2}`) != 1 ||
			countPrefix(ev.lines, event.AgentNudge) != 1 ||
			ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":5,"turn":5}` {
			t.Fatalf("events %v", ev.lines)
		}
	})
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
