// Package planner runs a compiled workflow. It is two parts (ARCHITECTURE.md
// §1a): Core, a deterministic state machine that decides what to run next
// and which canonical events to release, and a local driver (Run) that
// carries the decisions out with goroutines, timers and cancellation.
//
// The core starts no goroutine, reads no clock and does no I/O: time comes
// in as an argument, retry jitter from the seeded formula of LANGUAGE.md
// §3.8, and every order it produces follows declaration or canonical order,
// never a map. A task starts the moment its dependencies are terminal
// (D1); only the release of events follows the canonical order (by wave,
// then declaration order), so the canonical stream is the same for any
// parallelism.
package planner
