package core

import (
	"encoding/json"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Loop event kinds of AGENT.md §10.1, as delivered to an observer. Some of them are also released
// on the canonical stream under their wire kinds; run_started, turn_started and finished never are.
const (
	EventRunStarted       = "run_started"       // model, universe, routed
	EventTurnStarted      = "turn_started"      // turn (1-based)
	EventToolsSelected    = "tools_selected"    // turn, offered, universe, builtin, mcp, other
	EventBudgetCheckpoint = "budget_checkpoint" // turn, total_tokens, budget (nil when unset)
	EventToolCompleted    = "tool_completed"    // turn, name, is_error
	EventComposeChecked   = "compose_checked"   // turn, valid, violations
	EventNudged           = "nudged"            // turn, reason, period
	EventStalled          = "stalled"           // turn, period, repeats
	EventFinished         = "finished"          // turns, total_tokens
)

// Event is one event the driver releases, in Step order. Wire is its kind on the canonical stream
// (the job's Emit), "" when it is not released there; Loop is its kind for the run's observer
// (§10.1), "" when the observer does not get it. An event with both goes to the observer first,
// with a copy of Fields, then to the canonical stream. Turn is the 1-based turn it belongs to, 0
// for run_started and finished. Fields is the payload; the core never reads or reuses it after it
// handed it out.
type Event struct {
	Wire   string
	Loop   string
	Turn   int
	Fields map[string]any
}

// Emitted is an event a tool call emitted itself while it ran (nika:log, nika:emit).
type Emitted struct {
	Kind   string
	Fields map[string]any
}

// Step is what the core decided after one input: release Events in order (they precede the
// action), send the deterministic Live notes to the live stream, then carry out exactly one of
// Next, Request, Batch and Done.
type Step struct {
	Events []Event
	// Live are the notes of decisions the live stream shows (a nudge, a stall), with their turn.
	// The driver adds its own (provider requests, tool calls, the finish) around them.
	Live []workflow.LiveNote

	Next    bool     // between turns: check for cancellation, then call Loop.Next
	Request *Request // send this model request and report its outcome with Loop.Replied
	Batch   *Batch   // resolve these calls and report with Loop.Resolved
	Done    *Finish  // the run is over
}

// Request is one model request to send as a batch of one.
type Request struct {
	Turn  int  // the turn it belongs to (a re-ask: the turn it finalizes)
	Reask bool // a schema re-ask (§5.4): not a turn
	provider.Request
}

// Batch is one turn's tool calls to resolve (AGENT.md §6), in request order. It holds neither
// nika:done nor a name the whitelist denies.
type Batch struct {
	Turn  int
	Calls []Call
}

// Call is one tool_use block of a batch.
type Call struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolCall is one call of a Batch as a driver that resolves the calls one by one (each its own
// activity, on Temporal) hands it to the effect that carries it out.
type ToolCall struct {
	Turn  int // the batch's turn
	Index int // the call's index in its batch
	Call  Call
	// InUniverse says that the call's name is in the arming's Universe; a call to any other
	// name is NIKA-INVOKE-002.
	InUniverse bool
}

// Reply is the outcome of a Request: exactly one of Response and Err.
type Reply struct {
	Response *provider.Response
	Err      *spec.Error
}

// Result answers one Call of a Batch, in request order.
type Result struct {
	// Content is the call's full content: its output, or "<code> · <message>" for a failure (§6.4).
	// The guard hashes it.
	Content string
	// Spilled, when not "", is what the model gets instead of Content (§4.4).
	Spilled string
	// Err is set for a failed call (is_error); a NIKA-SEC-004/005 stops the batch (§6.5).
	Err *spec.Error
	// Events are the call's own events, in the order it emitted them.
	Events []Emitted
}

// Finish is the end of a run.
type Finish struct {
	Output      any         // the final answer; nil with Err
	Err         *spec.Error // nil on success
	Turns       int         // turns started
	TotalTokens int
	Usage       []workflow.Usage // one per provider request, re-asks included
}
