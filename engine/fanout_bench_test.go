package engine

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// agentFanOut is issue 20's fan-out: a for_each of agents on the mock provider, two turns each
// with one tool call (the mock calls its first tool, then nika:done).
const agentFanOut = `nika: v1
workflow: fanout
model: mock/echo
vars:
  items: { type: array, description: the items }
permits:
  tools: ["nika:hash", "nika:done"]
tasks:
  - id: each
    for_each: ${{ vars.items }}
    agent:
      prompt: "Hash ${{ item }}, then finish."
      tools: ["nika:hash", "nika:done"]
      max_turns: 4
`

// BenchmarkAgentFanOut runs the fan-out through the engine as nika run builds it (the real agent
// and invoke verbs, the mock provider), with an in-memory canonical sink: time and peak heap per
// agent at 10,000 and 100,000 agents (issue 20: flat between the two within 1.3×; 100,000 in at
// most 15 s and 1.5 GiB).
func BenchmarkAgentFanOut(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run("agents="+strconv.Itoa(n), func(b *testing.B) {
			items := make([]any, n)
			for i := range items {
				items[i] = fmt.Sprintf("item-%d", i)
			}
			var peak uint64
			for b.Loop() {
				b.StopTimer()
				a := spec.CheckSource("fanout.nika.yaml", []byte(agentFanOut), spec.CheckOptions{})
				w, err := workflow.Compile(a)
				if err != nil {
					b.Fatal(err)
				}
				eng, err := New(Options{RunDir: b.TempDir(), Providers: MockProviders()})
				if err != nil {
					b.Fatal(err)
				}
				p, perr := eng.Prepare(w, nil)
				if perr != nil {
					b.Fatal(perr)
				}
				p.Inputs.Vars["items"] = items
				runtime.GC()
				b.StartTimer()
				peak = max(peak, peakHeap(func() {
					res := eng.Execute(context.Background(), p, RunOptions{Canonical: event.NewMemory()})
					if res.State != "success" {
						b.Fatalf("state %s: %+v", res.State, res.Tasks[0].Error)
					}
				}))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/agent")
			b.ReportMetric(float64(peak)/float64(n), "peak-bytes/agent")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
		})
	}
}

// peakHeap samples the heap every millisecond while f runs and returns the highest figure
// (D33's method, as planner's engine benchmark).
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	var mu sync.Mutex
	stop, done := make(chan struct{}), make(chan struct{})
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
