package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// liveRec records the live notes of one run.
type liveRec struct {
	mu    sync.Mutex
	notes []workflow.LiveNote
}

func (l *liveRec) note(n workflow.LiveNote) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, n)
}

func (l *liveRec) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.notes))
	for i, n := range l.notes {
		out[i] = n.Kind
		if n.Tool != "" {
			out[i] += " " + n.Tool
		}
		if n.Code != "" {
			out[i] += " " + n.Code
		}
	}
	return out
}

// withLive attaches a live recorder to job.
func withLive(job workflow.Job) (workflow.Job, *liveRec) {
	l := &liveRec{}
	job.Live = l.note
	return job, l
}

func kindsOf(ev *rec) []string {
	out := make([]string, len(ev.lines))
	for i, l := range ev.lines {
		out[i], _, _ = strings.Cut(l, " ")
	}
	return out
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func sameHash(id string) providertest.Call { return hashCall(id, "same") }

// §6.7 / D19: the live stream gets calls started and finished, batches, nudges and the finish; the
// canonical stream gets none of them.
func TestLiveStreamReportsCallsBatchesNudgeAndFinish(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a1"), providertest.Call{ID: "b1", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", sameHash("a2"), providertest.Call{ID: "b2", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", sameHash("a3"), providertest.Call{ID: "b3", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.Reply("fine"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:jq"}}, 8)
	job, live := withLive(job)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	var calls, batches, nudges, finished, requests int
	for _, n := range live.notes {
		switch n.Kind {
		case event.LiveToolCallStarted:
			calls++
		case event.LiveToolCallFinished:
			if n.Tool == "nika:jq" && (!n.IsError || n.Code == "" || n.Outcome != n.Code) {
				t.Fatalf("jq finished note %+v", n)
			}
			if n.Tool == "nika:hash" && (n.IsError || n.Outcome != "ok") {
				t.Fatalf("hash finished note %+v", n)
			}
		case event.LiveBatchDispatched:
			batches++
		case event.LiveAgentNudge:
			nudges++
			if n.Code != string(guard.ReasonRepeatedActions) || n.Outcome != n.Code {
				t.Fatalf("nudge note %+v", n)
			}
		case event.LiveAgentFinished:
			finished++
			if n.Outcome != "ok" || n.IsError {
				t.Fatalf("finish note %+v", n)
			}
		case event.LiveProviderRequest:
			requests++
		}
	}
	if calls != 6 || batches != 3 || nudges != 1 || finished != 1 || requests != 4 {
		t.Fatalf("calls %d batches %d nudges %d finished %d requests %d\n%v", calls, batches, nudges, finished, requests, live.kinds())
	}
	if k := live.kinds(); k[len(k)-1] != event.LiveAgentFinished {
		t.Fatalf("agent_finished is not last: %v", k)
	}
	// Each batch: batch_dispatched, then started/finished pairs, before the next provider request.
	k := live.kinds()
	if !slices.Equal(k[:2], []string{event.LiveProviderRequest, event.LiveBatchDispatched}) {
		t.Fatalf("live order %v", k)
	}
	for _, l := range ev.lines {
		kind, _, _ := strings.Cut(l, " ")
		switch kind {
		case event.LiveToolCallStarted, event.LiveToolCallFinished, event.LiveBatchDispatched, event.LiveAgentFinished, event.LiveProviderRequest:
			t.Fatalf("live kind on the canonical stream: %s", l)
		}
	}
}

func TestLiveStreamReportsStallAndFailedFinish(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("looping", sameHash(fmt.Sprint("s", i))))
	}
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	job, live := withLive(job)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeStalled {
		t.Fatalf("got %v", out.Err)
	}
	k := live.kinds()
	want := []string{event.LiveAgentStalled + " " + CodeStalled, event.LiveAgentFinished + " " + CodeStalled}
	if !slices.Equal(k[len(k)-2:], want) {
		t.Fatalf("live tail %v", k[len(k)-2:])
	}
}

// detTools are the admitted names the determinism test spreads its calls over, so that the live
// notes (which carry the tool, not the index) identify each call of a batch.
var detTools = []string{"nika:assert", "nika:convert", "nika:date", "nika:emit", "nika:hash", "nika:jq",
	"nika:log", "nika:read", "nika:uuid", "nika:validate", "nika:wait", "nika:write"}

type detArgs struct {
	Mode  string `json:"mode"` // ok, error, panic, block (waits for its call timeout)
	Delay int    `json:"delay_us"`
	Val   string `json:"val"`
}

// detExec honours a per-call delay carried in its arguments (so latencies differ per round while
// the transcript stays the same), and returns results that depend on the arguments only.
func detExec(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
	var a detArgs
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return "", nil, err
	}
	if a.Mode == "block" {
		// A call that hangs until its own deadline. The deadline is the double's, not
		// Config.ToolTimeout: an engine timeout would also catch a 5 ms call on a loaded
		// machine and so make the transcript depend on load (the dispatcher's timeout has
		// its own tests in package dispatch).
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
		return "", nil, spec.NewError("NIKA-TIMEOUT-001", c.Name+" exceeded its 20ms call timeout", nil)
	}
	select {
	case <-time.After(time.Duration(a.Delay) * time.Microsecond):
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	switch a.Mode {
	case "error":
		return "", nil, spec.NewError("NIKA-BUILTIN-001", c.Name+" refused "+a.Val, nil)
	case "panic":
		panic("boom " + a.Val)
	}
	return c.Name + "=" + a.Val, json.RawMessage(`{"v":"` + a.Val + `"}`), nil
}

// detScript builds 4 turns of 1..12 calls. Delays are random; turn 2 forces reverse completion.
// The args (and so the transcript) carry the delay, so the script of one round is shared by
// every P; only the timing changes between rounds.
func detScript(rng *rand.Rand) []provider.Outcome {
	sizes := []int{12, 8, 5, 1}
	modes := []string{"ok", "ok", "ok", "error", "panic"}
	var outs []provider.Outcome
	for turn, n := range sizes {
		calls := make([]providertest.Call, n)
		for i := range n {
			a := detArgs{Mode: "ok", Val: fmt.Sprintf("t%d-%d", turn, i)}
			switch turn {
			case 1: // reverse order: the last call finishes first
				a.Delay = (n - i) * 1000
			default:
				a.Delay = rng.IntN(5000)
				a.Mode = modes[rng.IntN(len(modes))]
			}
			if turn == 2 && i == 2 {
				a.Mode = "block"
			}
			b, _ := json.Marshal(a)
			calls[i] = providertest.Call{ID: fmt.Sprintf("toolu_%d_%d", turn, i), Name: detTools[i], Input: string(b)}
		}
		outs = append(outs, providertest.ToolCalls(fmt.Sprintf("turn %d", turn), calls...))
	}
	return append(outs, providertest.Reply("all done"))
}

// §10.3 / D32: for every MaxParallelTools, with random per-call latencies, the transcript bytes
// (requests and tool lists) and the canonical events are identical; at least one round's live
// completion order must differ from request order, or the test proves nothing.
func TestDispatchByteIdenticalAcrossParallelism(t *testing.T) {
	const rounds = 20
	differed := 0
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		script := detScript(rng)
		var refTr, refEv []byte
		for _, par := range []int{1, 2, 8, 64} {
			p := providertest.NewScripted(script...)
			v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*"}}, par)
			v.exec = detExec
			job, live := withLive(job)
			out := v.Run(context.Background(), job)
			if out.Err != nil || out.Output != "all done" {
				t.Fatalf("round %d P=%d: %v %v", round, par, out.Output, out.Err)
			}
			tr := transcript(t, p.Requests())
			evb := []byte(strings.Join(ev.lines, "\n"))
			if refTr == nil {
				refTr, refEv = tr, evb
			} else {
				if !bytes.Equal(tr, refTr) {
					t.Fatalf("round %d P=%d: transcript differs from P=1", round, par)
				}
				if !bytes.Equal(evb, refEv) {
					t.Fatalf("round %d P=%d: events differ from P=1:\n%s\n---\n%s", round, par, evb, refEv)
				}
			}
			// Live order: per batch, compare the finished sequence with the started one.
			var started, finished []string
			flush := func() {
				if !slices.Equal(started, finished) {
					differed++
				}
				if par == 1 && !slices.Equal(started, finished) {
					t.Fatalf("P=1 finished out of order: %v vs %v", finished, started)
				}
				started, finished = nil, nil
			}
			for _, n := range live.notes {
				switch n.Kind {
				case event.LiveBatchDispatched:
					flush()
				case event.LiveToolCallStarted:
					started = append(started, n.Tool)
				case event.LiveToolCallFinished:
					finished = append(finished, n.Tool)
				}
			}
			flush()
		}
		if !bytes.Contains(refTr, []byte("NIKA-TIMEOUT-001")) {
			t.Fatalf("round %d: the script lacks a timeout result", round)
		}
	}
	if differed == 0 {
		t.Fatal("no round completed out of request order: the determinism test proved nothing (D32)")
	}
	t.Logf("%d batches completed out of request order", differed)
}

// §13.1: every Execute blocks until 2 calls are in flight, so a sequential loop deadlocks.
func TestBatchedCallsRunConcurrentlyAndFoldInRequestOrder(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", providertest.Call{ID: "a", Name: "nika:read", Input: `{"path":"x"}`},
			providertest.Call{ID: "b", Name: "nika:hash", Input: `{"content":"y"}`}),
		providertest.Reply("text"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:read", "nika:hash"}}, 8)
	var inflight atomic.Int32
	both := make(chan struct{})
	var once sync.Once
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if inflight.Add(1) == 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
		if c.Name == "nika:read" {
			time.Sleep(2 * time.Millisecond) // finishes after b
		}
		return "r:" + c.ID, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := v.Run(ctx, job)
	if out.Err != nil {
		t.Fatalf("sequential dispatch (rendezvous hung): %v", out.Err)
	}
	reqs := p.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	var ids []string
	for _, b := range last.Blocks {
		ids = append(ids, b.ToolUseID)
	}
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("fed-back ids %v", ids)
	}
	var tools []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked ") {
			var f map[string]any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(l, "tool_invoked ")), &f)
			tools = append(tools, f["tool"].(string))
		}
	}
	if !slices.Equal(tools, []string{"nika:read", "nika:hash"}) {
		t.Fatalf("tool_invoked order %v", tools)
	}
}

// usageOf sets reported usage on a scripted outcome.
func usageOf(o provider.Outcome, in, outTok int) provider.Outcome {
	o.Response.Usage = provider.Usage{InputTokens: in, OutputTokens: outTok, Reported: true}
	return o
}

// §13.2: the budget stops before the second batch; exact boundary counts.
func TestTokenBudgetAtExactBoundaryStopsBeforeDispatch(t *testing.T) {
	p := providertest.NewScripted(
		usageOf(providertest.ToolCalls("first", hashCall("a", "1")), 50, 10),
		usageOf(providertest.ToolCalls("second", hashCall("b", "2")), 30, 10),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 100}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeMaxTokens {
		t.Fatalf("got %v", out.Err)
	}
	if out.Err.Details["partial_output"] != "second" || out.Err.Details["total_tokens"] != 100 {
		t.Fatalf("details %v", out.Err.Details)
	}
	if n := countPrefix(ev.lines, "tool_invoked"); n != 1 {
		t.Fatalf("%d tool_invoked, want 1 (second batch not run)", n)
	}
	// 99 tokens: dispatch happens.
	p = providertest.NewScripted(
		usageOf(providertest.ToolCalls("first", hashCall("a", "1")), 50, 10),
		usageOf(providertest.ToolCalls("second", hashCall("b", "2")), 29, 10),
		usageOf(providertest.Reply("end"), 500, 10),
	)
	v, job, ev = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "max_tokens_total": 100}, 8)
	out = v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "end" || countPrefix(ev.lines, "tool_invoked") != 2 {
		t.Fatalf("99 tokens: %v %v (completion over budget is success)", out.Output, out.Err)
	}
}

var answerSchema = map[string]any{"type": "object", "required": []any{"answer"}, "properties": map[string]any{"answer": map[string]any{"type": "integer"}}}

// §13.2 / §5.4: a prose answer under schema is re-asked tools-off with the exact text.
func TestSchemaReaskIsToolsOffThenValid(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("I think it is forty-two"), providertest.Reply(`{"answer": 42}`))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if m, ok := out.Output.(map[string]any); !ok || m["answer"] != 42 {
		t.Fatalf("output %#v", out.Output)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	re := reqs[1]
	if len(re.Tools) != 0 || re.ToolChoice != provider.ChoiceNone {
		t.Fatalf("re-ask offers tools: %v %v", len(re.Tools), re.ToolChoice)
	}
	last := re.Messages[len(re.Messages)-1]
	prefix := "Your previous reply does not match the required output schema. Validation error: "
	if last.Role != provider.RoleUser || len(last.Blocks) != 1 || !strings.HasPrefix(last.Blocks[0].Text, prefix) ||
		!strings.Contains(last.Blocks[0].Text, "Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n{") {
		t.Fatalf("re-ask text %+v", last.Blocks)
	}
}

func TestSchemaReaskBudgetExhaustedFails(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("no"), providertest.Reply("still no"), providertest.Reply("never"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageFinalize {
		t.Fatalf("got %v", out.Err)
	}
	if n := len(p.Requests()); n != 1+SchemaRetryBudget {
		t.Fatalf("%d requests, want %d", n, 1+SchemaRetryBudget)
	}
}

func TestDoneResultInvalidFailsStageDone(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", providertest.Call{ID: "d", Name: "nika:done", Input: `{"result":{"answer":"x"}}`}))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:done"}, "schema": answerSchema}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeSchema || out.Err.Details["stage"] != StageDone {
		t.Fatalf("got %v", out.Err)
	}
	if len(p.Requests()) != 1 {
		t.Fatalf("%d requests", len(p.Requests()))
	}
}

// §13.3: three identical turns draw one nudge with the exact text, after the tool results.
func TestNudgeLandsOnceAndLoopRecovers(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a")), providertest.ToolCalls("", sameHash("b")),
		providertest.ToolCalls("", sameHash("c")), providertest.Reply("recovered"))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err != nil || out.Output != "recovered" {
		t.Fatalf("%v %v", out.Output, out.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if len(last.Blocks) != 2 || last.Blocks[0].Type != provider.BlockToolResult || last.Blocks[1].Type != provider.BlockText ||
		last.Blocks[1].Text != guard.RepeatedActionsText(1) || !strings.HasPrefix(last.Blocks[1].Text, "[loop-guard]") {
		t.Fatalf("request 4 last message %+v", last.Blocks)
	}
	var nudges []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, event.AgentNudge+" ") {
			nudges = append(nudges, l)
		}
	}
	if len(nudges) != 1 || nudges[0] != `agent_nudge {"period":1,"reason":"repeated_actions","turn":3}` {
		t.Fatalf("nudges %v", nudges)
	}
}

// §13.3: identical cycles stall at the fifth repeat; the stall follows the nudge.
func TestIdenticalCyclesStallAtFifthRepeat(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("working", sameHash(fmt.Sprint("s", i))))
	}
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeStalled || out.Err.Details["period"] != 1 || out.Err.Details["repeats"] != 5 ||
		out.Err.Details["partial_output"] != "working" {
		t.Fatalf("got %v", out.Err)
	}
	if n := len(p.Requests()); n != 5 {
		t.Fatalf("%d requests, want 5", n)
	}
	k := kindsOf(ev)
	if countPrefix(ev.lines, event.AgentNudge) != 1 || k[len(k)-1] != event.AgentStalled ||
		ev.lines[len(ev.lines)-1] != `agent_stalled {"period":1,"repeats":5,"turn":5}` {
		t.Fatalf("events %v", ev.lines)
	}
}

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

// §13.7 / §1.2: a negated glob removes a tool from the offer and refuses a call to it.
func TestWhitelistNegationDeniesOfferAndCall(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "r", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*", "!nika:read"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:read" {
		t.Fatalf("got %v", out.Err)
	}
	for _, d := range p.Requests()[0].Tools {
		if d.Name == "nika:read" {
			t.Fatal("negated nika:read offered")
		}
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatal("a call was dispatched")
	}
}

// D29: permits.tools intersects the task's whitelist, for the offer and for calls.
func TestPermitsToolsIntersectsWhitelist(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "j", Name: "nika:jq", Input: `{}`}))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*"}}, 8)
	job.Permits = &spec.Permits{Tools: []string{"nika:hash", "nika:read"}, ToolsSet: true}
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:jq" || execs.Load() != 0 {
		t.Fatalf("got %v (execs %d)", out.Err, execs.Load())
	}
	var names []string
	for _, d := range p.Requests()[0].Tools {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"nika:hash", "nika:read"}) {
		t.Fatalf("offered %v", names)
	}
	// permits.tools admits it but the task's tools do not: also refused.
	p = providertest.NewScripted(providertest.ToolCalls("", providertest.Call{ID: "r", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	job.Permits = &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}
	if out := v.Run(context.Background(), job); out.Err == nil || out.Err.Code != CodeWhitelist {
		t.Fatalf("got %v", out.Err)
	}
}
