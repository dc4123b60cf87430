package guard

import (
	"strconv"

	"github.com/nikahq/nika/spec"
)

// Error code, category and wire kinds produced from guard verdicts
// (AGENT.md §10.1, §12).
const (
	CodeStalled     = spec.CodeAgentStalled
	CategoryStalled = "budget_error"
	WireNudge       = "agent_nudge"
	WireStalled     = "agent_stalled"
)

// NudgeEvent is the payload of the `nudged` loop event, re-emitted as
// agent_nudge. Emitted after the turn's tool events.
type NudgeEvent struct {
	Period int    `json:"period"`
	Reason Reason `json:"reason"`
	Turn   int    `json:"turn"`
}

// StalledEvent is the payload of the `stalled` loop event, re-emitted as
// agent_stalled.
type StalledEvent struct {
	Period  int `json:"period"`
	Repeats int `json:"repeats"`
	Turn    int `json:"turn"`
}

// StallDetails is the guard's part of NIKA-AGENT-003 details; the loop adds
// partial_output (and spend, out of v1 per D40).
type StallDetails struct {
	Period  int `json:"period"`
	Repeats int `json:"repeats"`
}

// NudgeEvent returns the nudged payload for turn; ok is false unless v is a Nudge.
func (v Verdict) NudgeEvent(turn int) (NudgeEvent, bool) {
	if v.Kind != Nudge {
		return NudgeEvent{}, false
	}
	return NudgeEvent{Period: v.Period, Reason: v.Reason, Turn: turn}, true
}

// StalledEvent returns the stalled payload for turn; ok is false unless v is Stalled.
func (v Verdict) StalledEvent(turn int) (StalledEvent, bool) {
	if v.Kind != Stalled {
		return StalledEvent{}, false
	}
	return StalledEvent{Period: v.Period, Repeats: v.Repeats, Turn: turn}, true
}

// StallDetails returns {period, repeats} for a Stalled verdict.
func (v Verdict) StallDetails() StallDetails {
	return StallDetails{Period: v.Period, Repeats: v.Repeats}
}

// StallMessage is a human-readable message for NIKA-AGENT-003. The spec fixes
// no exact text for this code.
func (v Verdict) StallMessage() string {
	return "agent stalled: a " + itoa(v.Period) + "-turn cycle repeated " + itoa(v.Repeats) + " times with identical results"
}

func itoa(i int) string { return strconv.Itoa(i) }
