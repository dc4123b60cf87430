package workflow

import (
	"context"
	"time"

	"github.com/nikahq/nika/spec"
)

// Job is one attempt (or one for_each iteration's attempt) of a task, with
// its verb fields evaluated. It crosses the planner/verb boundary (D8).
type Job struct {
	Task      *spec.Task
	Verb      string         // infer, exec, invoke, agent
	Fields    map[string]any // the evaluated verb body (prompt, command, tool, args, …)
	Model     string         // resolved model for infer/agent
	Attempt   int            // 1-based
	Iteration int            // 0-based for_each index, -1 when not under for_each
	Permits   *spec.Permits  // nil when the workflow has none
	RunDir    string         // the run directory (working directory of the run)
	Workflow  string
	// Emit is how nika:log / nika:emit reach the canonical stream; never nil
	// (use a no-op).
	Emit func(kind string, fields map[string]any)
	// Cancelled is closed when the planner cancels this one job. A batch
	// verb (D5) runs several jobs under one context, so it must watch this to
	// stop a single job (a fail-fast for_each, a timeout); nil: never.
	Cancelled <-chan struct{}
	// Settle, when set, takes this job's outcome the moment it is known. A batch verb (D5)
	// calls it once per job as that job ends, so the planner can act on one job (fail fast,
	// release its dependants, start its retry) while its siblings still run; the slice RunBatch
	// returns must still hold every outcome, and a job settled early is not reported twice.
	// Emit must not be called for a job after its Settle. Nil: nobody listens early.
	Settle func(Outcome)
	// Live reports what is happening now to the live stream (D19): provider
	// requests, tool calls. Nil means nobody watches. It may be called from
	// any goroutine; nothing may decide anything from it.
	Live func(LiveNote)
	// Inspect answers nika:inspect (LANGUAGE.md §7.2) about the running
	// workflow: view is cost, records, dag_info or threads. It blocks until
	// the planner answers or ctx ends. Nil outside a planner run.
	Inspect func(ctx context.Context, view string) (any, error)
	// Memo is this job's durable progress in the run's journal (a verb that records steps, the
	// agent); nil when the run keeps no journal.
	Memo Memo
}

// LiveNote is one live-stream observation from inside a verb (D19). The
// planner adds the task, iteration and attempt.
type LiveNote struct {
	Kind         string // provider_request, tool_call_started, tool_call_finished
	Provider     string
	Model        string
	Tool         string
	Outcome      string // ok, or the error code
	Code         string
	Reason       string // agent_nudge, agent_stalled: the guard's reason
	IsError      bool
	RateLimited  bool
	InputTokens  int
	OutputTokens int
	Elapsed      time.Duration
	Turn         int // the agent turn (1-based); 0 outside an agent
	Index        int // the call's index in its batch (tool calls)
	Size         int // the batch size (batch_dispatched)
	Turns        int // turns taken (agent_finished)
	// tool_call_progress: a tool's own progress report (MCP notifications/progress), as the
	// server sent it: Progress so far, Total when known (0: unknown), and its Message.
	Progress, Total float64
	Message         string
}

// Outcome is what a verb returns: an output, or an error; never both. Pause, instead of either,
// is a question nobody can answer now (D49): the attempt waits for an answer and the run pauses.
type Outcome struct {
	Output any
	Err    *spec.Error
	Usage  []Usage // one per provider request (infer); empty otherwise
	Pause  *Question
}

// Usage is the token usage of one provider request.
type Usage struct {
	Model                     string
	InputTokens, OutputTokens int
	Reported                  bool // false when the provider reported no usage
	Turn                      int  // the agent turn of the request (re-asks: the turn they finalize); 0 outside an agent
	// Emitted: the verb already sent this request's infer_completed through Job.Emit, where it
	// belongs among the verb's own events (the agent: after the turn's tool selection, before
	// its tool calls); the planner then only accounts the tokens.
	Emitted bool
}

// Failed builds an error outcome.
func Failed(err *spec.Error) Outcome { return Outcome{Err: err} }
