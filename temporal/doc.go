// Package temporal runs nika workflows on Temporal (issue 16): the planner core as a Temporal
// workflow (Run, registered as WorkflowName), each job that calls a verb as an activity
// (Activities.RunJob, JobActivity) whose verbs package engine builds (engine.ActivityVerbs,
// D51). It is the local driver of planner/driver.go on Temporal's primitives, and the canonical
// trace it releases is the local run's (timing and run id aside).
//
// # The contract
//
//   - The workflow input (Input) carries the workflow's text and the run's resolved inputs; the
//     workflow compiles the text (pure), feeds the core workflow.Now as its clock, and returns
//     the run's state, report, outputs and canonical lines (Output). The run's state is in the
//     result, not in the workflow's status: a failed or cancelled nika run completes the
//     Temporal workflow normally; an invalid workflow text fails it (non-retryable).
//   - Canonical events: the core releases them in workflow code; the driver keeps their lines in
//     the workflow's state, returns them in Output.Events (when they fit in one payload) and
//     answers QueryEvents (the lines from an index, a page of at most 1 MiB) while the run goes
//     on and after it ended, for a submitter's progress and its trace. Nothing is written from
//     workflow code, so a replay never writes an event twice; whoever writes the trace (a
//     submitter) masks it with the run's secrets as a local run's sinks do.
//   - Jobs: a job's user code (`with`, verb fields, bindings, recovers, gates, on_finally `when`
//     and fields, outputs) runs in workflow code, being pure (D15; usercode.go says what differs
//     from the local driver). An attempt's or an on_finally step's verb runs as one activity with
//     its fields evaluated (JobInput). nika's retry policy decides alone: activities have
//     RetryPolicy MaximumAttempts 1, and a verb's failure is the activity's result, not its
//     error. An activity whose worker is lost (its heartbeat timed out) is dispatched again as
//     the same attempt, at most maxLost times: at-least-once, as a resumed local run's jobs.
//   - Timers: the core's back-off and deadline timers are Temporal timers (time skipping in
//     tests). Activities get StartToCloseTimeout Input.JobTimeout (an on_finally step its own
//     timeout, whose expiry is NIKA-TIMEOUT-001) and HeartbeatTimeout Input.HeartbeatTimeout;
//     a running job heartbeats every Activities.Heartbeat.
//   - Cancellation: cancelling the workflow is the user's cancellation (Core.Cancel); running
//     attempts' activities are cancelled (and waited for), on_finally steps run under a
//     disconnected context. There is no second signal that abandons on_finally.
//   - Human gates: an attempt whose verb returns Outcome.Pause (nika:prompt with no terminal and
//     no default, D49) waits in the workflow for an Answer signal (SignalAnswer) instead of
//     ending the run paused; QueryQuestions lists the open questions. The answer, parsed as
//     `nika run --answer` parses it, is the verb's output and the attempt's bindings run over
//     it. A cancellation or the task's timeout withdraws the question.
//   - Agents (agent.go): an agent attempt runs the agent core (verbs/agent/core) in workflow
//     code. An arming activity (AgentArmActivity) returns the core's arming and the worker's
//     max_parallel_tools (so the history fixes both); each model request is an activity
//     (AgentAskActivity) and each tool call of a batch one (AgentCallActivity), at most
//     max_parallel_tools in flight, started and folded in request order; a security-boundary
//     refusal stops the batch. A recorded step is never carried out again: a worker lost
//     mid-loop costs the step it ran, dispatched again like a job (maxLost). The loop's
//     canonical events are the attempt's, released with its report. One model request, reply
//     or tool result must stay under maxStepBytes (1.5 MiB; Temporal refuses payloads over
//     2 MiB): an agent that outgrows it fails with an error that says so. A step whose context
//     ends without the workflow's cancellation (its worker stopping) returns no result but an
//     interruption (errInterrupted), which the workflow carries out again, as a whole job's. An on_finally step's agent (its
//     own timeout bounds it), a worker whose agent verb cannot run in steps (AgentSteps; the
//     arming says Whole) and runs begun before this (workflow.GetVersion "agent-core") run the
//     agent whole in one activity, its recorded steps (the job's Memo) riding on its heartbeats
//     so a job dispatched again after a lost worker goes on after them (JobInput.Recorded).
//   - nika:inspect from an invoke attempt is answered with the view as the job starts (an
//     activity cannot ask the workflow while it runs); an agent's own nika:inspect has no view.
//   - Workflow code never ranges over a map to decide an order, starts no goroutine and reads
//     no clock but workflow.Now: the recorded histories in testdata replay (replay_test.go). A
//     change that makes them fail breaks the runs in flight: it goes behind workflow.GetVersion,
//     or under a new WorkflowName, and its histories are recorded again (-update).
//   - Scale: a step's futures are waited on in shards (waiter.go), not by a coroutine each, so a
//     wide for_each costs about linear time in workflow code (10,000 iterations in 11 s on the
//     SDK's test environment). Its first step still evaluates every iteration's user code and
//     schedules every job in one workflow task; `nika worker` allows it 5 s.
//
// # Not yet
//
//   - Batches (D5): each job is its own activity; a batch-capable verb gets its jobs one by one.
//   - The live stream (D19): nothing but the canonical lines (QueryEvents) is reported.
//   - An agent's transcript goes whole into each model request's activity input, so its history
//     grows with the square of its turns: at a transcript of 1 MiB, some 40 turns reach
//     Temporal's default history limit (50 MiB). Holding the transcript by reference (a blob
//     store the workers share) would make it linear.
//   - The journal (planner.Options.Memory) is not used: the workflow history is the run's
//     durable record.
package temporal
