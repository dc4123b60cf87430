package core

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nikahq/nika/provider"
)

// BenchmarkTurn is the core's share of one dispatch turn of N calls (AGENT.md §14's "fold +
// events"): the turn's request, the classification of a reply of N tool calls, and the fold of
// their N results with the guard. Reported per call.
func BenchmarkTurn(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			blocks := make([]provider.Block, n)
			results := make([]Result, n)
			for i := range blocks {
				blocks[i] = provider.ToolUseBlock(fmt.Sprintf("c%d", i), "nika:hash", json.RawMessage(fmt.Sprintf(`{"content":"payload number %d of this turn, about a hundred bytes of JSON arguments"}`, i)))
				results[i] = Result{Content: fmt.Sprintf("result %d", i)}
			}
			turns := make([]string, 20)
			for i := range turns {
				turns[i] = fmt.Sprintf("turn %d", i)
			}
			resp := &provider.Response{Message: provider.Message{Role: provider.RoleAssistant, Blocks: blocks}}
			a := Arming{Model: "test/m", Prompt: "p", MaxTurns: 1000, Tools: []string{"nika:hash"}, Universe: []provider.ToolDef{{Name: "nika:hash"}}}
			l, _ := New(a)
			l.Start()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 && i%20 == 0 { // a run of 20 turns: the transcript a request snapshots stays realistic
					b.StopTimer()
					l, _ = New(a)
					l.Start()
					b.StartTimer()
				}
				results[0].Content = turns[i%20] // a changing result: the guard never stalls
				l.Next()
				l.Replied(Reply{Response: resp})
				if st := l.Resolved(results); !st.Next {
					b.Fatalf("step %+v", st.Done)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
