package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// genTasks is the 100-task wide (every task independent) or chain (task i depends on i-1)
// workflow of the Temporal benchmarks; each task is one cheap nika:jq call.
func genTasks(n int, chain bool) string {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: bench\ntasks:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: t%d\n", i)
		if chain && i > 0 {
			fmt.Fprintf(&b, "    depends_on: [t%d]\n", i-1)
		}
		b.WriteString("    invoke: { tool: nika:jq, args: { expression: \".\", input: 1 } }\n")
	}
	return b.String()
}

// agentsSrc is a for_each of n agents on the mock provider, each two turns (a nika:uuid call, then
// nika:done): on Temporal an arming, two model requests and one tool call, one after the other.
func agentsSrc(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`nika: v1
workflow: agents
model: mock/echo
permits: { tools: ["nika:uuid", "nika:done"] }
tasks:
  - id: a
    for_each: [%s]
    agent:
      prompt: "Make an identifier, then finish."
      tools: ["nika:uuid", "nika:done"]
      max_turns: 4
`, strings.Join(items, ", "))
}

// BenchmarkTemporalRuns is one `nika run` of the 100-task wide and chain workflows (and of 20
// agents) after the other, through the binary, on the local driver and on the dev server
// ($NIKA_TEMPORAL_DEVSERVER, with one `nika worker`): runs per second and the wall time per task.
func BenchmarkTemporalRuns(b *testing.B) {
	dir := b.TempDir()
	addr := startDevServer(b, dir)
	startWorker(b, dir, addr, "nika")
	for _, shape := range []string{"wide", "chain", "agents"} {
		n, src := 100, genTasks(100, shape == "chain")
		if shape == "agents" {
			n, src = 20, agentsSrc(20)
		}
		if err := os.WriteFile(filepath.Join(dir, shape+".nika.yaml"), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, driver := range []string{"local", "temporal"} {
			b.Run(shape+"/"+driver, func(b *testing.B) {
				args := []string{"run", shape + ".nika.yaml", "--quiet", "--no-trace"}
				if driver == "temporal" {
					args = append(args, "--temporal", addr)
				}
				for b.Loop() {
					cmd := exec.Command(nikaBin, args...)
					cmd.Dir, cmd.Env = dir, testEnv
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("nika %v: %v\n%s", args, err, out)
					}
				}
				per := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(1/per, "runs/s")
				b.ReportMetric(per*1e6/float64(n), "µs/task")
			})
		}
	}
}
