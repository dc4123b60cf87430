package lsp

import (
	"testing"
	"time"
)

// BenchmarkDiagnostics measures, over the pipes of a real session, the time
// from sending a change of a 1,000-task file to receiving its diagnostics:
// the debounce, the check and the framing, as an editor sees them. Target:
// 300 ms (issue 19). Run with
//
//	go test ./lsp/ -run '^$' -bench BenchmarkDiagnostics -benchtime 20x -count 5
func BenchmarkDiagnostics(b *testing.B) {
	for _, tc := range []struct {
		name     string
		debounce time.Duration
	}{{"tasks=1000/debounce=50ms", DefaultDebounce}, {"tasks=1000/debounce=0", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			text := genWorkflow(1000)
			c := start(b, Options{Debounce: tc.debounce}, nil)
			c.initialize()
			c.open(validURI, text)
			c.diagnostics(validURI, 1)
			version := int32(1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				version++
				c.change(validURI, version, edit(i))
				got := c.diagnostics(validURI, version)
				if want := i % 2; len(got.Diagnostics) != want {
					b.Fatalf("version %d: %d diagnostics, want %d", version, len(got.Diagnostics), want)
				}
			}
			b.StopTimer()
			c.shutdown()
		})
	}
}
