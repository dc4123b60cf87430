package einobench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/nikahq/nika/verbs/agent/dispatch"
)

// The arguments every call carries, about 100 bytes, as in the main module's
// BenchmarkDispatchOverhead.
const args = `{"path":"src/main.go","pattern":"func [A-Z][a-zA-Z0-9]*","max_results":100,"x":1}`

const toolName = "read"

// nopTool is Eino's side of the no-op tool: it returns "ok" and ignores its arguments.
type nopTool struct{}

func (nopTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: toolName, Desc: "no-op"}, nil
}

func (nopTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return "ok", nil
}

// nopExec is nika's side of the same tool.
var nopExec = dispatch.ExecutorFunc(func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
	return "ok", nil, nil
})

// nopProgress stands for the live stream: nika's figures are taken with the progress hook on, as the
// agent loop always runs it.
type nopProgress struct{}

func (nopProgress) CallStarted(dispatch.Call)    {}
func (nopProgress) CallFinished(dispatch.Result) {}

// sizes are the batch sizes compared.
var sizes = []int{8, 64}

func nikaCalls(n int) []dispatch.Call {
	cs := make([]dispatch.Call, n)
	for i := range cs {
		cs[i] = dispatch.Call{Index: i, ID: fmt.Sprintf("toolu_%d", i), Name: toolName, Args: json.RawMessage(args)}
	}
	return cs
}

func einoInput(n int) *schema.Message {
	tcs := make([]schema.ToolCall, n)
	for i := range tcs {
		tcs[i] = schema.ToolCall{ID: fmt.Sprintf("toolu_%d", i), Type: "function",
			Function: schema.FunctionCall{Name: toolName, Arguments: args}}
	}
	return schema.AssistantMessage("", tcs)
}

// perCall runs batch b.N times and reports the time and the allocations per call (not per batch: a
// batch of 64 would otherwise look 8 times dearer than one of 8). The allocation count is the heap's
// own, read outside the timing.
func perCall(b *testing.B, n int, batch func()) {
	batch() // warm: first-use allocations (pools, the scheduler's free goroutines) are not per call
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		batch()
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	calls := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/calls, "ns/call")
	b.ReportMetric(float64(cpu.Nanoseconds())/calls, "cpu-ns/call")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/calls, "allocs/call")
	b.ReportMetric(0, "ns/op") // per batch, which the per-call figures replace
}

// cpuTime is the CPU time the process has used, user and system, on every
// thread: the runtime's (scheduler, garbage collector) included. On a machine
// shared with other work it moves less than the wall time, which also counts
// the time this process waited for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDispatch runs the three dispatchers on the same batches. nika runs with its cap equal to
// the batch (P=N, as Eino and the bare baseline, which have no cap) and with its default cap of 8.
func BenchmarkDispatch(b *testing.B) {
	ctx := context.Background()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%d/bare", n), func(b *testing.B) {
			calls := nikaCalls(n)
			res := make([]string, n)
			perCall(b, n, func() {
				var wg sync.WaitGroup
				for i := range calls {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res[i], _, _ = nopExec(ctx, calls[i])
					}()
				}
				wg.Wait()
			})
		})
		b.Run(fmt.Sprintf("N=%d/eino", n), func(b *testing.B) {
			node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{nopTool{}}})
			if err != nil {
				b.Fatal(err)
			}
			in := einoInput(n)
			perCall(b, n, func() {
				out, err := node.Invoke(ctx, in)
				if err != nil || len(out) != n {
					b.Fatalf("eino: %d results, %v", len(out), err)
				}
			})
		})
		caps := []int{n}
		if n != dispatch.DefaultMaxParallel {
			caps = append(caps, dispatch.DefaultMaxParallel)
		}
		for _, p := range caps {
			b.Run(fmt.Sprintf("N=%d/nika-P=%d", n, p), func(b *testing.B) {
				calls := nikaCalls(n)
				cfg := dispatch.Config{MaxParallel: p}
				perCall(b, n, func() {
					res := dispatch.Resolve(ctx, cfg, nopExec, calls, nopProgress{})
					if res[n-1].Content != "ok" {
						b.Fatalf("nika: %+v", res[n-1])
					}
				})
			})
		}
	}
}
