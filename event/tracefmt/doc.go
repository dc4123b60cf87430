// Package tracefmt renders a canonical trace (the NDJSON file of package event) as text a person reads:
// `nika trace show`.
//
// Read parses a trace into a Trace and WriteText writes it: a header (workflow, run id, state, start,
// duration, task count and how many of them the trace has), then every task in the order it first appears in the trace, with its status,
// verb, attempts, duration, its retries and their codes, its error, and what its attempts did — an
// agent's turns (model, tokens, tools offered, the tool batch with the calls that failed), an infer's
// model requests, an invoke's tool call, logs and user events. A for_each task lists the iterations the
// trace has events for, each rendered the same way.
//
// The contract:
//   - It prints what the trace holds and nothing else: values masked in the trace stay masked; control
//     characters in strings are escaped so that a trace cannot drive the terminal.
//   - It is lenient. A line that is not a JSON event (a torn last line, garbage) is skipped and listed in
//     Trace.Skipped; the rest is rendered. A trace cut short (a crash) renders its tasks as unfinished.
//     Kinds and fields it does not know are shown by name with their fields as JSON, never dropped.
//   - It says nothing about the hash chain: event.VerifyChain checks it, and a trace written before
//     traces were chained renders the same.
//   - An iteration of a for_each appears only through its own events (retries, its verb's events,
//     task_restored): the canonical stream carries no per-iteration outcome, so iterations that emitted
//     nothing (an exec iteration that succeeded at its first attempt) are not listed, and the task's
//     error is the one its terminal event names.
//
// Rendering is pure: no clock, no environment, no map order (fields are printed in sorted order).
package tracefmt
