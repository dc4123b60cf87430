package provider

import (
	"context"
	"strings"

	"github.com/nikahq/nika/spec"
)

// Streamer is an optional capability, found by type assertion like NativeSchema: a provider that
// implements it can answer one request while the reply is still being written, telling obs what
// arrives (see StreamObserver). The Front implements it over every adapter; Stream is the way to
// call any provider with an observer.
//
// CompleteStream answers one request, exactly as Complete would answer it alone: same outcome,
// same retries, limiter and token accounting (a streamed request is one send per attempt). obs may
// be nil. It calls obs only on the calling goroutine, before it returns, and never after.
type Streamer interface {
	CompleteStream(ctx context.Context, req Request, obs *StreamObserver) Outcome
}

// StreamAdapter is an optional capability of an Adapter, found by type assertion: one exchange
// whose reply is read as it streams. ExchangeStream returns the outcome Exchange would return for
// the same answer (the assembled Response is the same value: text, tool_use blocks with canonical
// names and ids, usage, stop reason, replay data), and tells obs, on the calling goroutine, what
// it learns while reading: text deltas, and each tool call once its arguments are final. A
// stream cut short (EOF before the wire's terminal event, a read error) is a transport failure
// (reason network, timeout or cancelled, as for a body cut short); an error event inside the
// stream is classified like the same error in a plain body. A wire or server that cannot stream
// answers with the plain exchange (obs then hears nothing; the Front announces the reply). Like
// Exchange, it holds no policy.
type StreamAdapter interface {
	Adapter
	ExchangeStream(ctx context.Context, req Request, obs *StreamObserver) Outcome
}

// StreamObserver receives what a streamed request learns before its outcome is in. Every field
// is optional; a nil *StreamObserver observes nothing. The callbacks run on the goroutine that
// called CompleteStream, one at a time, while the stream is read: they should return quickly (a
// slow one holds up the reading, never anything else) and must not call back into the provider.
//
// What a consumer may rely on, for a Front or Stream:
//
//   - On a successful outcome, the OnText deltas since the start (or the last OnRestart) add up to
//     Text(resp.Message), and OnToolCall was called exactly once for each tool_use block of
//     resp.Message, with that block as it is in the response. Calls may be announced out of their
//     order in the response (a later call whose arguments closed first); Index places each one.
//     What the wire did not stream (a plain fallback, a server without streaming) is announced
//     from the response just before CompleteStream returns.
//   - OnRestart means the request is being sent again from scratch after a transient failure (a
//     stream cut short, a 5xx, a 429): everything announced before it is void and will be
//     announced again if the new send delivers it. Calls already started on its strength should
//     be cancelled or their results ignored.
//   - On a failed outcome everything announced since the last OnRestart is void.
//   - An announced call is complete, not approved: the outcome's StopReason can still say the turn
//     was cut (max_tokens), which the non-streaming path would refuse to run.
type StreamObserver struct {
	// OnText receives each piece of the reply's answer text, in order (never reasoning text).
	OnText func(delta string)
	// OnToolCall receives each tool call once its arguments can no longer change.
	OnToolCall func(call StreamCall)
	// OnRestart is called before send number send (2, 3, …) of the request, with the failure
	// of the previous send that caused it.
	OnRestart func(send int, cause *spec.Error)
}

// StreamCall is one tool call announced while a reply streams.
type StreamCall struct {
	Index int   // its position among the tool_use blocks of the response, from 0
	Block Block // the tool_use block exactly as the response holds it: ID, canonical Name, Input, ProviderData
}

// Text calls OnText with delta when both are set; nil-safe, for adapters.
func (o *StreamObserver) Text(delta string) {
	if o != nil && o.OnText != nil && delta != "" {
		o.OnText(delta)
	}
}

// ToolCall calls OnToolCall; nil-safe, for adapters.
func (o *StreamObserver) ToolCall(c StreamCall) {
	if o != nil && o.OnToolCall != nil {
		o.OnToolCall(c)
	}
}

// Restart calls OnRestart; nil-safe.
func (o *StreamObserver) Restart(send int, cause *spec.Error) {
	if o != nil && o.OnRestart != nil {
		o.OnRestart(send, cause)
	}
}

// Stream asks p for one response with obs observing it: through CompleteStream when p is a
// Streamer, else through Complete, the response's text and tool calls then announced to obs
// before Stream returns (so a consumer has one path for every provider, the mock included).
func Stream(ctx context.Context, p Provider, req Request, obs *StreamObserver) Outcome {
	if s, ok := p.(Streamer); ok {
		return s.CompleteStream(ctx, req, obs)
	}
	out := p.Complete(ctx, []Request{req})
	if len(out) != 1 {
		return Failed(Failure{Model: req.Model, Reason: ReasonServerError,
			Message: "provider returned no outcome for the request"})
	}
	if out[0].Err == nil && out[0].Response != nil {
		t := newTracker(obs)
		t.finish(out[0].Response)
	}
	return out[0]
}

// tracker stands between an adapter and the caller's observer: it keeps what was announced since
// the last restart, drops a repeated announcement of one call, and announces at the end what the
// adapter did not stream, so that StreamObserver's promises hold whatever the adapter did.
type tracker struct {
	obs       *StreamObserver
	text      strings.Builder
	announced map[int]bool
	inner     StreamObserver // handed to the adapter
}

func newTracker(obs *StreamObserver) *tracker {
	t := &tracker{obs: obs, announced: map[int]bool{}}
	t.inner = StreamObserver{OnText: t.onText, OnToolCall: t.onToolCall}
	return t
}

func (t *tracker) onText(delta string) {
	t.text.WriteString(delta)
	t.obs.Text(delta)
}

func (t *tracker) onToolCall(c StreamCall) {
	if c.Index < 0 || t.announced[c.Index] {
		return
	}
	t.announced[c.Index] = true
	t.obs.ToolCall(c)
}

// restart voids what was announced and tells the caller that send is next.
func (t *tracker) restart(send int, cause *spec.Error) {
	t.text.Reset()
	clear(t.announced)
	t.obs.Restart(send, cause)
}

// finish announces what the response holds and the adapter did not stream: the rest of the text
// (all of it when none streamed) and every tool call not announced yet, in order.
func (t *tracker) finish(r *Response) {
	if full := Text(r.Message); strings.HasPrefix(full, t.text.String()) {
		t.onText(full[t.text.Len():])
	}
	k := 0
	for _, b := range r.Message.Blocks {
		if b.Type != BlockToolUse {
			continue
		}
		t.onToolCall(StreamCall{Index: k, Block: b})
		k++
	}
}
