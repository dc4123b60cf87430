package agent

import "github.com/nikahq/nika/verbs/agent/core"

// Loop event kinds of AGENT.md §10.1, as delivered to an Observer. Some of them are re-emitted by
// the runtime on the canonical stream under their wire kinds; run_started, turn_started and
// finished never are.
const (
	EventRunStarted       = core.EventRunStarted       // model, universe, routed
	EventTurnStarted      = core.EventTurnStarted      // turn (1-based)
	EventToolsSelected    = core.EventToolsSelected    // turn, offered, universe, builtin, mcp, other
	EventBudgetCheckpoint = core.EventBudgetCheckpoint // turn, total_tokens, budget (nil when unset)
	EventToolCompleted    = core.EventToolCompleted    // turn, name, is_error
	EventComposeChecked   = core.EventComposeChecked   // turn, valid, violations
	EventNudged           = core.EventNudged           // turn, reason, period
	EventStalled          = core.EventStalled          // turn, period, repeats
	EventFinished         = core.EventFinished         // turns, total_tokens
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
