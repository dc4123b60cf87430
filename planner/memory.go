package planner

import (
	"github.com/nikahq/nika/workflow"
)

// Durable runs (issue 15, D49, D50): the driver's side of the journal, and pausing.
//
// The core knows neither: a journal is the driver's record of what it carried out, and a pause
// is the driver finding that nothing can move until a person answers. So:
//
//   - Memory (Options.Memory, the journal of package journal) is asked about every job that
//     calls a verb (an attempt, an on_finally step) once its inputs are evaluated: a job whose
//     definition and evaluated inputs it holds a success for is restored (its output and
//     bindings come from the journal, its verb does not run, and the core adds task_restored to
//     its events); a job that paused on a question which the resumed run answers takes the answer
//     as its verb's output (its bindings then run). Every other job runs, and its outcome is
//     recorded once known (Settled), from the job's goroutine. The gate, recover and outputs
//     jobs are user code only and run again: they are deterministic over the restored records.
//   - A verb may return Outcome.Pause (nika:prompt with nobody to ask, D49). The driver keeps
//     such an attempt waiting (the core still sees it running) and runs everything else that can
//     run; once no job runs and no retry back-off is pending, it feeds Core.Pause, which ends the
//     run paused with the questions. A deadline timer does not keep a run from pausing (it can
//     only end what already runs); if it fires first, the task times out as usual. An on_finally
//     step cannot pause: its question is a NIKA-BUILTIN-PROMPT-001 failure, as before.

// Memory is the run's journal as the driver uses it. Its methods are called from job
// goroutines: an implementation is safe for concurrent use.
type Memory interface {
	// Job returns the journal of one job (JobAttempt or JobFinally) whose fields (and `with`,
	// nil for a step) are evaluated, before its verb runs; nil: the job is not journaled.
	Job(id JobID, job *workflow.Job, with map[string]any) JobMemory
}

// JobMemory is the journal of one job.
type JobMemory interface {
	// Restore returns what to take instead of running the verb, if anything.
	Restore() (Recall, bool)
	// Memo is the verb's own durable progress (workflow.Job.Memo); nil: none.
	Memo() workflow.Memo
	// Settled records the job's outcome (its bindings included) once it is known. It is not
	// called for a restored job.
	Settled(rep *Report)
}

// Recall is a journaled outcome: a success to restore whole (Restored, with its Bindings), or
// the answer to the question the job paused on, as its verb's output (Restored false: the
// job's bindings run over it).
type Recall struct {
	Outcome  workflow.Outcome
	Bindings map[string]any
	Restored bool
}

// Paused is an attempt waiting for an answer (D49).
type Paused struct {
	Task      string
	Iteration int // -1 outside for_each
	Attempt   int
	Question  workflow.Question
}

// remember asks the run's memory about a job whose inputs are evaluated and sets the job's
// Memo; it returns the job's memory (nil without one) and what to take instead of its verb.
func (d *driver) remember(id JobID, job *workflow.Job, with map[string]any) (JobMemory, Recall, bool) {
	if d.opts.Memory == nil {
		return nil, Recall{}, false
	}
	m := d.opts.Memory.Job(id, job, with)
	if m == nil {
		return nil, Recall{}, false
	}
	job.Memo = m.Memo()
	r, ok := m.Restore()
	return m, r, ok
}
