package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"
)

var benchArgs = json.RawMessage(`{"path":"src/main.go","pattern":"func [A-Z][a-zA-Z0-9]*","max_results":100,"x":1}`)

type nopProgress struct{}

func (nopProgress) CallStarted(Call)    {}
func (nopProgress) CallFinished(Result) {}

// BenchmarkDispatchOverhead: engine overhead per call (phase 1 only; the fold
// belongs to the loop) with a no-op executor, ~100 B args, progress on.
// Batch of 64 calls at caps 1, 8, 64, plus batch sizes 1 and 8 at cap 8.
func BenchmarkDispatchOverhead(b *testing.B) {
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) { return "ok", nil, nil })
	grid := []struct{ n, p int }{{64, 1}, {64, 8}, {64, 64}, {1, 8}, {8, 8}}
	for _, g := range grid {
		b.Run(fmt.Sprintf("N=%d/P=%d", g.n, g.p), func(b *testing.B) {
			calls := make([]Call, g.n)
			for i := range calls {
				calls[i] = Call{Index: i, ID: fmt.Sprintf("toolu_%d", i), Name: "nika:read", Args: benchArgs}
			}
			ctx := context.Background()
			cfg := Config{MaxParallel: g.p}
			per := make([]float64, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				Resolve(ctx, cfg, ex, calls, nopProgress{})
				per = append(per, float64(time.Since(t0).Nanoseconds())/float64(g.n))
			}
			b.StopTimer()
			sort.Float64s(per)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*g.n), "ns/call")
			b.ReportMetric(per[len(per)/2], "p50-ns/call")
			b.ReportMetric(per[len(per)*99/100], "p99-ns/call")
		})
	}
}

// BenchmarkDispatchOverheadAllocs reports allocs/call separately (b.ReportAllocs
// gives allocs per batch).
func BenchmarkDispatchOverheadAllocs(b *testing.B) {
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) { return "ok", nil, nil })
	for _, p := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("N=64/P=%d", p), func(b *testing.B) {
			calls := make([]Call, 64)
			for i := range calls {
				calls[i] = Call{Index: i, ID: fmt.Sprintf("toolu_%d", i), Name: "nika:read", Args: benchArgs}
			}
			allocs := testing.AllocsPerRun(200, func() {
				Resolve(context.Background(), Config{MaxParallel: p}, ex, calls, nopProgress{})
			})
			for i := 0; i < b.N; i++ {
				Resolve(context.Background(), Config{MaxParallel: p}, ex, calls, nopProgress{})
			}
			b.ReportMetric(allocs/64, "allocs/call")
		})
	}
}

// BenchmarkTenThousandCalls: N = 10,000, P = 8, no-op; reports the in-flight
// high-water mark.
func BenchmarkTenThousandCalls(b *testing.B) {
	var cur, peak atomic.Int64
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		v := cur.Add(1)
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				break
			}
		}
		cur.Add(-1)
		return "", nil, nil
	})
	calls := make([]Call, 10000)
	for i := range calls {
		calls[i] = Call{Index: i, ID: fmt.Sprint(i), Name: "nop"}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Resolve(context.Background(), Config{MaxParallel: 8}, ex, calls, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
	b.ReportMetric(float64(peak.Load()), "high-water")
	if peak.Load() > 8 {
		b.Fatalf("high-water %d > 8", peak.Load())
	}
}
