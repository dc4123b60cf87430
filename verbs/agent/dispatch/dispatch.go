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
	"sync/atomic"
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

// slot states
const (
	stIdle    int32 = iota // not started
	stRunning              // a worker owns the call
	stSettled              // exactly one party (worker, timer or coordinator) wrote the slot
)

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
// Every goroutine Resolve starts has ended or is inside Executor.Execute when
// it returns: a tool that ignores its cancelled context (or its call timeout)
// finishes detached and its late result is discarded (§6.4, §6.6).
func Resolve(ctx context.Context, cfg Config, exec Executor, calls []Call, progress Progress) []Result {
	n := len(calls)
	res := make([]Result, n)
	if n == 0 {
		return res
	}
	p := cfg.Effective(n)
	timeout := cfg.CallTimeout
	if timeout < 0 {
		timeout = 0
	}

	state := make([]atomic.Int32, n)
	starts := make([]time.Time, n) // written and read by the coordinator only
	var timers []*time.Timer
	if timeout > 0 {
		timers = make([]*time.Timer, n)
	}
	done := make(chan int, n) // buffered to n: no worker ever blocks on exit
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// next: calls started; finished: completions received; running: slots
	// held (started, completion not received). Only the coordinator frees a
	// slot, when it receives the completion, so it never starts a call while
	// the completion that freed the slot is still unread: at P = 1 a refusal
	// is always seen before the next call starts (§6.1, §6.5).
	next, finished, running := 0, 0, 0
	abort := func(stopper bool) {
		cancel()
		for _, t := range timers {
			if t != nil {
				t.Stop()
			}
		}
		why := cancelError(ctx, stopper)
		outstanding := 0
		for i := 0; i < next; i++ {
			switch {
			case state[i].CompareAndSwap(stRunning, stSettled):
				// The coordinator owns the slot now; the worker will lose.
				res[i] = errResult(calls[i], why)
				res[i].Elapsed = time.Since(starts[i])
				notifyFinished(progress, res[i])
			default:
				outstanding++ // settled by someone else; counted below
			}
		}
		// Slots settled by a worker or a timer but not yet received: their
		// writer is in non-blocking code (write, send on a buffered channel).
		outstanding -= finished
		for ; outstanding > 0; outstanding-- {
			i := <-done
			finished++
			notifyFinished(progress, res[i])
		}
		for i := next; i < n; i++ {
			res[i] = errResult(calls[i], why)
		}
	}

	for finished < n {
		if next < n && running < p {
			if ctx.Err() != nil { // nothing starts after cancellation (§6.6)
				abort(false)
				return res
			}
			i := next
			next++
			running++
			c := calls[i]
			starts[i] = time.Now()
			state[i].Store(stRunning)
			notifyStarted(progress, c)
			start := starts[i]
			if timeout > 0 {
				timers[i] = time.AfterFunc(timeout, func() {
					if state[i].CompareAndSwap(stRunning, stSettled) {
						r := errResult(c, spec.NewError(CodeTimeout,
							fmt.Sprintf("%s exceeded its %s call timeout", c.Name, timeout), nil))
						r.Elapsed = time.Since(start)
						res[i] = r
						done <- i // the call, if still running, is detached
					}
				})
			}
			go func() {
				r := run(bctx, exec, c, timeout)
				r.Elapsed = time.Since(start)
				if state[i].CompareAndSwap(stRunning, stSettled) {
					res[i] = r
					done <- i
				} // else: timed out or abandoned; the late result is discarded
			}()
			continue
		}
		select {
		case i := <-done: // res[i] is visible: the write happens before the send
			finished++
			running--
			if timers != nil {
				timers[i].Stop()
			}
			notifyFinished(progress, res[i])
			if res[i].Boundary() {
				abort(true)
				return res
			}
		case <-ctx.Done():
			abort(false)
			return res
		}
	}
	return res
}

// run executes one call in the worker goroutine, turning every failure into
// a result.
func run(bctx context.Context, exec Executor, c Call, timeout time.Duration) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = errResult(c, spec.NewError(CodeInvokeFailed, fmt.Sprintf("%s panicked: %v", c.Name, v), nil))
			r.Panicked = true
		}
	}()
	if bctx.Err() != nil { // checked before calling the tool
		return errResult(c, cancelError(bctx, false))
	}
	cctx := bctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(bctx, timeout)
		defer cancel()
	}
	content, structured, err := exec.Execute(cctx, c)
	if err == nil {
		return Result{Call: c, Content: content, Structured: structured}
	}
	var se *spec.Error
	switch {
	case errors.As(err, &se) && se != nil && se.Code != "":
		return errResult(c, se)
	case bctx.Err() != nil:
		return errResult(c, cancelError(bctx, false))
	case timeout > 0 && cctx.Err() != nil:
		return errResult(c, spec.NewError(CodeTimeout,
			fmt.Sprintf("%s exceeded its %s call timeout", c.Name, timeout), nil))
	default:
		return errResult(c, spec.NewError(CodeInvokeFailed, fmt.Sprintf("%s failed: %v", c.Name, err), nil))
	}
}

func errResult(c Call, e *spec.Error) Result {
	return Result{Call: c, Content: e.Code + Separator + e.Message, Err: e}
}

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
