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
//
// # Decisions taken where the design documents are silent
//
//   - A task is terminal for its dependents, and for recovers waiting on
//     it, once it is settled: after its on_finally steps (§3.12 step 8).
//     Its record is fixed before on_finally runs, which sees it.
//   - A gate failure (a `when:` or `for_each` that cannot be evaluated) has
//     attempt 0 in its error: no attempt ran.
//   - Under a user cancellation, a for_each task whose iterations failed
//     for real is `failure` with the lowest real error; only when every
//     failure is the cancellation is it `cancelled` (with no output).
//   - on_finally step failures are logged as `log` events at level warn,
//     inside the task's events, before its terminal event.
//   - A batch-capable verb (D5) receives, as one RunBatch call, the
//     attempts a single step starts; the batch's context ends only when
//     every job in it was cancelled or the run was. One job is cancelled
//     alone through Job.Cancelled, and a job's outcome reaches the core when
//     the verb calls its Job.Settle, so a failing iteration fails fast and a
//     finished job releases its dependants while its siblings still run.
//   - An attempt's user code (its `with`, verb fields and output bindings)
//     and a recover's (its value and bindings) run in the driver, with the
//     job and under its context, not in the core (usercode.go): the task
//     timeout covers them (NIKA-TIMEOUT-001 when it expires while they run;
//     a binding error before it), a cancellation stops them, and no other
//     task waits for them. An expression beyond its step budget is
//     NIKA-VAR-006. So do a gate's `when` and for_each collection (a gate
//     job, under the run's context; a gate of literals only is decided by
//     the core at once), an on_finally step's `when` and fields (with the
//     step, under its timeout) and the envelope outputs (once every task
//     is terminal, under a context the user's cancellation does not end:
//     the run's state is decided then, and a cancellation that comes while
//     they evaluate changes nothing, as when the core evaluated them).
//     No user code runs on the goroutine that feeds the core.
//   - A wide for_each costs O(1) per outcome, amortized (issue 12): the
//     core keeps a count of its iterations per state instead of scanning
//     them, a fail-fast failure looks only at the iterations between it
//     and the previous one, and the driver cancels the jobs still running
//     once when the run is done, not again at every report. A finished
//     job's goroutine leaves its report in the driver's inbox and ends
//     without waiting for the loop to take it.
//   - The task at the front of the release order releases what of its
//     events is final while it still runs: task_started when it starts,
//     then each for_each iteration's events once it and every iteration
//     below it are done (under fail-fast, up to the lowest failure; those
//     above it are dropped, D3). The stream is the same as if the task's
//     events had waited for it to settle, only sooner; a cancelled wide
//     for_each has only the rest to write.
//   - A user cancellation that arrives while the driver is still starting
//     the jobs of one step (a wide for_each starts every iteration in one)
//     stops it there: the attempts, recovers and gates not started yet
//     never start (the core ends them cancelled and wants no report; they
//     have no task_started on the live stream), and a job whose context is done
//     before its goroutine begins reports NIKA-CANCEL-001 without
//     evaluating its user code or calling its verb. on_finally steps start
//     as always.
//   - Durable runs (memory.go): the driver asks Options.Memory (the journal)
//     about every job that calls a verb and restores a journaled success
//     instead of running it (the core adds task_restored to its events); an
//     attempt whose verb returns Outcome.Pause waits, and once nothing else
//     runs or waits on a back-off the driver feeds Core.Pause, which ends the
//     run paused (workflow_paused, Result.Paused).
//   - The core is tested as a core by the scripts of testdata/*.txt
//     (script_test.go): inputs in, every Step printed, no goroutine and no
//     clock.
//   - The engine benchmarks and figures are in BENCHMARKS.md.
package planner
