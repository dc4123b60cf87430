package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
)

// Overlapped dispatch (issue 17). While a turn's reply streams, each tool call is announced the
// moment its arguments are complete (provider.StreamObserver); an early batch starts it then,
// instead of after the last token, so the tools run while the model is still writing.
//
// It only prefetches: the core still decides, from the whole reply, what the turn does. When the
// core asks for the very batch that was announced (same calls, same order, same bytes), the early
// batch's results are its results; otherwise (a final answer, nika:done, a refusal, a reply cut
// by max_tokens that the core would not dispatch, a batch that differs) every call it started is
// cancelled and its results are never folded, and a differing batch is resolved as usual. The
// fold (request order, spill, the guard's input, the canonical events) is the plain path's, so a
// streamed run's transcript and trace are the non-streaming run's byte for byte.
//
// What may start early, and when (the whole-batch refusal semantics of AGENT.md §5.2):
//
//   - A turn overlaps only when no refusal by a call not yet announced is possible: the task's
//     tools (and permits.tools) admit every name, the turn is not the last (max_turns), and there
//     is no max_tokens_total (the turn's own tokens, known at its end, could exhaust it). A
//     whitelist that refuses some name holds the whole turn to the plain path, so a disallowed
//     call anywhere in the turn still stops the batch before anything runs.
//   - Each call is validated as it is announced, as the core validates a batch: an unclean name
//     (the one refusal an admit-everything whitelist leaves) or nika:done halts the early batch:
//     nothing more starts and what started is cancelled. The core then refuses or finishes from
//     the whole reply exactly as without streaming; only calls before the offender in request
//     order may have started.
//   - Calls start in request order (call i after calls 0..i-1 started, whatever order they were
//     announced in), at most max_parallel_tools in flight, so max_parallel_tools = 1 still runs
//     them one after another, each after the previous returned.
//   - Each call is resolved by dispatch.Resolve as a batch of one (its panics, timeouts and error
//     contents are §6.4's); a security-boundary refusal (NIKA-SEC-004/005) stops the early batch as
//     it stops a batch (§6.5).
//   - A restart of the request (OnRestart) cancels every call started from the voided attempt; the
//     cancellation of the run cancels them all. Either way the goroutines are waited for (a
//     cancelled Resolve returns at once; a tool ignoring its context finishes detached, as in
//     §6.6) before the driver goes on.
//
// A call announced in a reply that then ends max_tokens (cut while writing): the decision is the
// core's, as for everything else. WIRES.md §4.2 says not to run the calls of a cut reply; today's
// core reads no stop reason and dispatches them, streamed or not, so the early results are used
// (TestOverlapTraceEqualsPlainRun holds such a turn). Should the core ever refuse such a batch, it
// will not ask for it and the early calls are cancelled and never folded, with no change here.
//
// Each call in flight is two goroutines (the one running its Resolve and Resolve's worker), so an
// early batch holds at most 2·max_parallel_tools of them, where a plain batch holds one per call.
//
// The reply is journaled (memo.go) only once it is complete, as without streaming; a crash while
// it streams re-asks the model on resume, and calls that had started early run again then.

// maxEarlyCalls bounds the index of an announced call an early batch accepts; a larger one
// halts it (the plain path then resolves whatever the reply holds).
const maxEarlyCalls = 1 << 14

// early is the early batch of one streamed turn. announce, reset and collect run on the driver's
// goroutine (the observer's callbacks run there too); each started call runs on a goroutine of its
// own, which reports back under mu.
type early struct {
	r       *run
	turn    int
	slots   int
	timeout time.Duration
	parent  context.Context

	mu       sync.Mutex
	ctx      context.Context // the calls' context: cancelled by a halt, a restart, the end
	cancel   context.CancelFunc
	calls    []dispatch.Call // by index, where known
	known    []bool
	res      []dispatch.Result
	answered []bool
	bufs     []*emitBuf
	next     int  // the next call to start (request order)
	running  int  // started and not answered
	halted   bool // nothing more starts (a refusal, nika:done, an abort)
	stopped  bool // a call answered with a security-boundary refusal
	wake     chan struct{}
	wg       sync.WaitGroup
}

// overlap returns the early batch of turn request req, or nil when the turn must not overlap
// (see the comment above) or nothing streams.
func (r *run) overlap(ctx context.Context, req *core.Request) *early {
	a := &r.arming
	if req.Reask || len(req.Tools) == 0 || req.Turn >= a.MaxTurns || a.MaxTokens > 0 {
		return nil
	}
	if !admitsAll(a.Tools) || a.Permits != nil && !admitsAll(a.Permits.Tools) {
		return nil
	}
	if _, ok := r.prov.(provider.Streamer); !ok {
		return nil // the reply comes whole: nothing to overlap
	}
	cfg := dispatch.Config{MaxParallel: r.v.Config.MaxParallelTools}
	e := &early{r: r, turn: req.Turn, slots: cfg.Effective(dispatch.MaxMaxParallel),
		timeout: max(r.v.Config.ToolTimeout, 0), parent: ctx}
	e.init()
	return e
}

// admitsAll reports whether globs admit every name (spec.ToolAllowed: the last matching glob
// decides): a "**" with no negation after it.
func admitsAll(globs []string) bool {
	all := false
	for _, g := range globs {
		switch {
		case strings.HasPrefix(g, "!"):
			all = false
		case len(g) >= 2 && strings.Trim(g, "*") == "":
			all = true
		}
	}
	return all
}

func (e *early) init() {
	e.ctx, e.cancel = context.WithCancel(e.parent)
	e.calls, e.known, e.res, e.answered, e.bufs = nil, nil, nil, nil, nil
	e.next, e.running, e.halted, e.stopped = 0, 0, false, false
	e.wake = make(chan struct{})
}

// announce takes a call whose arguments are complete: validated as the core validates a batch,
// then started as soon as its turn in request order and a slot allow.
func (e *early) announce(c provider.StreamCall) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.halted {
		return
	}
	b := c.Block
	if c.Index < 0 || c.Index >= maxEarlyCalls || b.Type != provider.BlockToolUse ||
		!core.Clean(b.Name) || !e.r.arming.Admits(b.Name) || b.Name == router.NameDone {
		e.halted = true
		e.cancel()
		return
	}
	for len(e.known) <= c.Index {
		e.calls = append(e.calls, dispatch.Call{})
		e.known = append(e.known, false)
		e.res = append(e.res, dispatch.Result{})
		e.answered = append(e.answered, false)
		e.bufs = append(e.bufs, nil)
	}
	if e.known[c.Index] {
		return
	}
	e.calls[c.Index] = dispatch.Call{Index: c.Index, ID: b.ID, Name: b.Name, Args: b.Input}
	e.known[c.Index] = true
	e.pump()
}

// pump starts the calls that may start now. e.mu is held.
func (e *early) pump() {
	for !e.halted && e.next < len(e.known) && e.known[e.next] && e.running < e.slots {
		i := e.next
		e.next++
		e.running++
		buf := &emitBuf{}
		e.bufs[i] = buf
		e.wg.Add(1)
		go e.work(e.ctx, i, e.calls[i], buf)
	}
}

// work resolves one call as a batch of one and reports its result.
func (e *early) work(ctx context.Context, i int, c dispatch.Call, buf *emitBuf) {
	defer e.wg.Done()
	exec := func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error) {
		return e.r.execute(ctx, c, e.turn, buf.emit)
	}
	cfg := dispatch.Config{MaxParallel: 1, CallTimeout: e.timeout}
	res := dispatch.Resolve(ctx, cfg, dispatch.ExecutorFunc(exec), []dispatch.Call{c}, liveProgress{e.r})[0]
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctx != e.ctx {
		return // a call of a voided attempt: its result is never read
	}
	e.running--
	e.res[i], e.answered[i] = res, true
	if res.Boundary() { // §6.5: nothing more starts, the calls in flight see the cancellation
		e.halted, e.stopped = true, true
		e.cancel()
	}
	e.pump()
	close(e.wake)
	e.wake = make(chan struct{})
}

// reset voids everything started so far (OnRestart: the request is sent again from scratch).
func (e *early) reset() {
	e.abort()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
}

// abort cancels every call started, waits for their goroutines and drops their late events.
func (e *early) abort() {
	e.mu.Lock()
	e.halted = true
	e.cancel()
	bufs := e.bufs
	e.mu.Unlock()
	e.wg.Wait()
	for _, b := range bufs {
		if b != nil {
			b.close()
		}
	}
}

// collect returns the results of batch b from the early batch when it announced exactly b's
// calls, waiting for the calls still running and starting the ones not started yet; ok is false
// when it did not (the early batch is then aborted and b must be resolved as usual). When ctx is
// done first, what started is cancelled and the results are not to be read.
func (e *early) collect(ctx context.Context, b *core.Batch) (res []dispatch.Result, bufs []*emitBuf, ok bool) {
	if !e.matches(b) {
		e.abort()
		return nil, nil, false
	}
	for {
		e.mu.Lock()
		done := e.stopped || e.next == len(e.known) && e.running == 0
		wake := e.wake
		e.mu.Unlock()
		if done {
			break
		}
		select {
		case <-wake:
		case <-ctx.Done():
			e.abort()
			return nil, nil, true
		}
	}
	e.abort() // a stop leaves calls in flight; otherwise every goroutine is returning
	e.mu.Lock()
	defer e.mu.Unlock()
	why := spec.NewError(dispatch.CodeCancelled, "cancelled: the batch was stopped by a security-boundary refusal", nil)
	for i := range e.res {
		if !e.answered[i] {
			e.res[i] = dispatch.Result{Call: e.calls[i], Content: why.Code + dispatch.Separator + why.Message, Err: why}
		}
		if e.bufs[i] == nil {
			e.bufs[i] = &emitBuf{}
		}
	}
	return e.res, e.bufs, true
}

// matches reports whether the early batch holds exactly b's calls and was not halted.
func (e *early) matches(b *core.Batch) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.halted && !e.stopped || len(e.known) != len(b.Calls) {
		return false
	}
	for i, c := range b.Calls {
		k := e.calls[i]
		if !e.known[i] || k.ID != c.ID || k.Name != c.Name || !bytes.Equal(k.Args, c.Args) {
			return false
		}
	}
	return true
}
