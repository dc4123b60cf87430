package planner

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// noop is the in-process no-op verb of D33.
type noop struct{}

func (noop) Run(context.Context, workflow.Job) workflow.Outcome {
	return workflow.Outcome{Output: "ok"}
}

// genEngine builds a 10,000-task wide DAG (every task independent) or a
// chain (task i depends on i-1).
func genEngine(n int, chain bool) string {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: bench\ntasks:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: t%d\n", i)
		if chain && i > 0 {
			fmt.Fprintf(&b, "    depends_on: [t%d]\n", i-1)
		}
		b.WriteString("    exec: { command: [\"true\"] }\n")
	}
	return b.String()
}

// peakHeap samples the heap while f runs and returns the highest figure
// (D33: peak heap from runtime/metrics).
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak
}

// BenchmarkEngine is D33's engine time: the wall time of Run on a compiled
// workflow with a no-op verb and an in-memory canonical sink, no live sink.
// Targets: < 100 ms and < 200 MB peak heap at 10,000 tasks.
func BenchmarkEngine(b *testing.B) {
	for _, shape := range []struct {
		name  string
		chain bool
	}{{"wide", false}, {"chain", true}} {
		w := compile(b, genEngine(10000, shape.chain))
		b.Run(shape.name+"/tasks=10000", func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				runtime.GC()
				p := peakHeap(func() {
					res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"exec": noop{}}, Canonical: event.NewMemory()})
					if res.State != "success" {
						b.Fatalf("state %s", res.State)
					}
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/task")
		})
	}
}
