package exec

import (
	"context"
	"runtime"

	"golang.org/x/sync/semaphore"

	"github.com/nikahq/nika/workflow"
)

// The default process bound (see the package doc, "Process bound").
const (
	// FDsPerProcess is the most file descriptors of the engine one child holds: while it starts,
	// three pipes (stdin, stdout, stderr: 6 ends), the fork's status pipe (2) and its pidfd (1),
	// beside the 2 its group's watcher holds all along (the write end of the watcher's pipe and
	// the watcher's pidfd, tools/procgroup); once it runs, 6. Concurrent starts overlap, so the
	// bound counts the peak.
	FDsPerProcess = 11
	// MaxReserveFDs caps the descriptors kept back for the engine's own files: the standard
	// streams, the trace and report, the poller, MCP servers (each a process with its pipes),
	// provider and metrics connections, a server's clients. The reserve is a quarter of the limit,
	// at most this many.
	MaxReserveFDs = 256
	// ProcessesPerCPU is the bound per CPU (runtime.GOMAXPROCS) when the descriptor limit is
	// high: spawning is CPU work in the engine and the kernel, so past a few dozen children per
	// CPU a fan-out of short commands only gets slower, while waiting children (network calls,
	// sleeps) still overlap.
	ProcessesPerCPU = 32
)

// ProcessBound is the default bound on concurrent child processes for a soft RLIMIT_NOFILE of
// nofile and cpus CPUs:
//
//	max(1, min((nofile - reserve) / FDsPerProcess, ProcessesPerCPU × cpus))
//
// where reserve = min(nofile/4, MaxReserveFDs). nofile 0 means the limit is unknown (it is then
// not a term); cpus below 1 counts as 1.
func ProcessBound(nofile uint64, cpus int) int {
	byCPU := uint64(ProcessesPerCPU) * uint64(max(cpus, 1))
	n := byCPU
	if nofile > 0 {
		reserve := min(nofile/4, MaxReserveFDs)
		n = min(n, (nofile-reserve)/FDsPerProcess)
	}
	return int(max(n, 1))
}

// DefaultMaxProcesses is the bound of a Verb whose MaxProcesses is 0: ProcessBound over this
// process's soft RLIMIT_NOFILE (as the process sees it now: the Go runtime has already raised it
// to the hard limit at start on Linux and the BSDs) and runtime.GOMAXPROCS(0).
func DefaultMaxProcesses() int {
	return ProcessBound(nofileLimit(), runtime.GOMAXPROCS(0))
}

// Processes is the bound this Verb applies: MaxProcesses, or DefaultMaxProcesses() when that is 0
// or less. It is fixed at the first call (or the first job), so a Verb's bound does not move
// while it runs.
func (v *Verb) Processes() int {
	v.procsOnce.Do(func() {
		v.maxProcs = v.MaxProcesses
		if v.maxProcs <= 0 {
			v.maxProcs = DefaultMaxProcesses()
		}
		v.procs = semaphore.NewWeighted(int64(v.maxProcs))
	})
	return v.maxProcs
}

// LiveQueued is the live-stream kind (D19) of a job that waits for a process slot; its Size is the
// bound. It is sent once, before the wait, and only when the job has to wait.
const LiveQueued = "exec_queued"

// acquire takes one process slot, waiting in arrival order; it fails only when ctx ends first
// (the error is ctx.Err()). A job that has to wait says so on live (nil: nobody watches). The
// returned release gives the slot back.
func (v *Verb) acquire(ctx context.Context, live func(workflow.LiveNote)) (release func(), err error) {
	n := v.Processes()
	if !v.procs.TryAcquire(1) { // fails too while others wait: the order is first come, first served
		if live != nil {
			live(workflow.LiveNote{Kind: LiveQueued, Size: n})
		}
		if err := v.procs.Acquire(ctx, 1); err != nil {
			return nil, err
		}
	}
	return func() { v.procs.Release(1) }, nil
}
