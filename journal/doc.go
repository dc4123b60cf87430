// Package journal is a run's durable record (issue 15, DECISIONS.md D50): every job's outcome with
// the hashes of its task's definition and of its evaluated inputs, and every step a verb records of
// its own progress (an agent's model responses and tool batches), appended to
// .nika/runs/<run-id>/journal.ndjson as hash-chained lines with group commit. A resumed run reads
// it back (Read, Resume) and, as the planner driver's Memory (Run.Job), restores what succeeded,
// answers what paused and replays an unfinished agent attempt. The file format is a contract,
// written down in docs/journal.md; Read never panics on any bytes (FuzzRead) and names the first
// damaged line.
package journal
