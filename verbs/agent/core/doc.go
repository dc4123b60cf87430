// Package core is the agent loop of AGENT.md §5–§7 as a deterministic state machine: given the
// arming and what has come back so far (model replies, a tool batch's results in request order,
// a cancellation) it says what to do next (send this model request, resolve this tool batch, start
// the next turn, finish with this output or error) and which loop events to release, already in
// order. Drivers carry the decisions out: the local driver in package agent (the provider call, the
// concurrent resolve through package dispatch, live notes, spill), and later a journal replay and a
// Temporal workflow (ARCHITECTURE.md §1a).
//
// The core starts no goroutine, reads no clock, does no I/O and never iterates a map to decide an
// order. Its inputs and outputs are plain data (no channels, funcs or contexts): the same inputs
// give the same steps, byte for byte, whatever the driver's parallelism. Timing (durations, the
// live stream) belongs to the driver, outside the determinism contract.
//
// # Protocol
//
// A Loop is driven by one goroutine. Start releases run_started and asks for the next turn. The
// driver then repeats: carry out the Step's Events in order (Event says which stream), then its one
// action:
//
//   - Next: the loop is between turns. The driver checks its cancellation first (Cancel), else calls
//     Next, which starts the turn (turn_started, tools_selected) and asks for its Request. A turn that
//     never starts is not counted in Finish.Turns.
//   - Request: send it as a batch of one and report the outcome with Replied (a cancelled provider
//     request is reported as Cancel, or as a Reply carrying the cancellation error).
//   - Batch: resolve every call (at most the driver's parallelism at once, each call in its own
//     slot) and report the results in request order with Resolved; or Cancel.
//   - Done: the run is over; Finish carries the output or the error, the turns taken, the total
//     tokens and one Usage per provider request.
//
// A call out of protocol (a Replied with no request pending, a Resolved with the wrong count) is an
// internal_error Finish, never a panic. After Done every input returns the same Finish again, with
// no event.
//
// # Decisions taken where the design documents are silent
//
//   - What a Batch's calls emit themselves (nika:log, nika:emit) is part of its Result and released
//     in the fold, before that call's tool_invoked, so those events follow request order too.
//   - Spill (AGENT.md §4.4) is the driver's: it stores the content and passes the fed-back form as
//     Result.Spilled; the core feeds that to the model and the full Content to the guard. A batch
//     stopped by a security-boundary refusal is not folded, so nothing of it needs spilling.
//   - The cancellation error is built by the driver (it knows the context's cause) and passed to
//     Cancel; the core only decides that nothing follows it.
package core
