package provider

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// adapterFunc is a fake Adapter.
type adapterFunc func(ctx context.Context, req Request) Outcome

func (a adapterFunc) Exchange(ctx context.Context, req Request) Outcome { return a(ctx, req) }

// sleepRecorder is an injected Sleep: it records the waits and returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
	hook  func(d time.Duration) // optional, called before returning
}

func (s *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	return ctx.Err()
}

func (s *sleepRecorder) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

func okText(text string) Outcome {
	return Outcome{Response: &Response{Message: Message{Role: RoleAssistant, Blocks: []Block{TextBlock(text)}}, StopReason: StopEndTurn}}
}

func failWith(status int, reason string, retryMs int64) Outcome {
	return Failed(Failure{Model: "fake/m", Status: status, Reason: reason, RetryAfterMs: retryMs})
}

func req(id string) Request { return Request{Model: "fake/m", Messages: []Message{UserText(id)}} }

// script answers the n-th send (0-based) with outs[n], the last one repeating; it counts sends.
func script(sends *atomic.Int64, outs ...Outcome) Adapter {
	return adapterFunc(func(ctx context.Context, r Request) Outcome {
		n := int(sends.Add(1)) - 1
		return outs[min(n, len(outs)-1)]
	})
}

func TestFrontRetryAfterHonoured(t *testing.T) {
	var sends atomic.Int64
	clock := newFakeClock()
	sl := &sleepRecorder{hook: clock.Advance}
	f := NewFront("fake", script(&sends, failWith(429, ReasonRateLimited, 1234), okText("hi")), FrontConfig{Sleep: sl.Sleep})
	f.lim.clock = clock
	out := f.Complete(context.Background(), []Request{req("a")})
	if len(out) != 1 || out[0].Err != nil || Text(out[0].Response.Message) != "hi" {
		t.Fatalf("outcome = %+v, want hi", out)
	}
	if got := sl.got(); !slices.Equal(got, []time.Duration{1234 * time.Millisecond}) {
		t.Errorf("sleeps = %v, want [1.234s]", got)
	}
	if sends.Load() != 2 {
		t.Errorf("sends = %d, want 2", sends.Load())
	}
	if f.Limit() != DefaultInitialLimit/2 {
		t.Errorf("limit after a 429 = %d, want %d", f.Limit(), DefaultInitialLimit/2)
	}
}

func TestFrontServerErrorRetried(t *testing.T) {
	var sends atomic.Int64
	sl := &sleepRecorder{}
	f := NewFront("fake", script(&sends, failWith(500, ReasonServerError, 0), failWith(503, ReasonServerError, 0),
		failWith(408, ReasonTimeout, 0), failWith(0, ReasonNetwork, 0), okText("fine")), FrontConfig{Sleep: sl.Sleep})
	out := f.Complete(context.Background(), []Request{req("a")})
	if out[0].Err != nil || Text(out[0].Response.Message) != "fine" {
		t.Fatalf("outcome = %+v, want fine", out[0])
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	if got := sl.got(); !slices.Equal(got, want) {
		t.Errorf("sleeps = %v, want %v", got, want)
	}
	if sends.Load() != 5 {
		t.Errorf("sends = %d, want 5", sends.Load())
	}
}

func TestFrontNotRetried(t *testing.T) {
	for _, c := range []struct {
		status int
		reason string
	}{
		{401, ReasonAuthFailed},
		{429, ReasonQuotaExceeded},
		{404, ReasonModelNotFound},
		{400, ReasonBadRequest},
		{200, ReasonContentFilter},
	} {
		t.Run(c.reason, func(t *testing.T) {
			var sends atomic.Int64
			sl := &sleepRecorder{}
			f := NewFront("fake", script(&sends, failWith(c.status, c.reason, 5000), okText("no")), FrontConfig{Sleep: sl.Sleep})
			out := f.Complete(context.Background(), []Request{req("a")})
			if out[0].Err == nil || ReasonOf(out[0].Err) != c.reason || out[0].Err.Transient {
				t.Fatalf("outcome = %+v, want non-transient %s", out[0], c.reason)
			}
			if sends.Load() != 1 || len(sl.got()) != 0 {
				t.Errorf("sends = %d, sleeps = %v; want 1 send, no sleep", sends.Load(), sl.got())
			}
			if f.Limit() != DefaultInitialLimit {
				t.Errorf("limit = %d, want unchanged %d", f.Limit(), DefaultInitialLimit)
			}
		})
	}
}

func TestFrontMaxSends(t *testing.T) {
	var sends atomic.Int64
	sl := &sleepRecorder{}
	f := NewFront("fake", script(&sends, failWith(500, ReasonServerError, 0)), FrontConfig{Sleep: sl.Sleep})
	out := f.Complete(context.Background(), []Request{req("a")})
	e := out[0].Err
	if e == nil || e.Code != spec.CodeInferProvider || ReasonOf(e) != ReasonServerError || !e.Transient || e.Details["status"] != 500 {
		t.Fatalf("outcome = %+v, want transient INFER-001 server_error 500", out[0])
	}
	if sends.Load() != DefaultMaxSends {
		t.Errorf("sends = %d, want %d", sends.Load(), DefaultMaxSends)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	if got := sl.got(); !slices.Equal(got, want) {
		t.Errorf("sleeps = %v, want %v", got, want)
	}
}

func TestFrontBackoffCapped(t *testing.T) {
	var sends atomic.Int64
	sl := &sleepRecorder{}
	f := NewFront("fake", script(&sends, failWith(502, ReasonServerError, 0)), FrontConfig{MaxSends: 8, Deadline: time.Hour, Sleep: sl.Sleep})
	f.Complete(context.Background(), []Request{req("a")})
	got := sl.got()
	if len(got) != 7 || got[4] != 8*time.Second || got[6] != 8*time.Second {
		t.Errorf("sleeps = %v, want 7 waits capped at 8s", got)
	}
}

func TestFrontDeadline(t *testing.T) {
	var sends atomic.Int64
	clock := newFakeClock()
	sl := &sleepRecorder{hook: clock.Advance}
	f := NewFront("fake", script(&sends, failWith(429, ReasonRateLimited, 25_000)), FrontConfig{Sleep: sl.Sleep})
	f.lim.clock = clock
	out := f.Complete(context.Background(), []Request{req("a")})
	// Sends at 0 s, 25 s, 50 s; a fourth at 75 s would be past the 60 s budget.
	if sends.Load() != 3 {
		t.Errorf("sends = %d, want 3", sends.Load())
	}
	e := out[0].Err
	if e == nil || ReasonOf(e) != ReasonRateLimited || !e.Transient || e.Details["retry_after_ms"] != int64(25_000) {
		t.Errorf("outcome = %+v, want transient rate_limited with retry_after_ms", out[0])
	}

	// A hint longer than the whole budget fails at once, the hint kept.
	sends.Store(0)
	f = NewFront("fake", script(&sends, failWith(429, ReasonRateLimited, 120_000)), FrontConfig{Sleep: sl.Sleep})
	f.lim.clock = clock
	out = f.Complete(context.Background(), []Request{req("a")})
	if sends.Load() != 1 || out[0].Err == nil || out[0].Err.Details["retry_after_ms"] != int64(120_000) {
		t.Errorf("sends = %d, outcome = %+v; want 1 send and the hint surfaced", sends.Load(), out[0])
	}
}

func TestFrontCancelledBeforeSend(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sends atomic.Int64
	f := NewFront("fake", script(&sends, okText("x")), FrontConfig{Sleep: (&sleepRecorder{}).Sleep})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := f.Complete(ctx, []Request{req("a"), req("b"), req("c")})
	if len(out) != 3 {
		t.Fatalf("len = %d, want 3", len(out))
	}
	for i, o := range out {
		if o.Err == nil || ReasonOf(o.Err) != ReasonCancelled || o.Err.Transient || o.Err.Details["provider"] != "fake" {
			t.Errorf("out[%d] = %+v, want cancelled", i, o)
		}
		if !errors.Is(o.Err, context.Canceled) {
			t.Errorf("out[%d] does not wrap context.Canceled", i)
		}
	}
	if sends.Load() != 0 {
		t.Errorf("sends = %d, want 0", sends.Load())
	}
}

func TestFrontCancelledDuringBackoff(t *testing.T) {
	var sends atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sl := &sleepRecorder{hook: func(time.Duration) { cancel() }}
	f := NewFront("fake", script(&sends, failWith(503, ReasonServerError, 0), okText("late")), FrontConfig{Sleep: sl.Sleep})
	out := f.Complete(ctx, []Request{req("a")})
	if ReasonOf(out[0].Err) != ReasonCancelled || sends.Load() != 1 {
		t.Errorf("outcome = %+v after %d sends, want cancelled after 1", out[0], sends.Load())
	}
}

func TestFrontCancelledInFlightAndInLimiter(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sends atomic.Int64
	started := make(chan struct{}, 4)
	a := adapterFunc(func(ctx context.Context, r Request) Outcome {
		sends.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		return failWith(0, ReasonNetwork, 0)
	})
	f := NewFront("fake", a, FrontConfig{InitialLimit: 1, Sleep: (&sleepRecorder{}).Sleep})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []Outcome)
	go func() { done <- f.Complete(ctx, []Request{req("a"), req("b"), req("c")}) }()
	<-started // one request holds the only slot; the others wait in the limiter
	cancel()
	out := <-done
	for i, o := range out {
		if ReasonOf(o.Err) != ReasonCancelled {
			t.Errorf("out[%d] = %+v, want cancelled", i, o)
		}
	}
	if sends.Load() != 1 {
		t.Errorf("sends = %d, want 1 (waiting in the limiter is not sending)", sends.Load())
	}
	// The slots came back and no waiter is left behind.
	f.lim.mu.Lock()
	defer f.lim.mu.Unlock()
	if f.lim.inflight != 0 || len(f.lim.waiters) != 0 {
		t.Errorf("limiter after cancellation: inflight %d, waiters %d; want 0, 0", f.lim.inflight, len(f.lim.waiters))
	}
}

func TestFrontOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := adapterFunc(func(ctx context.Context, r Request) Outcome {
		id := Text(r.Messages[0])
		n, _ := strconv.Atoi(id)
		for range (50 - n%50) % 7 { // finish out of order
			runtime.Gosched()
		}
		return okText(id)
	})
	f := NewFront("fake", a, FrontConfig{Sleep: (&sleepRecorder{}).Sleep})
	reqs := make([]Request, 50)
	for i := range reqs {
		reqs[i] = req(strconv.Itoa(i))
	}
	out := f.Complete(context.Background(), reqs)
	if len(out) != len(reqs) {
		t.Fatalf("len = %d, want %d", len(out), len(reqs))
	}
	for i, o := range out {
		if o.Err != nil || Text(o.Response.Message) != strconv.Itoa(i) {
			t.Errorf("out[%d] = %+v, want %d", i, o, i)
		}
	}
	if got := f.Complete(context.Background(), nil); got == nil || len(got) != 0 {
		t.Errorf("empty batch = %#v, want an empty slice", got)
	}
}

func TestFrontAdapterPanic(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := adapterFunc(func(ctx context.Context, r Request) Outcome {
		switch Text(r.Messages[0]) {
		case "boom":
			panic("kaboom")
		case "empty":
			return Outcome{}
		}
		return okText("fine")
	})
	f := NewFront("fake", a, FrontConfig{InitialLimit: 1, Sleep: (&sleepRecorder{}).Sleep})
	out := f.Complete(context.Background(), []Request{req("boom"), req("ok"), req("empty")})
	if out[0].Err == nil || out[0].Err.Category != "internal_error" || out[0].Response != nil {
		t.Errorf("panic outcome = %+v, want internal_error", out[0])
	}
	if out[1].Err != nil {
		t.Errorf("sibling outcome = %+v, want success", out[1])
	}
	if out[2].Err == nil || out[2].Err.Category != "internal_error" {
		t.Errorf("empty outcome = %+v, want internal_error", out[2])
	}
	// The slot of the panicking send was released (limit 1 would otherwise deadlock here).
	if o := f.Complete(context.Background(), []Request{req("again")}); o[0].Err != nil {
		t.Errorf("after panic: %+v", o[0])
	}
}

func TestFrontLimiterGrows(t *testing.T) {
	var sends atomic.Int64
	f := NewFront("fake", script(&sends, okText("x")), FrontConfig{InitialLimit: 2, MaxLimit: 3})
	for range 10 {
		f.Complete(context.Background(), []Request{req("a")})
	}
	if f.Limit() != 3 {
		t.Errorf("limit = %d, want 3 (grown, capped at MaxLimit)", f.Limit())
	}
	f = NewFront("fake", script(&sends, failWith(429, ReasonRateLimited, 0)), FrontConfig{InitialLimit: 1, MaxSends: 3, Sleep: (&sleepRecorder{}).Sleep})
	f.Complete(context.Background(), []Request{req("a")})
	if f.Limit() != 1 {
		t.Errorf("limit = %d, want floor 1", f.Limit())
	}
}

// TestFrontLoad: 200 concurrent requests against a server that admits 8 in flight and answers 429
// beyond. Every request succeeds exactly once, few 429s are provoked, no request is sent more than
// MaxSends times.
func TestFrontLoad(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		n        = 200
		capacity = 8
	)
	var inflight, maxInflight, n429 atomic.Int64
	var mu sync.Mutex
	sends := make(map[string]int)
	answered := make(map[string]int)

	// The server completes one admitted request per tick, so admitted requests really stay in flight
	// and pile up to whatever the limiter lets through.
	release := make(chan struct{})
	stop := make(chan struct{})
	var server sync.WaitGroup
	server.Go(func() {
		tick := time.NewTicker(50 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			select {
			case <-stop:
				return
			case release <- struct{}{}:
			}
		}
	})
	defer func() { close(stop); server.Wait() }()

	a := adapterFunc(func(ctx context.Context, r Request) Outcome {
		id := Text(r.Messages[0])
		mu.Lock()
		sends[id]++
		mu.Unlock()
		cur := inflight.Add(1)
		if cur > capacity {
			inflight.Add(-1)
			n429.Add(1)
			return failWith(429, ReasonRateLimited, 0)
		}
		for {
			m := maxInflight.Load()
			if cur <= m || maxInflight.CompareAndSwap(m, cur) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
			inflight.Add(-1)
			return failWith(0, ReasonNetwork, 0)
		}
		inflight.Add(-1)
		mu.Lock()
		answered[id]++
		mu.Unlock()
		return okText(id)
	})

	sl := &sleepRecorder{}
	f := NewFront("fake", a, FrontConfig{InitialLimit: capacity, Sleep: sl.Sleep})
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = req("req-" + strconv.Itoa(i))
	}
	out := f.Complete(context.Background(), reqs)

	if len(out) != n {
		t.Fatalf("len = %d, want %d", len(out), n)
	}
	for i, o := range out {
		if o.Err != nil || Text(o.Response.Message) != "req-"+strconv.Itoa(i) {
			t.Errorf("out[%d] = %+v, want success req-%d", i, o, i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answered) != n {
		t.Errorf("%d distinct requests answered, want %d", len(answered), n)
	}
	for id, c := range answered {
		if c != 1 {
			t.Errorf("%s answered %d times, want 1", id, c)
		}
	}
	maxSends := 0
	for id, c := range sends {
		maxSends = max(maxSends, c)
		if c > DefaultMaxSends {
			t.Errorf("%s sent %d times, want ≤ %d", id, c, DefaultMaxSends)
		}
	}
	if got := n429.Load(); got > 3*capacity {
		t.Errorf("429s = %d, want ≤ %d", got, 3*capacity)
	}
	if got := len(sl.got()); int64(got) != n429.Load() {
		t.Errorf("backoff sleeps = %d, want one per 429 (%d)", got, n429.Load())
	}
	t.Logf("429s = %d, max in flight = %d, max sends of one request = %d, final limit = %d",
		n429.Load(), maxInflight.Load(), maxSends, f.Limit())
}

// AGENT.md §13.6: a fake provider that completes a batch in reverse order
// still yields outcomes in request order, and one failure is one outcome
// beside the others.
func TestProviderOutcomesInRequestOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 5
	var mu sync.Mutex
	var finished []int
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	a := adapterFunc(func(ctx context.Context, r Request) Outcome {
		i, _ := strconv.Atoi(Text(r.Messages[0]))
		defer close(done[i])
		<-done[i+1] // request i finishes only after request i+1: strictly reverse order
		mu.Lock()
		finished = append(finished, i)
		mu.Unlock()
		if i == 2 {
			return failWith(400, ReasonBadRequest, 0)
		}
		return okText(strconv.Itoa(i))
	})
	f := NewFront("fake", a, FrontConfig{InitialLimit: n, Sleep: (&sleepRecorder{}).Sleep})
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = req(strconv.Itoa(i))
	}
	out := f.Complete(context.Background(), reqs)
	if len(out) != n {
		t.Fatalf("len = %d, want %d", len(out), n)
	}
	for i, o := range out {
		if i == 2 {
			if o.Err == nil || ReasonOf(o.Err) != ReasonBadRequest || o.Response != nil {
				t.Errorf("out[2] = %+v, want the bad_request failure", o)
			}
			continue
		}
		if o.Err != nil || Text(o.Response.Message) != strconv.Itoa(i) {
			t.Errorf("out[%d] = %+v, want %d", i, o, i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(finished, []int{4, 3, 2, 1, 0}) {
		t.Errorf("completion order %v, want reverse", finished)
	}
}

// capable is an adapter with both optional capabilities, for one model.
type capable struct{ adapterFunc }

func (capable) SupportsSchema(model string) bool   { return model == "x/yes" }
func (capable) SupportsThinking(model string) bool { return model == "x/yes" }

// The Front is what the verbs are given: it must report its adapter's capabilities (a wrapper
// that hid them sent no native schema to any real provider), and none for an adapter without.
func TestFrontPassesCapabilities(t *testing.T) {
	plain := adapterFunc(func(context.Context, Request) Outcome { return Outcome{} })
	f := NewFront("x", capable{plain}, FrontConfig{})
	if !f.SupportsSchema("x/yes") || f.SupportsSchema("x/no") || !f.SupportsThinking("x/yes") || f.SupportsThinking("x/no") {
		t.Error("capabilities of the adapter not passed through")
	}
	g := NewFront("x", plain, FrontConfig{})
	if g.SupportsSchema("x/yes") || g.SupportsThinking("x/yes") {
		t.Error("an adapter without the capabilities reported some")
	}
}
