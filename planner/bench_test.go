package planner

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/invoke"
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
				// The previous run's garbage is collected outside the timing: engine time is the
				// wall time of Run (D33), not of the collection of the run before it.
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				p := peakHeap(func() {
					res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"exec": noop{}}, Canonical: event.NewMemory()})
					if res.State != "success" {
						b.Fatalf("state %s: %+v", res.State, res.Tasks[0].Error)
					}
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/task")
		})
	}
}

// jqForEach is a for_each over vars.items whose every iteration is one
// nika:jq call through the real invoke verb and builtin.
const jqForEach = "nika: v1\nworkflow: bench\nvars:\n  items: { type: array, description: items }\ntasks:\n" +
	"  - id: each\n    for_each: ${{ vars.items }}\n    invoke:\n      tool: nika:jq\n      args:\n" +
	"        expression: \". * 2\"\n        input: ${{ item }}\n"

// BenchmarkForEachJQ is a wide for_each of nika:jq items (issue 12): the
// cost per item must not grow with the width.
func BenchmarkForEachJQ(b *testing.B) {
	w := compile(b, jqForEach)
	verbs := map[string]Verb{"invoke": &invoke.Verb{Builtins: tools.NewBuiltins()}}
	for _, n := range []int{10000, 100000, 999999} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			items := wideItems(n)
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				// The previous run's garbage is collected outside the timing: engine time is the
				// wall time of Run (D33), not of the collection of the run before it.
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				p := peakHeap(func() {
					res := Run(context.Background(), w, Inputs{Vars: map[string]any{"items": items}}, Options{Verbs: verbs, Canonical: event.NewMemory()})
					if res.State != "success" {
						b.Fatalf("state %s: %+v", res.State, res.Tasks[0].Error)
					}
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
	}
}

// cancelHalf wraps a verb: once half of the jobs returned, it cancels the
// run and notes when.
type cancelHalf struct {
	Verb
	half     int64
	done     atomic.Int64
	cancel   context.CancelFunc
	cancelAt atomic.Int64 // UnixNano
}

func (c *cancelHalf) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	out := c.Verb.Run(ctx, job)
	if c.done.Add(1) == c.half {
		c.cancelAt.Store(time.Now().UnixNano())
		c.cancel()
	}
	return out
}

// BenchmarkForEachCancel is the time from the user's cancellation, half-way
// through a wide for_each of nika:jq items, to Run's return (issue 12; the
// in-process part of the SIGINT latency).
func BenchmarkForEachCancel(b *testing.B) {
	w := compile(b, jqForEach)
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			items := wideItems(n)
			var latency time.Duration
			for b.Loop() {
				runtime.GC()
				ctx, cancel := context.WithCancel(context.Background())
				v := &cancelHalf{Verb: &invoke.Verb{Builtins: tools.NewBuiltins()}, half: int64(n / 2), cancel: cancel}
				res := Run(ctx, w, Inputs{Vars: map[string]any{"items": items}}, Options{Verbs: map[string]Verb{"invoke": v}, Canonical: event.NewMemory()})
				latency += time.Duration(time.Now().UnixNano() - v.cancelAt.Load())
				cancel()
				if res.State != "cancelled" {
					b.Fatalf("state %s", res.State)
				}
			}
			b.ReportMetric(float64(latency.Milliseconds())/float64(b.N), "ms-after-cancel")
		})
	}
}
