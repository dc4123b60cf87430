package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

var _ provider.Provider = (*Scripted)(nil)

func req(text string) provider.Request {
	return provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText(text)}}
}

func TestScriptedFIFO(t *testing.T) {
	s := NewScripted(Reply("one"), Fail(provider.ReasonRateLimited))
	s.Push(ToolCalls("thinking", Call{ID: "c1", Name: "nika:read", Input: `{"path":"a"}`}, Call{ID: "c2", Name: "nika:done", Input: `{}`}))
	out := s.Complete(context.Background(), []provider.Request{req("a"), req("b")})
	if len(out) != 2 || provider.Text(out[0].Response.Message) != "one" {
		t.Fatalf("out = %+v", out)
	}
	if e := out[1].Err; e == nil || provider.ReasonOf(e) != provider.ReasonRateLimited || !e.Transient {
		t.Errorf("scripted failure = %+v", out[1])
	}
	out = s.Complete(context.Background(), []provider.Request{req("c")})
	r := out[0].Response
	if r == nil || r.StopReason != provider.StopToolUse || len(r.Message.Blocks) != 3 ||
		r.Message.Blocks[1].Name != "nika:read" || string(r.Message.Blocks[2].Input) != `{}` {
		t.Errorf("tool calls = %+v", out[0])
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining = %d", s.Remaining())
	}

	// Ran out: INFER-001 bad_request saying so; still recorded.
	out = s.Complete(context.Background(), []provider.Request{req("d")})
	e := out[0].Err
	if e == nil || e.Code != "NIKA-INFER-001" || provider.ReasonOf(e) != provider.ReasonBadRequest || e.Transient ||
		!strings.Contains(e.Message, "script ran out") || e.Details["model"] != "openai/gpt-4o" {
		t.Errorf("ran out = %+v", e)
	}

	got := s.Requests()
	if len(got) != 4 {
		t.Fatalf("recorded %d requests", len(got))
	}
	for i, want := range []string{"a", "b", "c", "d"} {
		if provider.Text(got[i].Messages[0]) != want {
			t.Errorf("request %d = %q", i, provider.Text(got[i].Messages[0]))
		}
	}
	got[0].Model = "changed" // a copy
	if s.Requests()[0].Model != "openai/gpt-4o" {
		t.Error("Requests returned the internal slice")
	}
}

func TestScriptedErrorAndEmptyBatch(t *testing.T) {
	custom := spec.NewError("NIKA-INFER-001", "custom", map[string]any{"reason": "content_filter"})
	s := NewScripted(Error(custom))
	if out := s.Complete(context.Background(), []provider.Request{req("x")}); out[0].Err != custom {
		t.Errorf("custom error not passed through: %+v", out[0])
	}
	if out := s.Complete(context.Background(), nil); out == nil || len(out) != 0 {
		t.Errorf("empty batch: %#v", out)
	}
}

func TestScriptedCancelled(t *testing.T) {
	s := NewScripted(Reply("kept"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := s.Complete(ctx, []provider.Request{req("x")})
	if e := out[0].Err; e == nil || provider.ReasonOf(e) != provider.ReasonCancelled || !errors.Is(e, context.Canceled) {
		t.Errorf("cancelled = %+v", out[0])
	}
	if s.Remaining() != 1 || len(s.Requests()) != 1 {
		t.Errorf("remaining %d, recorded %d", s.Remaining(), len(s.Requests()))
	}
}

func TestScriptedHook(t *testing.T) {
	s := NewScripted(Reply("queued"))
	s.SetHook(func(_ context.Context, r provider.Request) *provider.Outcome {
		if provider.Text(r.Messages[0]) == "hooked" {
			o := Reply("from hook")
			return &o
		}
		return nil
	})
	out := s.Complete(context.Background(), []provider.Request{req("hooked"), req("plain")})
	if provider.Text(out[0].Response.Message) != "from hook" || provider.Text(out[1].Response.Message) != "queued" {
		t.Errorf("out = %+v", out)
	}
	s.SetHook(func(context.Context, provider.Request) *provider.Outcome { panic("boom") })
	out = s.Complete(context.Background(), []provider.Request{req("p")})
	if out[0].Err == nil || provider.ReasonOf(out[0].Err) != provider.ReasonBadRequest {
		t.Errorf("panicking hook = %+v", out[0])
	}
	s.SetHook(nil)
	if len(s.Requests()) != 3 {
		t.Errorf("recorded %d", len(s.Requests()))
	}

	// A hook that blocks until cancellation yields a cancelled outcome and leaves the queue alone.
	s = NewScripted(Reply("kept"))
	entered := make(chan struct{})
	s.SetHook(func(ctx context.Context, _ provider.Request) *provider.Outcome {
		close(entered)
		<-ctx.Done()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan []provider.Outcome)
	go func() { res <- s.Complete(ctx, []provider.Request{req("x")}) }()
	<-entered
	cancel()
	if out := <-res; provider.ReasonOf(out[0].Err) != provider.ReasonCancelled || s.Remaining() != 1 {
		t.Errorf("blocked then cancelled = %+v, remaining %d", out[0], s.Remaining())
	}
}

// TestScriptedConcurrent: under -race, every scripted outcome is served exactly once and every
// request is recorded exactly once, whatever the interleaving.
func TestScriptedConcurrent(t *testing.T) {
	const workers, perBatch = 32, 4
	s := NewScripted()
	for i := range workers * perBatch {
		s.Push(Reply(strings.Repeat("r", i+1)))
	}
	var wg sync.WaitGroup
	results := make([][]provider.Outcome, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs := make([]provider.Request, perBatch)
			for i := range reqs {
				reqs[i] = req(strings.Repeat("q", w*perBatch+i+1))
			}
			results[w] = s.Complete(context.Background(), reqs)
			_ = s.Requests()
			_ = s.Remaining()
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for w, out := range results {
		if len(out) != perBatch {
			t.Fatalf("worker %d: %d outcomes", w, len(out))
		}
		prev := 0
		for _, o := range out {
			n := len(provider.Text(o.Response.Message))
			if seen[n] {
				t.Errorf("outcome %d served twice", n)
			}
			seen[n] = true
			if n <= prev { // one Complete call takes from the queue in request order
				t.Errorf("worker %d: outcomes out of FIFO order", w)
			}
			prev = n
		}
	}
	if len(seen) != workers*perBatch || s.Remaining() != 0 {
		t.Errorf("served %d, remaining %d", len(seen), s.Remaining())
	}
	reqs := s.Requests()
	if len(reqs) != workers*perBatch {
		t.Fatalf("recorded %d requests", len(reqs))
	}
	rec := map[int]bool{}
	for _, r := range reqs {
		rec[len(provider.Text(r.Messages[0]))] = true
	}
	if len(rec) != workers*perBatch {
		t.Errorf("recorded %d distinct requests", len(rec))
	}
}

// TestScriptedStream: a streamed reply tells the text and each call, the step running before each
// call and at the end; a consumer can hold the stream until it has started call 0.
func TestScriptedStream(t *testing.T) {
	s := NewScripted(ToolCalls("Two.", Call{"c1", "nika:read", `{"path":"a"}`}, Call{"c2", "nika:read", `{"path":"b"}`}), Fail(provider.ReasonServerError))
	started := make(chan struct{})
	var lines []string
	s.SetStreamStep(func(ctx context.Context, k int) error {
		lines = append(lines, fmt.Sprintf("step %d", k))
		if k == 1 { // the stream goes on only once call 0 has started
			select {
			case <-started:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	obs := &provider.StreamObserver{
		OnText: func(d string) { lines = append(lines, "text "+d) },
		OnToolCall: func(c provider.StreamCall) {
			lines = append(lines, fmt.Sprintf("call %d %s", c.Index, c.Block.ID))
			if c.Index == 0 {
				close(started)
			}
		},
	}
	o := s.CompleteStream(context.Background(), provider.Request{Model: "x/y"}, obs)
	if o.Err != nil || len(o.Response.Message.Blocks) != 3 {
		t.Fatalf("outcome = %+v", o)
	}
	if want := []string{"text Two.", "step 0", "call 0 c1", "step 1", "call 1 c2", "step 2"}; !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
	lines = nil
	if o := s.CompleteStream(context.Background(), provider.Request{Model: "x/y"}, obs); provider.ReasonOf(o.Err) != provider.ReasonServerError || lines != nil {
		t.Errorf("a failed outcome: %+v, observed %q", o, lines)
	}
	// A step that fails ends the stream as cancelled.
	s.Push(Reply("x")).SetStreamStep(func(context.Context, int) error { return context.Canceled })
	if o := s.CompleteStream(context.Background(), provider.Request{Model: "x/y"}, nil); provider.ReasonOf(o.Err) != provider.ReasonCancelled {
		t.Errorf("outcome = %+v, want cancelled", o)
	}
}
