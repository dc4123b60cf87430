package event

// Kinds of the canonical stream of durable runs (issue 15; beside the kinds of event.go, D18).
const (
	// TaskRestored is an attempt (or a for_each iteration's attempt, or an on_finally step) whose
	// outcome came from the run's journal instead of its verb: a resumed run does not run again
	// what an earlier process of it finished. Fields: {} (the outcome follows as usual).
	TaskRestored = "task_restored"
	// WorkflowPaused ends a run that waits for a person's answer (D49). Fields: state "paused",
	// questions [{task, iteration?, mode, message, choices?}], timing.
	WorkflowPaused = "workflow_paused"
)
