// Package einobench measures nika's intra-turn dispatch (verbs/agent/dispatch.Resolve) side by side
// with Eino's compose.ToolsNode and with bare goroutines and a sync.WaitGroup, on the same no-op tool
// and the same calls (issue 20). It is a module of its own so that the main module never depends on
// Eino: `go test ./...` and `go vet ./...` at the repository root do not enter it (a directory with
// its own go.mod is another module). Run it with scripts/bench-dispatch-eino.sh, which prints the
// medians per call.
//
// The package holds only benchmarks; it has nothing to import.
package einobench
