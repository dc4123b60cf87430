package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nikahq/nika/spec"
)

// Defaults of FrontConfig (D28: a request is sent at most 5 times within 60 s).
const (
	DefaultInitialLimit = 16
	DefaultMaxLimit     = 1024
	DefaultMaxSends     = 5
	DefaultDeadline     = 60 * time.Second

	imageTokens = 1600 // about what the wires count for one image at their default detail

	backoffBase = 500 * time.Millisecond
	backoffCap  = 8 * time.Second
)

// FrontConfig tunes a Front. A zero field takes its default.
type FrontConfig struct {
	InitialLimit int // requests in flight at start; default DefaultInitialLimit (16)
	// MaxLimit is the most requests in flight the limiter ever allows (NIKA_<PROVIDER>_MAX_INFLIGHT);
	// default DefaultMaxLimit. The provider's HTTP client keeps as many idle connections.
	MaxLimit int
	// RPM and TPM are the provider's published budgets, requests and tokens per minute
	// (NIKA_<PROVIDER>_RPM, NIKA_<PROVIDER>_TPM); 0 is none. The limiter never sends more within any
	// 60 s window (tokens estimated before the send, corrected from the reported usage).
	RPM, TPM int
	MaxSends int           // sends per request, the first included; default 5
	Deadline time.Duration // no send starts later than this after a request's first send; default 60 s
	// NoStream makes CompleteStream send plain requests (NIKA_<PROVIDER>_STREAM=0): the reply is
	// then announced to the observer once it is complete. The zero value streams wherever the
	// adapter can (a StreamAdapter).
	NoStream bool
	// Sleep waits d or until ctx is done (then it returns ctx's error). Injectable for tests; the
	// default uses a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Front turns an Adapter into a Provider and owns the policy the adapter must not have (STYLE.md
// "provider", like *sql.DB over a driver.Conn): one adaptive concurrency limiter shared by every call
// on this instance (AGENT.md §11.2), retries of transient failures honouring retry_after_ms, and
// batch-first Complete. Build one Front per provider and share it; it is safe for concurrent use.
//
// The limiter (see limiter) starts in slow start at 16: the limit grows per round of successes
// (fourfold below 256, then doubling), until a rate_limited answer or latency rising well above the floor
// seen so far; then it grows by 1 per `limit` successes and halves on a rate_limited answer (at
// most once per congestion event, never below 1), between InitialLimit and MaxLimit. Decisions the
// design left open:
//
//   - Slow start's new slots are paced: they open one at a time over a round at the floor latency,
//     so the overshoot past a provider's capacity is what goes out while the first refusal is on
//     its way back, not a whole step of the limit. Starting at 16 and growing fourfold gets a local
//     server batching a thousand requests to full use in four rounds (16, 64, 256, 512, 1,024;
//     within 1 s at 200 ms a round); doubling above 256 keeps the overshoot small where a step
//     would be hundreds of requests. 16 at once is what the smallest tiers admit (a provider that
//     admits fewer refuses the first round's excess once, and the limit comes down to it).
//   - A rate_limited answer also reveals a capacity: the requests still in flight as the refusals
//     of the congestion event come back. The decrease never leaves the limit above it, and slow
//     start resumes after the halving, up to it, so a provider that limits concurrency is back at
//     its capacity one round after the pause; the limit then stays there for a hold (10 s, doubling
//     up to 5 min while each probe above it finds no more; a failed probe goes back to the capacity,
//     not to half), because every probe that overshoots costs a Retry-After pause for every caller.
//   - Only sends made while at least half the limit was in use (or with requests waiting) raise it,
//     so a lone caller does not build up a limit it never tested.
//   - A Retry-After pauses every send on the Front until it passes, not only the refused request's.
//   - RPM and TPM budgets hold a send until it fits the last minute's window; a request is counted
//     at EstimateTokens before it is sent and at the reported usage once answered.
//
// Time spent waiting in the limiter is not a retry (D28).
type Front struct {
	name    string
	adapter Adapter
	cfg     FrontConfig
	lim     *limiter
}

var (
	_ Provider       = (*Front)(nil)
	_ NativeSchema   = (*Front)(nil)
	_ NativeThinking = (*Front)(nil)
	_ Streamer       = (*Front)(nil)
)

// NewFront returns the front end of provider name (e.g. "openai") over a.
func NewFront(name string, a Adapter, cfg FrontConfig) *Front {
	if cfg.InitialLimit <= 0 {
		cfg.InitialLimit = DefaultInitialLimit
	}
	if cfg.MaxLimit <= 0 {
		cfg.MaxLimit = DefaultMaxLimit
	}
	if cfg.InitialLimit > cfg.MaxLimit {
		cfg.InitialLimit = cfg.MaxLimit
	}
	if cfg.MaxSends <= 0 {
		cfg.MaxSends = DefaultMaxSends
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepTimer
	}
	return &Front{
		name:    name,
		adapter: a,
		cfg:     cfg,
		lim:     newLimiter(realClock{}, cfg.InitialLimit, cfg.MaxLimit, cfg.RPM, cfg.TPM),
	}
}

// SupportsSchema passes the adapter's provider.NativeSchema capability through: a Front is what
// the verbs are given, so without it no request would ever carry a native response format
// (LANGUAGE.md §5.1 rule 1). An adapter without the capability reports false.
func (f *Front) SupportsSchema(model string) bool {
	ns, ok := f.adapter.(NativeSchema)
	return ok && ns.SupportsSchema(model)
}

// SupportsThinking passes the adapter's provider.NativeThinking capability through, like
// SupportsSchema.
func (f *Front) SupportsThinking(model string) bool {
	nt, ok := f.adapter.(NativeThinking)
	return ok && nt.SupportsThinking(model)
}

// Stats is a snapshot of a Front's limiter, for metrics and the progress view.
type Stats struct {
	Limit       int    // the current concurrency limit
	InFlight    int    // requests sent and not answered yet
	Waiting     int    // requests waiting for a slot (the limit, a Retry-After pause or a budget)
	RateLimited uint64 // answers rate_limited since the Front was built
}

// Stats returns a snapshot of the limiter.
func (f *Front) Stats() Stats { return f.lim.stats() }

// Limit returns the limiter's current concurrency limit.
func (f *Front) Limit() int { return f.lim.stats().Limit }

// Complete answers every request: len(out) == len(reqs), out[i] answers reqs[i]. Requests run
// concurrently under the shared limiter; every goroutine started here has ended when it returns. A
// cancelled ctx yields reason "cancelled" for every request not yet answered, without sending it.
func (f *Front) Complete(ctx context.Context, reqs []Request) []Outcome {
	out := make([]Outcome, len(reqs))
	if len(reqs) == 1 {
		out[0] = f.one(ctx, &reqs[0], nil)
		return out
	}
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() { out[i] = f.one(ctx, &reqs[i], nil) })
	}
	wg.Wait()
	return out
}

// CompleteStream answers one request as Complete does, under the same limiter, retries, MaxSends,
// Deadline and token accounting (each attempt is one send, held in flight until its stream ends),
// reading the reply as it streams when the adapter is a StreamAdapter and NoStream is off
// (provider.Streamer). obs hears every text delta and tool call (StreamObserver), and OnRestart
// before each send after the first. It starts no goroutine.
func (f *Front) CompleteStream(ctx context.Context, req Request, obs *StreamObserver) (o Outcome) {
	t := newTracker(obs)
	o = f.one(ctx, &req, t)
	if o.Err == nil {
		defer func() {
			if r := recover(); r != nil { // the observer's, as inside a send
				o = f.internal(&req, fmt.Sprintf("provider %s: stream observer panic: %v", f.name, r))
			}
		}()
		t.finish(o.Response)
	}
	return o
}

// one runs a request to its final outcome: sends, limiter waits and back-off. t is nil for a
// plain request, else the observer of a streamed one.
func (f *Front) one(ctx context.Context, req *Request, t *tracker) (o Outcome) {
	defer func() {
		if r := recover(); r != nil { // a defect of the front end itself; never reach the caller
			o = f.internal(req, fmt.Sprintf("provider %s: internal failure: %v", f.name, r))
		}
	}()
	var first time.Time
	tokens := EstimateTokens(req)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return f.cancelled(ctx, req)
		}
		tok, err := f.lim.acquire(ctx, tokens)
		if err != nil {
			return f.cancelled(ctx, req)
		}
		if n == 1 {
			first = f.lim.clock.Now()
		}
		o = f.exchange(ctx, req, t)
		reason := ""
		if o.Err != nil {
			reason = ReasonOf(o.Err)
		}
		f.lim.release(tok, sent(o, reason))

		if o.Err == nil {
			return o
		}
		if ctx.Err() != nil {
			return f.cancelled(ctx, req)
		}
		if !Transient(reason) {
			return o
		}
		o.Err.Transient = true
		if n >= f.cfg.MaxSends {
			return o
		}
		wait, hinted := retryAfter(o.Err)
		if !hinted {
			wait = backoff(n)
		}
		if f.lim.clock.Now().Add(wait).Sub(first) > f.cfg.Deadline {
			return o // the next send would start past the budget (WIRES.md §4.4)
		}
		if t != nil {
			t.restart(n+1, o.Err) // before the wait, so a consumer can stop what it started at once
		}
		if err := f.cfg.Sleep(ctx, wait); err != nil || ctx.Err() != nil {
			return f.cancelled(ctx, req)
		}
	}
}

// sent is how a send went, for the limiter.
func sent(o Outcome, reason string) outcome {
	if o.Err == nil {
		s := outcome{ok: true}
		if u := o.Response.Usage; u.Reported {
			s.tokens = u.InputTokens + u.OutputTokens
		}
		return s
	}
	if reason != ReasonRateLimited {
		return outcome{}
	}
	wait, _ := retryAfter(o.Err)
	return outcome{limited: true, retryAfter: wait}
}

// EstimateTokens is what a request is counted against a TPM budget before it is sent: about one
// token per four bytes of its system prompt, messages and tool definitions, imageTokens per image,
// plus its MaxTokens. The provider's reported usage replaces it once the answer is in.
func EstimateTokens(r *Request) int {
	n := len(r.System)
	for _, m := range r.Messages {
		for _, b := range m.Blocks {
			n += len(b.Text) + len(b.Input) + len(b.Content)
			if b.Type == BlockImage {
				n += 4 * imageTokens
			}
		}
	}
	for _, t := range r.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n/4 + 1 + max(r.MaxTokens, 0)
}

// exchange makes one send, streamed when t is set, the adapter can stream and NoStream is off,
// turning an adapter panic (or an observer's) or a malformed outcome into a failed outcome.
func (f *Front) exchange(ctx context.Context, req *Request, t *tracker) (o Outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = f.internal(req, fmt.Sprintf("provider %s: adapter panic: %v", f.name, r))
		}
	}()
	if sa, ok := f.adapter.(StreamAdapter); ok && t != nil && !f.cfg.NoStream {
		o = sa.ExchangeStream(ctx, *req, &t.inner)
	} else {
		o = f.adapter.Exchange(ctx, *req)
	}
	switch {
	case o.Err != nil:
		o.Response = nil
	case o.Response == nil:
		o = f.internal(req, fmt.Sprintf("provider %s: adapter returned neither a response nor an error", f.name))
	}
	return o
}

func (f *Front) cancelled(ctx context.Context, req *Request) Outcome {
	return Failed(Failure{Provider: f.name, Model: req.Model, Reason: ReasonCancelled,
		Message: "request cancelled before the provider answered", Cause: context.Cause(ctx)})
}

// internal is the outcome of a defect: a code-less internal_error, never retried.
func (f *Front) internal(req *Request, msg string) Outcome {
	return Outcome{Err: &spec.Error{Category: "internal_error", Message: msg,
		Details: map[string]any{"provider": f.name, "model": req.Model}}}
}

// backoff is the wait after the n-th failed send without a server hint: 500 ms doubling, capped at 8 s.
func backoff(n int) time.Duration {
	if n > 5 {
		return backoffCap
	}
	return min(backoffBase<<(n-1), backoffCap)
}

// retryAfter reads details.retry_after_ms of a NIKA-INFER-001 error.
func retryAfter(e *spec.Error) (time.Duration, bool) {
	if e == nil || e.Details == nil {
		return 0, false
	}
	var ms float64
	switch v := e.Details["retry_after_ms"].(type) {
	case int64:
		ms = float64(v)
	case int:
		ms = float64(v)
	case int32:
		ms = float64(v)
	case float64:
		ms = v
	case json.Number:
		x, err := v.Float64()
		if err != nil {
			return 0, false
		}
		ms = x
	default:
		return 0, false
	}
	if math.IsNaN(ms) || ms < 0 {
		return 0, false
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
