// Package agent is the `agent` verb (AGENT.md): a ReAct loop over the run's shared provider
// registry, offering the tools the task's `tools:` whitelist (and permits.tools, D29) admits,
// dispatching each turn's calls in parallel (package dispatch) and folding them in request order,
// with stall detection (package guard) and tool routing (package router).
//
// The loop is two parts, like the planner (ARCHITECTURE.md §1a). Package core decides: given the
// arming and what came back, it says what to do next and which events to release, with no
// goroutine, clock or I/O. This package arms it (arm.go: AGENT.md §3, the fields, the schema, the
// tool universe with its MCP listing, the model) and is its local driver (driver.go), which
// carries each Step out:
//
//   - the Step's events first, in order: to the job's Emit (canonical) and the run's Observer;
//   - a Request goes to the provider as a batch of one, timed for the live stream; it streams
//     (provider.Stream) when someone watches the live stream, whose agent_text notes then show the
//     text arriving (livetext.go), or when the turn overlaps; a failure that is the context's
//     cancellation becomes NIKA-CANCEL-001;
//   - overlapped dispatch (overlap.go, issue 17): while a turn's reply streams, each tool call
//     starts as soon as its arguments are complete, when no call still to come could be refused
//     (the task's tools admit every name, not the last turn, no max_tokens_total); calls start in
//     request order, at most Config.MaxParallelTools in flight, each validated as it is
//     announced; a restart of the request or the run's cancellation cancels what started. The
//     core still decides from the whole reply: its results are used only for the very batch the
//     core asks for, so the fold, the transcript and the canonical events are the plain path's;
//   - a Batch is resolved by dispatch.Resolve (Config.MaxParallelTools, Config.ToolTimeout), each
//     call's own events buffered until the fold, unless the turn's early batch announced exactly
//     its calls; a batch the core will fold is spilled (§4.4) before it is reported; a done
//     context reports the cancellation instead;
//   - Next is taken only while the context is not done, so a turn that never starts is not counted;
//   - the live stream (D19) gets provider requests, batches, calls, the core's nudge and stall
//     notes and, when the run ends, agent_finished. Nothing reads it to decide anything.
//
// RunBatch (batch.go) runs several jobs, each its own core and driver, concurrently.
package agent
