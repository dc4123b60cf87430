package journal

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/workflow"
)

// noop is the in-process no-op verb of D33.
type noop struct{}

func (noop) Run(context.Context, workflow.Job) workflow.Outcome {
	return workflow.Outcome{Output: "ok"}
}

// cpuTime is the process's CPU time so far: on a shared machine it moves less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wide is a workflow of n independent tasks (planner's BenchmarkEngine shape).
func wide(n int) string {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: bench\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: t%d\n    exec: { command: [\"true\"] }\n", i)
	}
	return b.String()
}

// BenchmarkEngineJournal is D33's engine time (planner.Run on the wide workflow, a no-op verb,
// an in-memory canonical sink) without a journal and with one, in a temporary directory: the
// journal's cost per task (issue 15: at most 1.3× at 10,000 tasks), its fsyncs per run and its
// bytes per task, at 1,000 and 10,000 tasks (both grow linearly with the tasks).
func BenchmarkEngineJournal(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		w := testWorkflow(b, wide(n))
		for _, mode := range []string{"off", "on"} {
			b.Run(fmt.Sprintf("tasks=%d/journal=%s", n, mode), func(b *testing.B) {
				b.ReportAllocs()
				dir := b.TempDir()
				var syncs, bytes, writes int64
				var cpu time.Duration // the process's CPU time (user + system) in Run and the journal's close
				i := 0
				for b.Loop() {
					b.StopTimer()
					runtime.GC()
					var jr *Run
					opts := planner.Options{Verbs: map[string]planner.Verb{"exec": noop{}}, Canonical: event.NewMemory()}
					if mode == "on" {
						i++
						var err error
						if jr, err = Create(dir, Header{RunID: fmt.Sprintf("r-%d", i), Workflow: "bench", Time: time.Now()}, w); err != nil {
							b.Fatal(err)
						}
						opts.Memory = jr
					}
					cpu0 := cpuTime()
					b.StartTimer()
					res := planner.Run(context.Background(), w, planner.Inputs{}, opts)
					if jr != nil {
						jr.End(res.State, nil, time.Now())
						if err := jr.Close(); err != nil { // the run's end waits for its journal on disk
							b.Fatal(err)
						}
						st := jr.Stats()
						syncs += st.Syncs
						bytes += st.Bytes
						writes += st.Writes
					}
					b.StopTimer()
					cpu += cpuTime() - cpu0
					b.StartTimer()
					if res.State != planner.StatusSuccess {
						b.Fatalf("state %s", res.State)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/task")
				if mode == "on" {
					b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/run")
					b.ReportMetric(float64(bytes)/float64(b.N)/float64(n), "bytes/task")
					b.ReportMetric(float64(writes)/float64(b.N), "writes/run")
				}
			})
		}
	}
}
