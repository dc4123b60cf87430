package workflow

import (
	"encoding/json"
	"strings"
)

// Durable runs (issue 15, D49, D50): what crosses the planner/verb boundary so that a run can
// pause on a question and a verb can keep its own progress in the run's journal.

// Question is what a human gate asks when nobody can answer it now (no terminal, no default):
// the verb returns it as Outcome.Pause and the run pauses on it instead of failing (D49). It is
// an error too, so that a builtin can return it through an error result; Message says what to do.
type Question struct {
	Mode    string   `json:"mode"` // confirm, input, choice (nika:prompt)
	Message string   `json:"message"`
	Choices []string `json:"choices,omitempty"`
}

func (q *Question) Error() string {
	return "nika:prompt " + q.Mode + " " + strings.TrimSpace(q.Message) + ": waiting for an answer"
}

// Memo is one job's own durable progress, for a verb that records steps of its work (the agent:
// each model response and each tool batch's results, by turn). Recorded holds the steps an
// earlier, unfinished attempt of the same job (same task definition and inputs) journaled, in
// order, for the verb to replay instead of doing them again; Record journals one more step. A
// verb records every step it takes, replayed ones included, so that the attempt's journal holds
// them all. Both are safe to call from the verb's goroutine; a step is opaque JSON.
type Memo interface {
	Recorded() []json.RawMessage
	Record(step json.RawMessage)
}

// DecodeValue decodes one JSON value into the value model (LANGUAGE.md §4.3): numbers without
// fraction or exponent within int64 become int, others float64. The journal restores outputs
// with it.
func DecodeValue(text string) (any, error) { return decodeJSON(text) }
