// Package dispatch is phase 1 of the agent verb's parallel intra-turn
// dispatch (AGENT.md §6): it resolves every tool call of one batch
// concurrently, at most MaxParallel in flight, and returns one Result per
// call in request order. It owns no loop state: no events, no transcript, no
// guard, no router, no cost sums. The agent loop folds the results (phase 2,
// §6.3) on its own goroutine.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nikahq/nika/spec"
)

// Error codes used by the engine.
const (
	CodeInvokeFailed = spec.CodeInvokeFailed // tool error without a more specific code, or panic
	CodeTimeout      = spec.CodeTimeout
	CodeCancelled    = spec.CodeCancel
	CodeSecPermits   = spec.CodeSecPermits // batch stopper: outside permits
	CodeSecSSRF      = spec.CodeSecSSRF    // batch stopper: SSRF floor
)

// Separator between code and message in fed-back error contents (§6.4).
const Separator = " · "

// Limits of Config.MaxParallel.
const (
	DefaultMaxParallel = 8
	MaxMaxParallel     = 1024
)

// Call is one tool_use block of a batch. Index is the caller's label (its
// position in request order); Resolve places results by position in the
// slice it is given.
type Call struct {
	Index int
	ID    string
	Name  string
	Args  json.RawMessage
}

// Result answers exactly one Call. For a failure Err is set and Content is
// the fed-back text "<code> · <message>" (§6.4).
type Result struct {
	Call       Call
	Content    string
	Structured json.RawMessage
	Err        *spec.Error
	Elapsed    time.Duration
	Panicked   bool
}

// IsError reports whether the result is fed back as an is_error result.
func (r Result) IsError() bool { return r.Err != nil }

// Boundary reports whether the result is a security-boundary refusal
// (NIKA-SEC-004 or NIKA-SEC-005): the one batch stopper (§6.5). Such a result
// is never fed back.
func (r Result) Boundary() bool {
	return r.Err != nil && IsBoundaryCode(r.Err.Code)
}

// IsBoundaryCode reports whether code stops a batch (§6.5).
func IsBoundaryCode(code string) bool { return code == CodeSecPermits || code == CodeSecSSRF }

// Stopped returns the index of the lowest-indexed security-boundary refusal
// in results, or -1. When it is ≥ 0 the batch was stopped: the caller must
// not fold any result of it and fails the run with results[i].Err (§6.5).
func Stopped(results []Result) int {
	for i := range results {
		if results[i].Boundary() {
			return i
		}
	}
	return -1
}

// Executor runs one tool call. An error that is (or wraps) a *spec.Error
// keeps its code and message; any other error becomes NIKA-INVOKE-003.
type Executor interface {
	Execute(ctx context.Context, c Call) (content string, structured json.RawMessage, err error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, c Call) (string, json.RawMessage, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, c Call) (string, json.RawMessage, error) {
	return f(ctx, c)
}

// Progress receives calls starting and finishing in real order, for the live
// stream only (§6.7). It is called from the goroutine running Resolve (never
// concurrently, never after Resolve returns); it must not block; a panic in
// it is recovered and ignored.
type Progress interface {
	CallStarted(c Call)
	CallFinished(r Result)
}

// Config bounds one batch.
type Config struct {
	// MaxParallel: 0 → 8; 1 = strictly sequential; values above the batch
	// size act as the batch size; accepted 1..1024 (see Validate; Resolve
	// clamps out-of-range values).
	MaxParallel int
	// CallTimeout bounds each call; 0 = none. It holds against tools that
	// ignore their context (§6.4).
	CallTimeout time.Duration
}

// Validate reports a MaxParallel outside 0..1024 or a negative CallTimeout.
func (c Config) Validate() error {
	if c.MaxParallel < 0 || c.MaxParallel > MaxMaxParallel {
		return fmt.Errorf("dispatch: max_parallel_tools %d outside 1..%d", c.MaxParallel, MaxMaxParallel)
	}
	if c.CallTimeout < 0 {
		return fmt.Errorf("dispatch: negative call timeout %s", c.CallTimeout)
	}
	return nil
}

// Effective returns the number of slots used for a batch of n calls.
func (c Config) Effective(n int) int {
	p := c.MaxParallel
	switch {
	case p <= 0:
		p = DefaultMaxParallel
	case p > MaxMaxParallel:
		p = MaxMaxParallel
	}
	if p > n {
		p = n
	}
	if p < 1 {
		p = 1
	}
	return p
}

// Resolve runs every call of one batch (AGENT.md §6.2–§6.6) and returns
// len(calls) results, results[i] answering calls[i].
//
//   - At most cfg.Effective(len(calls)) calls are in flight; a slot is acquired
//     before the goroutine starts; calls start in request order.
//   - Errors, panics (NIKA-INVOKE-003) and per-call timeouts
//     (NIKA-TIMEOUT-001) are is_error results; siblings are unaffected.
//   - The first security-boundary refusal (NIKA-SEC-004/005) stops the batch:
//     the batch context is cancelled, no queued call starts, in-flight calls
//     see the cancellation, and Resolve returns at once. Calls that did not
//     finish get NIKA-CANCEL-001; the caller detects the stop with Stopped and
//     folds nothing.
//   - After ctx is cancelled nothing new starts and Resolve returns at once;
//     calls not finished get NIKA-CANCEL-001 (NIKA-TIMEOUT-001 when ctx hit
//     its deadline).
//
// When Resolve returns, every goroutine it started has ended, is inside
// Executor.Execute, or has only non-blocking steps left (a send on a
// channel with room for it; a worker not yet scheduled sees the cancelled
// batch context and skips its tool): a tool that ignores its cancelled
// context (or its call timeout) finishes detached and its late result is
// discarded (§6.4, §6.6). Such a goroutine may still read its call, so the
// caller must not modify calls (nor their Args) once Resolve has them.
//
// The shape (§6.2): Resolve's own goroutine (the coordinator) is the only one
// that writes results or calls Progress. A worker runs one call, writes its
// answer into its call's slot and sends the call's index on a channel
// buffered for every send the batch can make, so no worker ever blocks. The
// coordinator reads a slot's answer only once it has received the index, and
// only for the call's first answer, so a late worker (its call timed out, or
// Resolve returned early) writes into a slot nobody reads again. The
// semaphore is the number of calls started and not yet answered: a slot is
// taken before the goroutine starts and given back only when the coordinator
// receives the call's result, so it never starts a call while a result that
// freed a slot is unread: at P = 1 a refusal is always seen before the next
// call starts (§6.1, §6.5).
func Resolve(ctx context.Context, cfg Config, exec Executor, calls []Call, progress Progress) []Result {
	n := len(calls)
	if n == 0 {
		return []Result{}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &batch{ctx: bctx, exec: exec, timeout: max(cfg.CallTimeout, 0),
		calls: calls, res: make([]Result, n), slots: make([]slot, n), progress: progress}
	sends := n
	if b.timeout > 0 {
		sends = 2 * n // a call's timer and its late worker both send
	}
	b.out = make(chan int, sends)

	p := cfg.Effective(n)
	started, answered, stopped := 0, 0, false
	for answered < n && !stopped {
		if started < n && started-answered < p { // a slot is free: take it
			if ctx.Err() != nil { // nothing starts after cancellation (§6.6)
				break
			}
			b.start(started)
			started++
			continue
		}
		k, ok := b.receive(ctx)
		if !ok { // ctx cancelled
			break
		}
		if i, first := b.accept(k); first { // the slot is free again
			answered++
			stopped = b.res[i].Boundary() // §6.5
		}
	}
	if answered < n {
		cancel()
		b.abandon(started, cancelError(ctx, stopped))
	}
	return b.res
}

// batch is one Resolve. Workers and call timers read only ctx, exec,
// timeout, out and calls, and a worker writes only its call's slot answer;
// everything else is the coordinator's.
type batch struct {
	ctx      context.Context // the batch context, cancelled when Resolve returns
	exec     Executor
	timeout  time.Duration
	out      chan int // i: the worker of calls[i] has answered; ^i: its call timer fired
	calls    []Call
	res      []Result
	slots    []slot
	progress Progress
}

// slot is one call's record: the coordinator's but for answer, which the
// call's worker writes before it sends the index.
type slot struct {
	start    time.Duration // clock() before the call's goroutine starts, never set after
	timer    *time.Timer   // the call timeout, when there is one
	answered bool          // its result is in res and its semaphore slot free
	answer   answer
}

// epoch and clock time the calls on the monotonic clock alone. time.Now
// reads the wall clock too: on the 2-core development VM it takes about
// 0.19 µs against 0.065 µs for clock, and a quick call is timed twice.
var epoch = time.Now()

func clock() time.Duration { return time.Since(epoch) }

// answer is a worker's result, less the Call, which Resolve has.
type answer struct {
	content    string
	structured json.RawMessage
	err        *spec.Error
	elapsed    time.Duration
	panicked   bool
}

// start starts calls[i] on a goroutine of its own, and its call timer.
func (b *batch) start(i int) {
	c := b.calls[i]
	s := &b.slots[i]
	s.start = clock()
	notifyStarted(b.progress, c)
	go b.work(i)
	if b.timeout > 0 {
		// The timer answers for a tool that ignores its context (§6.4): the
		// call gets the timeout result and frees its semaphore slot, and the
		// worker's late answer loses in accept.
		s.timer = time.AfterFunc(b.timeout, func() { b.out <- ^i })
	}
}

// work is a worker: it runs calls[i], writes the answer into the call's
// slot and sends i, which never blocks (b.out has room for every send of
// the batch).
func (b *batch) work(i int) {
	s := &b.slots[i]
	b.run(&s.answer, b.calls[i])
	s.answer.elapsed = clock() - s.start
	b.out <- i
}

// receive returns the next value sent on b.out, or false once ctx is done.
// One already queued is taken without a select, the common case when calls
// are quick.
func (b *batch) receive(ctx context.Context) (int, bool) {
	select {
	case k := <-b.out:
		return k, true
	default:
	}
	select {
	case k := <-b.out:
		return k, true
	case <-ctx.Done():
		return 0, false
	}
}

// accept takes the answer received as k (see batch.out) into res, unless
// the call was answered already (a timed-out call's worker loses to its
// timer), and reports the call's index and whether it did.
func (b *batch) accept(k int) (i int, first bool) {
	i = k
	if k < 0 {
		i = ^k
	}
	s := &b.slots[i]
	if s.answered {
		return i, false
	}
	s.answered = true
	r := &b.res[i]
	c := b.calls[i]
	if k < 0 { // the call timed out
		*r = errResult(c, timeoutError(c, b.timeout))
		r.Elapsed = clock() - s.start
	} else {
		if s.timer != nil {
			s.timer.Stop()
		}
		a := &s.answer
		*r = Result{Call: c, Content: a.content, Structured: a.structured, Err: a.err,
			Elapsed: a.elapsed, Panicked: a.panicked}
	}
	notifyFinished(b.progress, *r)
	return i, true
}

// abandon ends a batch that stopped early (ctx cancelled, or a refusal):
// answers already queued are taken, every other call gets why, and the ones
// that had started are reported finished. Their workers, if still running,
// finish detached.
func (b *batch) abandon(started int, why *spec.Error) {
	for queued := true; queued; {
		select {
		case k := <-b.out:
			b.accept(k)
		default:
			queued = false
		}
	}
	for i := range b.slots {
		s := &b.slots[i]
		if s.answered {
			continue
		}
		if s.timer != nil {
			s.timer.Stop()
		}
		b.res[i] = errResult(b.calls[i], why)
		if i < started {
			b.res[i].Elapsed = clock() - s.start
			notifyFinished(b.progress, b.res[i])
		}
	}
}

// run executes one call on its worker goroutine, turning every failure into
// an error answer. Its frames stay small (the failures are classified in
// functions of their own) so that a worker running a quick tool keeps to its
// first stack instead of copying it to a bigger one.
func (b *batch) run(a *answer, c Call) {
	defer recoverPanic(a, c.Name)
	if b.ctx.Err() != nil { // checked before calling the tool
		a.fail(cancelError(b.ctx, false))
		return
	}
	ctx := b.ctx
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	content, structured, err := b.exec.Execute(ctx, c)
	if err != nil {
		a.fail(b.failure(ctx, c, err))
		return
	}
	a.content, a.structured = content, structured
}

// recoverPanic turns a panic of the call into its answer (§6.4).
func recoverPanic(a *answer, name string) {
	if v := recover(); v != nil {
		a.panic(name, v)
	}
}

//go:noinline
func (a *answer) panic(name string, v any) {
	a.fail(spec.NewError(CodeInvokeFailed, fmt.Sprintf("%s panicked: %v", name, v), nil))
	a.panicked = true
}

//go:noinline
func (a *answer) fail(e *spec.Error) {
	a.content, a.structured, a.err = errContent(e), nil, e
}

// failure classifies a tool's error (§6.4); ctx is the call's context.
//
//go:noinline
func (b *batch) failure(ctx context.Context, c Call, err error) *spec.Error {
	var se *spec.Error
	switch {
	case errors.As(err, &se) && se != nil && se.Code != "":
		return se
	case b.ctx.Err() != nil:
		return cancelError(b.ctx, false)
	case b.timeout > 0 && ctx.Err() != nil:
		return timeoutError(c, b.timeout)
	default:
		return spec.NewError(CodeInvokeFailed, fmt.Sprintf("%s failed: %v", c.Name, err), nil)
	}
}

func timeoutError(c Call, timeout time.Duration) *spec.Error {
	return spec.NewError(CodeTimeout, fmt.Sprintf("%s exceeded its %s call timeout", c.Name, timeout), nil)
}

func errResult(c Call, e *spec.Error) Result {
	return Result{Call: c, Content: errContent(e), Err: e}
}

// errContent is the fed-back text of a failure (§6.4).
func errContent(e *spec.Error) string { return e.Code + Separator + e.Message }

// cancelError is the result error of a call that did not finish because the
// batch ended early.
func cancelError(ctx context.Context, stopper bool) *spec.Error {
	switch {
	case stopper:
		return spec.NewError(CodeCancelled, "cancelled: the batch was stopped by a security-boundary refusal", nil)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return spec.NewError(CodeTimeout, "the task deadline expired before the call finished", nil)
	default:
		return spec.NewError(CodeCancelled, "cancelled before the call finished", nil)
	}
}

func notifyStarted(p Progress, c Call) {
	if p == nil {
		return
	}
	defer func() { _ = recover() }()
	p.CallStarted(c)
}

func notifyFinished(p Progress, r Result) {
	if p == nil {
		return
	}
	defer func() { _ = recover() }()
	p.CallFinished(r)
}
