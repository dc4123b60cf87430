// Package providertest holds test doubles for the provider contract: Scripted answers from a queue
// of scripted outcomes, for the paths the mock provider never takes (re-asks, NIKA-INFER-001), and
// streams them (provider.Streamer) at a pace a test sets (SetStreamStep); Run is the conformance
// suite of the wire adapters.
package providertest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// Hook runs for every request Scripted receives, before the queue is consulted and outside its lock,
// so it may block (on a channel, on ctx) to stage concurrency. A non-nil outcome it returns answers the
// request instead of the queue; nil lets the queue answer.
type Hook func(ctx context.Context, req provider.Request) *provider.Outcome

// Scripted is a provider.Provider that answers requests in arrival order from a FIFO of scripted
// outcomes and records every request it receives. Within one Complete call requests are answered in
// request order; concurrent calls take from the queue in the order they reach it. An empty queue
// answers NIKA-INFER-001 (reason bad_request, "the script ran out"); a context cancelled before a
// request is answered yields reason cancelled and leaves the queue untouched. Safe for concurrent use.
type Scripted struct {
	mu    sync.Mutex
	queue []provider.Outcome
	reqs  []provider.Request
	hook  Hook
	step  StreamStep
}

var _ provider.Streamer = (*Scripted)(nil)

// StreamStep paces a streamed reply of Scripted (CompleteStream): it runs before the reply's tool
// call k is announced, and once more, with k equal to the number of calls, before CompleteStream
// returns (the end of the stream). It may block, on a channel or on ctx, to stage a rendezvous with
// the consumer ("tool 0 started before the stream ended"); an error (ctx's) ends the stream as
// cancelled.
type StreamStep func(ctx context.Context, k int) error

// NewScripted returns a Scripted provider whose queue holds outcomes.
func NewScripted(outcomes ...provider.Outcome) *Scripted {
	return &Scripted{queue: slices.Clone(outcomes)}
}

// Push appends outcomes to the queue.
func (s *Scripted) Push(outcomes ...provider.Outcome) *Scripted {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, outcomes...)
	return s
}

// SetHook installs (or, with nil, removes) the per-request hook.
func (s *Scripted) SetHook(h Hook) *Scripted {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
	return s
}

// SetStreamStep installs (or, with nil, removes) the pace of streamed replies.
func (s *Scripted) SetStreamStep(f StreamStep) *Scripted {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = f
	return s
}

// CompleteStream implements provider.Streamer: it takes the next outcome as Complete does; for a
// successful one it tells obs the reply's text (one delta), then each tool call in order, the
// StreamStep running before each call and before it returns. A failed outcome is returned without
// a word to obs.
func (s *Scripted) CompleteStream(ctx context.Context, req provider.Request, obs *provider.StreamObserver) provider.Outcome {
	o := s.answer(ctx, req)
	if o.Err != nil || o.Response == nil {
		return o
	}
	s.mu.Lock()
	step := s.step
	s.mu.Unlock()
	pace := func(k int) bool {
		return step == nil || step(ctx, k) == nil
	}
	cancelled := func() provider.Outcome {
		return provider.Failed(provider.Failure{Model: req.Model, Reason: provider.ReasonCancelled,
			Message: "request cancelled while the reply streamed", Cause: context.Cause(ctx)})
	}
	obs.Text(provider.Text(o.Response.Message))
	k := 0
	for _, b := range o.Response.Message.Blocks {
		if b.Type != provider.BlockToolUse {
			continue
		}
		if !pace(k) {
			return cancelled()
		}
		obs.ToolCall(provider.StreamCall{Index: k, Block: b})
		k++
	}
	if !pace(k) {
		return cancelled()
	}
	return o
}

// Requests returns a copy of the requests received so far, in arrival order.
func (s *Scripted) Requests() []provider.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Remaining returns the number of scripted outcomes not yet served.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Complete implements provider.Provider.
func (s *Scripted) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	out := make([]provider.Outcome, len(reqs))
	for i, req := range reqs {
		out[i] = s.answer(ctx, req)
	}
	return out
}

func (s *Scripted) answer(ctx context.Context, req provider.Request) (o provider.Outcome) {
	defer func() {
		if r := recover(); r != nil { // a panicking hook is a failed outcome, as for a real provider
			o = provider.Failed(provider.Failure{Model: req.Model, Reason: provider.ReasonBadRequest,
				Message: "providertest: hook panicked"})
		}
	}()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if h := hook(ctx, req); h != nil {
			return *h
		}
	}
	if err := ctx.Err(); err != nil {
		return provider.Failed(provider.Failure{Model: req.Model, Reason: provider.ReasonCancelled,
			Message: "request cancelled before the provider answered", Cause: context.Cause(ctx)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return provider.Failed(provider.Failure{Model: req.Model, Reason: provider.ReasonBadRequest,
			Message: "providertest: the script ran out: no scripted outcome left for this request"})
	}
	o = s.queue[0]
	s.queue[0] = provider.Outcome{}
	s.queue = s.queue[1:]
	return o
}

// Reply returns a successful outcome whose assistant message is one text block (stop end_turn, usage
// not reported).
func Reply(text string) provider.Outcome {
	return provider.Outcome{Response: &provider.Response{
		Message:    provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.TextBlock(text)}},
		StopReason: provider.StopEndTurn,
	}}
}

// Call is one tool call of a scripted assistant turn.
type Call struct {
	ID, Name string
	Input    string // JSON text
}

// ToolCalls returns a successful outcome whose assistant message is an optional text block (omitted
// when text is "") followed by one tool_use block per call, in order (stop tool_use).
func ToolCalls(text string, calls ...Call) provider.Outcome {
	var blocks []provider.Block
	if text != "" {
		blocks = append(blocks, provider.TextBlock(text))
	}
	for _, c := range calls {
		blocks = append(blocks, provider.ToolUseBlock(c.ID, c.Name, json.RawMessage(c.Input)))
	}
	return provider.Outcome{Response: &provider.Response{
		Message:    provider.Message{Role: provider.RoleAssistant, Blocks: blocks},
		StopReason: provider.StopToolUse,
	}}
}

// Fail returns a failed outcome: NIKA-INFER-001 with the given reason (transient per D27).
func Fail(reason string) provider.Outcome {
	return provider.Failed(provider.Failure{Reason: reason, Message: "providertest: scripted " + reason + " failure"})
}

// Error returns a failed outcome carrying e as it is.
func Error(e *spec.Error) provider.Outcome { return provider.Outcome{Err: e} }
