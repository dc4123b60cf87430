package event

import "time"

// MaxLiveText bounds the model text an agent_text observation carries: the live stream is for
// watching (the web view's turn timeline), and the canonical record never carries it (D18). A
// watcher that shows less masks the secrets first and cuts after (a cut through a secret would
// otherwise show its start).
const MaxLiveText = 16 << 10

// Kinds of the live stream (D19). Fields may be added; consumers ignore kinds they do not know.
const (
	LiveTaskStarted      = "task_started"
	LiveTaskFinished     = "task_finished"
	LiveTaskRetrying     = "task_retrying"
	LiveProviderRequest  = "provider_request"
	LiveToolCallStarted  = "tool_call_started"
	LiveToolCallFinished = "tool_call_finished"
	LiveToolCallProgress = "tool_call_progress" // a tool's own progress report while it runs (MCP notifications/progress)
	LiveBatchDispatched  = "batch_dispatched"
	LiveAgentNudge       = "agent_nudge"
	LiveAgentStalled     = "agent_stalled"
	LiveAgentFinished    = "agent_finished"
	LiveAgentText        = "agent_text"        // the text a model wrote in an agent turn, cut to MaxLiveText bytes (Message)
	LiveWorkflowStarted  = "workflow_started"  // first of a run's live stream
	LiveWorkflowFinished = "workflow_finished" // last of a run's live stream: Status is the run's state
	// provider_state is a snapshot of a provider's limiter. A sampler sends it, not the planner: while
	// the run lasts, when the snapshot changed, and once more just before workflow_finished
	// (metrics.Sampler).
	LiveProviderState = "provider_state"
)

// Live is one observation of the live stream (D19): real time, completion order, never persisted. Metrics
// and the terminal view read only this stream, and nothing reads it to decide anything. Each kind sets
// the fields that apply to it; the others stay zero.
type Live struct {
	Kind      string        // one of the Live* kinds
	Workflow  string        // every kind: the workflow's name, stamped by the planner
	Task      string        // every kind but workflow_*
	Verb      string        // task_started, task_finished, task_retrying
	Iteration int           // 0-based inside for_each, NoIteration otherwise (task kinds)
	Attempt   int           // 1-based, 0 for an on_finally step (task kinds)
	Status    string        // task_finished: how the job ended (success, failure, cancelled); workflow_finished: the run's state
	Code      string        // NIKA code of a failure: task_finished, task_retrying, tool_call_finished
	Elapsed   time.Duration // task_finished, provider_request, tool_call_finished, workflow_finished

	Turn  int // agent turn, 1-based (0 outside an agent): provider_request, tool_call_*, batch_dispatched, agent_nudge, agent_stalled
	Index int // position of the call in its batch: tool_call_* (agent calls)
	Size  int // batch_dispatched: calls in an agent's tool batch (Verb empty), or jobs of Verb the planner started as one batch (D5)

	Tool     string // tool_call_*
	Provider string // provider_request, provider_state
	Model    string // provider_request
	Outcome  string // provider_request: how it ended ("ok", or the D27 reason of a failure, else its NIKA code); tool_call_finished, agent_finished: "ok" or the NIKA code
	Reason   string // agent_nudge, agent_stalled

	InputTokens, OutputTokens int // provider_request

	RateLimited bool // provider_request
	IsError     bool // tool_call_finished

	Turns int       // agent_finished
	At    time.Time // when it happened (wall clock)

	// provider_state, the limiter's snapshot (provider.Stats): its concurrency Limit, the requests
	// InFlight (sent, not answered) and Waiting for a slot, and the RateLimitedAnswers the provider
	// gave since it was built (every 429, retried or not; a counter).
	Limit, InFlight, Waiting int
	RateLimitedAnswers       uint64

	// tool_call_progress, as the tool's server sent it (untrusted text: a view strips control
	// characters before printing Message): Progress so far, Total when known (0: unknown).
	Progress, Total float64
	Message         string
}

// LiveSink receives the live stream. Observe is called from many goroutines (tasks, agent loops, tool
// calls run concurrently), so implementations are safe for concurrent use; it must return quickly and
// never fails anything.
type LiveSink interface {
	Observe(Live)
}

// LiveFunc adapts a function to LiveSink. A nil LiveFunc ignores everything.
type LiveFunc func(Live)

// Observe implements LiveSink.
func (f LiveFunc) Observe(l Live) {
	if f != nil {
		f(l)
	}
}

// LiveFanout passes each observation to every sink, in slice order. Nil entries are skipped.
type LiveFanout []LiveSink

// Observe implements LiveSink.
func (f LiveFanout) Observe(l Live) {
	for _, s := range f {
		if s != nil {
			s.Observe(l)
		}
	}
}
