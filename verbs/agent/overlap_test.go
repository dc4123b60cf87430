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
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

// plainOnly hides a provider's streaming: its replies come whole, as before issue 17.
type plainOnly struct{ p provider.Provider }

func (p plainOnly) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	return p.p.Complete(ctx, reqs)
}

// streamFunc is a provider.Streamer whose every request is answered by a test function, for the
// stream shapes Scripted does not make (restarts, calls announced out of order, text in pieces).
type streamFunc struct {
	mu   sync.Mutex
	reqs []provider.Request
	f    func(ctx context.Context, n int, obs *provider.StreamObserver) provider.Outcome
}

func (s *streamFunc) CompleteStream(ctx context.Context, req provider.Request, obs *provider.StreamObserver) provider.Outcome {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	return s.f(ctx, n, obs)
}

func (s *streamFunc) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	out := make([]provider.Outcome, len(reqs))
	for i, r := range reqs {
		out[i] = s.CompleteStream(ctx, r, nil)
	}
	return out
}

func (s *streamFunc) requests() []provider.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// guard bounds a test that would otherwise hang when overlap is missing (a rendezvous nobody
// reaches): it is no timing assertion, the test fails on the missing rendezvous, not on time.
func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// await waits for ch, or fails with ctx's error.
func await(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func callsOf(o provider.Outcome) []provider.StreamCall {
	var out []provider.StreamCall
	for _, b := range o.Response.Message.Blocks {
		if b.Type == provider.BlockToolUse {
			out = append(out, provider.StreamCall{Index: len(out), Block: b})
		}
	}
	return out
}

// Issue 17 acceptance: the first tool starts before the stream ends. The stream's end waits for
// tool 0 to start, and tool 0 waits for the stream's end: only a call started while the reply is
// still being written lets the run finish.
func TestOverlapFirstToolStartsBeforeStreamEnds(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", hashCall("a", "0"), hashCall("b", "1"), hashCall("c", "2"), hashCall("d", "3")),
		providertest.Reply("done"))
	started, ended := make(chan struct{}), make(chan struct{})
	var streams atomic.Int32
	p.SetStreamStep(func(ctx context.Context, k int) error {
		if k == 4 && streams.Add(1) == 1 { // the end of the first reply
			if err := await(ctx, started); err != nil {
				return err
			}
			close(ended)
		}
		return nil
	})
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if c.ID == "a" {
			close(started)
			select {
			case <-ended:
			case <-ctx.Done():
				return "", nil, ctx.Err()
			}
		}
		return "r" + c.ID, nil, nil
	}
	out := v.Run(guardCtx(t), job)
	if out.Err != nil || out.Output != "done" {
		t.Fatalf("output %v, err %v", out.Output, out.Err)
	}
	var idx []string
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked") {
			idx = append(idx, l)
		}
	}
	if len(idx) != 4 || !strings.Contains(idx[0], `"index":0`) || !strings.Contains(idx[3], `"index":3`) {
		t.Fatalf("tool_invoked %v", idx)
	}
	if got := p.Requests()[1].Messages[2].Blocks[0].Content; got != "ra" {
		t.Fatalf("call a fed back %q", got)
	}
}

// Calls start in request order whatever order they are announced in, and max_parallel_tools = 1
// still runs them one after another: call 1, announced first, waits for call 0 to start and to
// return.
func TestOverlapStartsInRequestOrder(t *testing.T) {
	reply := providertest.ToolCalls("", hashCall("a", "0"), hashCall("b", "1"))
	var (
		mu    sync.Mutex
		order []string
	)
	s := &streamFunc{f: func(ctx context.Context, n int, obs *provider.StreamObserver) provider.Outcome {
		if n > 1 {
			return providertest.Reply("done")
		}
		calls := callsOf(reply)
		obs.ToolCall(calls[1])
		obs.ToolCall(calls[0])
		return reply
	}}
	v, job, _ := setup(t, s, map[string]any{"prompt": "p", "tools": []any{"**"}}, 1)
	var inFlight atomic.Int32
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if inFlight.Add(1) > 1 {
			t.Error("two calls in flight at max_parallel_tools 1")
		}
		defer inFlight.Add(-1)
		mu.Lock()
		order = append(order, c.ID)
		mu.Unlock()
		return "r" + c.ID, nil, nil
	}
	if out := v.Run(guardCtx(t), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !slices.Equal(order, []string{"a", "b"}) {
		t.Fatalf("start order %v", order)
	}
}

// A restart voids what the first send announced: the call it started is cancelled (before the
// new send begins) and its result is never folded; the new send's call is what the model gets.
func TestOverlapRestartCancelsVoidedCalls(t *testing.T) {
	started := make(chan struct{})
	var firstCtx context.Context // the voided call's context, set before started closes
	s := &streamFunc{}
	s.f = func(ctx context.Context, n int, obs *provider.StreamObserver) provider.Outcome {
		if n > 1 {
			return providertest.Reply("done")
		}
		first := providertest.ToolCalls("", hashCall("a", "first"))
		obs.ToolCall(callsOf(first)[0])
		if err := await(ctx, started); err != nil {
			return provider.Outcome{Err: spec.NewError("NIKA-INFER-001", "no call started", nil)}
		}
		obs.Restart(2, spec.NewError("NIKA-INFER-001", "stream cut", nil))
		if firstCtx.Err() == nil {
			t.Error("the voided attempt's call was not cancelled when the restart returned")
		}
		second := providertest.ToolCalls("", hashCall("a", "second"))
		obs.ToolCall(callsOf(second)[0])
		return second
	}
	v, job, ev := setup(t, s, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	var calls atomic.Int32
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if calls.Add(1) == 1 {
			firstCtx = ctx
			close(started)
			<-ctx.Done()
			return "voided", nil, ctx.Err()
		}
		return string(c.Args), nil, nil
	}
	if out := v.Run(guardCtx(t), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	if n := countPrefix(ev.lines, "tool_invoked"); n != 1 {
		t.Fatalf("%d tool_invoked, want 1", n)
	}
	fed := s.requests()[1].Messages[2].Blocks[0]
	if fed.IsError || !strings.Contains(fed.Content, "second") {
		t.Fatalf("fed back %+v, want the second send's call", fed)
	}
}

// Cancelling the run while the reply streams cancels the calls already started; the run ends
// with the cancellation and nothing of the turn is folded.
func TestOverlapCancelMidStreamCancelsStartedCalls(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "0"), hashCall("b", "1")))
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	started := make(chan struct{})
	var midStream atomic.Bool // the cancellation came while the reply was streaming
	p.SetStreamStep(func(ctx context.Context, k int) error {
		if k == 1 {
			if err := await(ctx, started); err != nil {
				return err
			}
			midStream.Store(true)
			cancel()
			return ctx.Err()
		}
		return nil
	})
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	var aCtx context.Context // the call's context, set before started closes
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		aCtx = ctx
		close(started)
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	out := v.Run(ctx, job)
	if out.Err == nil || out.Err.Code != CodeCancel {
		t.Fatalf("got %v, want %s", out.Err, CodeCancel)
	}
	if !midStream.Load() || aCtx.Err() == nil || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("cancelled mid-stream %v, call cancelled %v, events %v", midStream.Load(), aCtx.Err() != nil, ev.lines)
	}
}

// Where a call not yet announced could still be refused, or the turn's batch could not run at
// all, nothing starts before the reply is complete (the whole-batch semantics of §5.2).
func TestOverlapHoldsWhenARefusalIsPossible(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fields  map[string]any
		permits *spec.Permits
	}{
		{"a whitelist that refuses names", map[string]any{"tools": []any{"nika:hash"}}, nil},
		{"a negation after **", map[string]any{"tools": []any{"**", "!nika:read"}}, nil},
		{"permits.tools", map[string]any{"tools": []any{"**"}}, &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}},
		{"the last turn", map[string]any{"tools": []any{"**"}, "max_turns": 1}, nil},
		{"a token budget", map[string]any{"tools": []any{"**"}, "max_tokens_total": 1000000}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "0")), providertest.Reply("done"))
			var execs, atEnd atomic.Int32
			var streams atomic.Int32
			p.SetStreamStep(func(ctx context.Context, k int) error {
				if k == 1 && streams.Add(1) == 1 {
					atEnd.Store(execs.Load())
				}
				return nil
			})
			tc.fields["prompt"] = "p"
			v, job, _ := setup(t, p, tc.fields, 8)
			job.Permits = tc.permits
			v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
				execs.Add(1)
				return "", nil, nil
			}
			v.Run(guardCtx(t), job)
			if atEnd.Load() != 0 {
				t.Fatal("a call started before the reply was complete")
			}
		})
	}
}

// Under tools "**" an unclean name is the one refusal left: announced, it halts the early batch
// (the call before it, already running, is cancelled; the one after it never starts) and the
// run fails NIKA-SEC-002 with nothing folded, as without streaming.
func TestOverlapUncleanNameHaltsEarlyBatch(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("",
		hashCall("a", "0"), providertest.Call{ID: "x", Name: "nika:ha\x07sh", Input: `{}`}, hashCall("b", "1")))
	started := make(chan struct{})
	p.SetStreamStep(func(ctx context.Context, k int) error {
		if k == 1 {
			return await(ctx, started)
		}
		return nil
	})
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	var bRan atomic.Bool
	var aCtx context.Context // call a's context, set before started closes
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		if c.ID == "b" {
			bRan.Store(true)
			return "", nil, nil
		}
		aCtx = ctx
		close(started)
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	out := v.Run(guardCtx(t), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist {
		t.Fatalf("got %v", out.Err)
	}
	if aCtx == nil || aCtx.Err() == nil || bRan.Load() || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("a started and cancelled %v, b ran %v, events %v", aCtx != nil && aCtx.Err() != nil, bRan.Load(), ev.lines)
	}
}

// nika:done anywhere in the turn ends the run without a batch: a call started before it was
// announced is cancelled and never folded.
func TestOverlapDoneVoidsEarlyCalls(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "0"), doneCall(`{"result":"fin"}`)))
	started := make(chan struct{})
	p.SetStreamStep(func(ctx context.Context, k int) error {
		if k == 1 {
			return await(ctx, started)
		}
		return nil
	})
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	var aCtx context.Context // the call's context, set before started closes
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		aCtx = ctx
		close(started)
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	out := v.Run(guardCtx(t), job)
	if out.Err != nil || out.Output != "fin" {
		t.Fatalf("output %v, err %v", out.Output, out.Err)
	}
	if aCtx == nil || aCtx.Err() == nil || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("started and cancelled %v, events %v", aCtx != nil && aCtx.Err() != nil, ev.lines)
	}
}

// A security-boundary refusal of a call started early stops the batch as §6.5 says: the calls in
// flight are cancelled, and the run fails with its code, nothing folded.
func TestOverlapBoundaryRefusalStopsBatch(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "0"), hashCall("b", "1"), hashCall("c", "2")))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
	refused := make(chan struct{})
	v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		switch c.ID {
		case "b":
			defer close(refused)
			return "", nil, spec.NewError(dispatch.CodeSecPermits, "outside permits", nil)
		case "a":
			<-refused
			<-ctx.Done()
			return "", nil, ctx.Err()
		}
		return "", nil, nil
	}
	out := v.Run(guardCtx(t), job)
	if out.Err == nil || out.Err.Code != dispatch.CodeSecPermits || out.Err.Details["call_id"] != "b" {
		t.Fatalf("got %v", out.Err)
	}
	if countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatalf("folded: %v", ev.lines)
	}
}

// Issue 17 acceptance (in-process half): a streamed run's canonical trace and transcript equal the
// non-streaming run's (the reply whole, the batch resolved after it), for max_parallel_tools 1, 2
// and 8: failed calls, an unknown tool and a reply cut by max_tokens included.
func TestOverlapTraceEqualsPlainRun(t *testing.T) {
	script := func() []provider.Outcome {
		// a reply cut by max_tokens after its calls: the core dispatches them, streamed or not
		cut := providertest.ToolCalls("", hashCall("f", "5"), hashCall("g", "6"))
		cut.Response.StopReason = provider.StopMaxTokens
		return []provider.Outcome{
			providertest.ToolCalls("first", hashCall("a", "0"), hashCall("b", "1"), providertest.Call{ID: "j", Name: "nika:jq", Input: `{"bad":1}`}, hashCall("c", "2")),
			providertest.ToolCalls("", hashCall("d", "3"), providertest.Call{ID: "e", Name: "nika:nothing", Input: `{}`}),
			cut,
			providertest.Reply("all done"),
		}
	}
	run := func(t *testing.T, p provider.Provider, par int) []string {
		v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"**"}}, par)
		v.exec = func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
			return "out:" + string(c.Args), nil, nil
		}
		out := v.Run(guardCtx(t), job)
		if out.Err != nil || out.Output != "all done" {
			t.Fatalf("output %v, err %v", out.Output, out.Err)
		}
		return ev.lines
	}
	for _, par := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("P=", par), func(t *testing.T) {
			plain := providertest.NewScripted(script()...)
			streamed := providertest.NewScripted(script()...)
			wantEv := run(t, plainOnly{plain}, par)
			gotEv := run(t, streamed, par)
			if !slices.Equal(gotEv, wantEv) {
				t.Fatalf("canonical events differ:\n got %v\nwant %v", gotEv, wantEv)
			}
			if got, want := transcript(t, streamed.Requests()), transcript(t, plain.Requests()); string(got) != string(want) {
				t.Fatalf("transcripts differ:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// Item 3: while a reply streams, the live stream shows its text arriving (agent_text notes with
// the text so far, a handful however finely it is split) and ends with the whole text, before the
// request's provider_request note.
func TestLiveTextArrivesWhileStreaming(t *testing.T) {
	words := strings.Repeat("word ", 200)
	s := &streamFunc{f: func(ctx context.Context, n int, obs *provider.StreamObserver) provider.Outcome {
		for i := 0; i < len(words); i += 3 {
			obs.Text(words[i:min(i+3, len(words))])
		}
		return providertest.Reply(words)
	}}
	v, job, _ := setup(t, s, map[string]any{"prompt": "p"}, 8)
	job, live := withLive(job)
	if out := v.Run(guardCtx(t), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	var texts []string
	for _, k := range live.notes {
		if k.Kind == event.LiveAgentText {
			texts = append(texts, k.Message)
		}
		if k.Kind == event.LiveProviderRequest && len(texts) == 0 {
			t.Fatal("provider_request before any agent_text")
		}
	}
	if len(texts) < 3 || len(texts) > 12 || texts[len(texts)-1] != words {
		t.Fatalf("%d agent_text notes, last %q", len(texts), texts[len(texts)-1])
	}
	for i := 1; i < len(texts); i++ {
		if !strings.HasPrefix(texts[i], texts[i-1]) || len(texts[i]) <= len(texts[i-1]) {
			t.Fatalf("note %d does not extend note %d", i, i-1)
		}
	}
}

// A long streamed text stays bounded on the live stream: every agent_text note is at most
// event.MaxLiveText bytes, the last one the reply cut at a rune boundary with "…", and a few
// dozen notes at most however many pieces the wire sent.
func TestLiveTextStaysBoundedWhileStreaming(t *testing.T) {
	long := strings.Repeat("é", event.MaxLiveText) // 2 bytes a rune: twice the bound
	s := &streamFunc{f: func(ctx context.Context, n int, obs *provider.StreamObserver) provider.Outcome {
		for i := 0; i < len(long); i += 2 {
			obs.Text(long[i : i+2])
		}
		return providertest.Reply(long)
	}}
	v, job, _ := setup(t, s, map[string]any{"prompt": "p"}, 8)
	job, live := withLive(job)
	if out := v.Run(guardCtx(t), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	var texts []string
	for _, k := range live.notes {
		if k.Kind == event.LiveAgentText {
			if len(k.Message) > event.MaxLiveText {
				t.Fatalf("a note of %d bytes", len(k.Message))
			}
			texts = append(texts, k.Message)
		}
	}
	last := texts[len(texts)-1]
	if len(texts) > 16 || !strings.HasSuffix(last, "…") || !strings.HasPrefix(long, strings.TrimSuffix(last, "…")) {
		t.Fatalf("%d notes, the last %d bytes", len(texts), len(last))
	}
}
