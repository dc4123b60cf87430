package event

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nikahq/nika/spec/canon"
)

// Kinds of the canonical stream (DECISIONS.md D18). A reader ignores kinds it does not know.
const (
	WorkflowStarted   = "workflow_started"
	WorkflowCompleted = "workflow_completed"
	WorkflowFailed    = "workflow_failed"
	WorkflowCancelled = "workflow_cancelled"

	TaskStarted   = "task_started"
	TaskRetrying  = "task_retrying"
	TaskCompleted = "task_completed"
	TaskFailed    = "task_failed"
	TaskSkipped   = "task_skipped"
	TaskCancelled = "task_cancelled"

	InferCompleted = "infer_completed"
	ToolInvoked    = "tool_invoked"
	Log            = "log"
	UserEvent      = "user_event"

	// Agent kinds (AGENT.md §10.1).
	AgentToolsSelected    = "agent_tools_selected"
	AgentNudge            = "agent_nudge"
	AgentStalled          = "agent_stalled"
	AgentComposeChecked   = "agent_compose_checked"
	AgentBudgetCheckpoint = "agent_budget_checkpoint"
)

// TimingKey is the one place for clock-derived values in Fields (D17); the determinism contract drops it.
const TimingKey = "timing"

// NoIteration is Event.Iteration (and Live.Iteration) outside a for_each.
const NoIteration = -1

// Event is one entry of the canonical stream. The zero Iteration is iteration 0, not "absent": set
// NoIteration for an event that is not about a for_each iteration.
//
// Once emitted, an event belongs to the stream: neither the emitter nor a sink modifies it (or its
// Fields) afterwards, so sinks may keep it without copying.
type Event struct {
	Seq       int64     // from 1, in release order (set by the stream that releases it)
	TS        time.Time // encoded RFC 3339 UTC, millisecond precision (truncated)
	RunID     string
	Kind      string
	Task      string         // "" when not about a task (then omitted)
	Attempt   int            // 1-based; 0 (or less): absent
	Iteration int            // 0-based; NoIteration (any negative value): absent
	Fields    map[string]any // the kind's payload; clock-derived values only under "timing" (an object)
}

// tsLayout is RFC 3339 with exactly three fractional digits; times are converted to UTC first, so the
// zone is always "Z".
const tsLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendJSON appends the canonical JSON line of e, without a trailing newline (D17):
// {"attempt"?,"fields","iteration"?,"kind","run_id","seq","task"?,"ts"} — keys sorted, compact, no HTML
// escaping; a nil Fields is {}. The only possible error is a Fields value with no canonical encoding
// (NaN, a func, a cycle…); dst is then returned unchanged.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '{')
	if e.Attempt > 0 {
		dst = append(dst, `"attempt":`...)
		dst = strconv.AppendInt(dst, int64(e.Attempt), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"fields":`...)
	dst, err := canon.Append(dst, e.Fields)
	if err != nil {
		return dst[:start], fmt.Errorf("event: seq %d (%s): fields: %w", e.Seq, e.Kind, err)
	}
	if e.Iteration >= 0 {
		dst = append(dst, `,"iteration":`...)
		dst = strconv.AppendInt(dst, int64(e.Iteration), 10)
	}
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, e.Kind)
	dst = append(dst, `,"run_id":`...)
	dst = appendString(dst, e.RunID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	if e.Task != "" {
		dst = append(dst, `,"task":`...)
		dst = appendString(dst, e.Task)
	}
	dst = append(dst, `,"ts":"`...)
	dst = e.TS.UTC().AppendFormat(dst, tsLayout)
	return append(dst, '"', '}'), nil
}

// MarshalJSON returns AppendJSON(nil). Note that encoding/json.Marshal re-escapes <, > and & in it;
// use AppendJSON (or json.Encoder with SetEscapeHTML(false)) for the canonical bytes.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(nil)
}

// appendString writes s as a canonical JSON string (never fails for a string).
func appendString(dst []byte, s string) []byte {
	dst, _ = canon.Append(dst, s)
	return dst
}

// EncodeErrorKey replaces the fields of an event that sinks could not encode.
const EncodeErrorKey = "encode_error"

// appendLine is how sinks encode: an event whose fields cannot be encoded (a programming error) is still
// written, with fields {"encode_error": message}, so the record keeps its seq order and says what went
// wrong; the encoding error is returned alongside. The message goes through mask, like any field.
func appendLine(dst []byte, e Event, mask Masker) ([]byte, error) {
	line, err := e.AppendJSON(dst)
	if err == nil {
		return line, nil
	}
	msg := err.Error()
	if mask != nil {
		msg = mask(msg)
	}
	e.Fields = map[string]any{EncodeErrorKey: msg}
	line, _ = e.AppendJSON(dst) // string fields: cannot fail
	return line, err
}
