package agent

import "maps"

// Loop event kinds of AGENT.md §10.1, as delivered to an Observer. Some of them are re-emitted by
// the runtime on the canonical stream under their wire kinds; run_started, turn_started and
// finished never are.
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

// Event is one loop event (AGENT.md §10.1). Turn is the 1-based turn it belongs to, 0 for
// run_started and finished; Fields is the §10.1 payload (including "turn" where §10.1 lists it).
// Fields is owned by the receiver: the loop never reads or reuses it after delivery.
type Event struct {
	Kind   string
	Turn   int
	Fields map[string]any
}

// Observer receives the loop events of one run (AGENT.md §2, §10.1). OnEvent is called
// synchronously, from the loop goroutine only, in loop order, so it must be cheap and must not
// block. A successful run is bracketed run_started … finished; a failed or cancelled run simply
// stops emitting. An Observer belongs to exactly one run and is never shared between concurrent
// runs.
type Observer interface {
	OnEvent(Event)
}

// observe delivers one loop event to the run's observer, if any.
func (r *run) observe(kind string, turn int, f map[string]any) {
	if r.obs != nil {
		r.obs.OnEvent(Event{Kind: kind, Turn: turn, Fields: f})
	}
}

// emitBoth sends a loop event that the runtime re-emits: the wire event to the canonical stream
// (unchanged) and a copy of its payload under the loop kind to the observer.
func (r *run) emitBoth(wire, loop string, turn int, f map[string]any) {
	if r.obs != nil {
		r.observe(loop, turn, maps.Clone(f))
	}
	r.emit(wire, f)
}
