package engine

import "github.com/nikahq/nika/planner"

// ActivityVerbs builds the verbs of runs whose jobs another driver carries out, one call at a
// time (the Temporal driver's job activity, package temporal): the same verbs Execute gives the
// local planner, so a worker's jobs run exactly as a local run's. They serve every run of the
// worker that asked for them, so the exec verb's process bound holds across its runs and one MCP
// client serves them all; release stops that client's servers once the worker stops.
func (e *Engine) ActivityVerbs() (verbs map[string]planner.Verb, release func()) {
	return e.verbs()
}
