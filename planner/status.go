package planner

// Status is the state of a task or of a run (LANGUAGE.md §3.13, D22): what
// the report's `status` and `workflow_state` and the records' `status` say.
// Expressions and the report see it as a plain string (string(s)), so that
// `tasks.a.status == 'success'` holds and the JSON is unchanged.
type Status string

const (
	StatusSuccess   Status = "success"
	StatusFailure   Status = "failure"
	StatusSkipped   Status = "skipped"   // a task only: `when` false, an empty for_each, on_error skip
	StatusCancelled Status = "cancelled" // upstream, or the user's cancellation
	// StatusPaused: a run waiting for an answer (D49), and a task of it that waits; StatusPending:
	// a task of a paused run that has not settled (it runs when the run is resumed).
	StatusPaused  Status = "paused"
	StatusPending Status = "pending"
)

// endReason is the `reason` of task_skipped and task_cancelled (D18).
type endReason string

const (
	reasonUser            endReason = "user"     // the user's cancellation
	reasonUpstream        endReason = "upstream" // the default gate: a dependency did not succeed
	reasonWhenFalse       endReason = "when_false"
	reasonEmptyCollection endReason = "empty_collection"
	reasonOnErrorSkip     endReason = "on_error_skip"
)
