package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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
)

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

func TestByteIdenticalAcrossParallelism(t *testing.T) {
	script := func() *providertest.Scripted {
		var turn1, turn2 []providertest.Call
		for i := range 7 {
			turn1 = append(turn1, hashCall(fmt.Sprintf("a%d", i), fmt.Sprintf("x%d", i)))
		}
		turn2 = append(turn2, hashCall("b0", "y"), providertest.Call{ID: "b1", Name: "nika:hash", Input: `{"nope":1}`},
			providertest.Call{ID: "b2", Name: "nika:jq", Input: `{"filter":".a","input":{"a":1}}`})
		return providertest.NewScripted(providertest.ToolCalls("t1", turn1...), providertest.ToolCalls("", turn2...), providertest.Reply("ok"))
	}
	var ref, refEv []byte
	for _, par := range []int{1, 2, 8, 64} {
		p := script()
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*"}}, par)
		out := v.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		tr := transcript(t, p.Requests())
		evb := []byte(strings.Join(ev.lines, "\n"))
		if ref == nil {
			ref, refEv = tr, evb
			continue
		}
		if !bytes.Equal(tr, ref) {
			t.Fatalf("P=%d transcript differs", par)
		}
		if !bytes.Equal(evb, refEv) {
			t.Fatalf("P=%d events differ:\n%s\n---\n%s", par, evb, refEv)
		}
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

// AGENT.md §13.1: a coded tool error that is not a boundary refusal
// (NIKA-MCP-002, NIKA-BUILTIN-FETCH-001) is fed back and the loop continues.
func TestCodedNonBoundaryErrorStaysFeedback(t *testing.T) {
	for _, code := range []string{"NIKA-MCP-002", "NIKA-BUILTIN-FETCH-001"} {
		p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), hashCall("b", "2")), providertest.Reply("recovered"))
		v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
		v.exec = func(_ context.Context, c dispatch.Call) (string, json.RawMessage, error) {
			if c.Index == 0 {
				return "", nil, spec.NewError(code, "upstream said no", nil)
			}
			return "fine", nil, nil
		}
		out := v.Run(context.Background(), job)
		if out.Err != nil || out.Output != "recovered" {
			t.Fatalf("%s: %v %v", code, out.Output, out.Err)
		}
		reqs := p.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests", code, len(reqs))
		}
		blocks := reqs[1].Messages[len(reqs[1].Messages)-1].Blocks
		if len(blocks) != 2 || !blocks[0].IsError || !strings.Contains(blocks[0].Content, code) || blocks[1].IsError || blocks[1].Content != "fine" {
			t.Fatalf("%s: fed back %+v", code, blocks)
		}
	}
}
