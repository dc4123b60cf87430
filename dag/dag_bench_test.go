package dag

import (
	"fmt"
	"testing"
)

// d33IDs returns n task ids t0..t(n-1).
func d33IDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%d", i)
	}
	return ids
}

// buildD33 is the D33 generator's graph: task i depends on t(i-1) and t(i/2)
// (one edge when they coincide). recoverEvery > 0 also gives every
// recoverEvery-th task a recover reference to t(i-3), an earlier task, which
// is legal and so adds no deadlock.
func buildD33(ids []string, recoverEvery int) *Graph {
	g := New(ids)
	for i := 1; i < len(ids); i++ {
		g.DependsOn(ids[i], ids[i-1])
		g.DependsOn(ids[i], ids[i/2])
		if recoverEvery > 0 && i%recoverEvery == 0 && i >= 3 {
			g.Recovers(ids[i], ids[i-3])
		}
	}
	return g
}

// BenchmarkBuild measures what the checker and the compiler do with a graph:
// build it, ask for the cycles, the recover deadlocks and the canonical order.
// D33 targets the whole checker at 1,000 tasks < 250 ms and 10,000 < 3 s; dag
// should be a small fraction of that.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ids := d33IDs(n)
		run := func(b *testing.B, mk func() *Graph, wantCycles int) {
			b.ReportAllocs()
			for b.Loop() {
				g := mk()
				if len(g.Cycles()) != wantCycles || len(g.RecoverCycles()) != 0 {
					b.Fatal("unexpected cycles")
				}
				if got := len(g.Order()); wantCycles == 0 && got != n {
					b.Fatalf("Order has %d tasks", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
		}
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			run(b, func() *Graph { return buildD33(ids, 0) }, 0)
		})
		// Recover edges that close nothing: the Kahn pre-check settles them.
		b.Run(fmt.Sprintf("tasks=%d/recover", n), func(b *testing.B) {
			run(b, func() *Graph { return buildD33(ids, 10) }, 0)
		})
		// Worst case for cycle finding: t0 depends on the last task, so every
		// task is in one component and the library's SCC search runs over the
		// whole graph (a 10,000-deep recursion in its Tarjan).
		b.Run(fmt.Sprintf("tasks=%d/cycle", n), func(b *testing.B) {
			run(b, func() *Graph {
				g := buildD33(ids, 0)
				g.DependsOn(ids[0], ids[n-1])
				return g
			}, 1)
		})
		// Worst case for recover deadlocks: t0's recover reads the last task,
		// a transitive dependent, so the whole graph is one component of
		// depends_on + recover edges.
		b.Run(fmt.Sprintf("tasks=%d/recovercycle", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g := buildD33(ids, 0)
				g.Recovers(ids[0], ids[n-1])
				if len(g.Cycles()) != 0 || len(g.RecoverCycles()) != 1 || len(g.Order()) != n {
					b.Fatal("unexpected result")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
		})
	}
}
