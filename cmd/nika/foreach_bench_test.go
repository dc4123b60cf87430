package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Black-box benchmarks of a wide for_each through the real binary (issue
// 12; BENCHMARKS.md, for_each): a task makes the list of n integers with
// nika:jq, and a for_each over it calls nika:jq once per item. The trace is
// written as in any run (the default path).

const wideForEach = `nika: v1
workflow: wide
vars:
  n: { type: integer, default: 10, description: "how many items" }
tasks:
  - id: gen
    invoke:
      tool: nika:jq
      args:
        expression: "[range(.)]"
        input: ${{ vars.n }}
  - id: each
    depends_on: [gen]
    for_each: ${{ tasks.gen.output }}
    invoke:
      tool: nika:jq
      args:
        expression: ". * 2"
        input: ${{ item }}
outputs:
  count: ${{ len(tasks.each.output) }}
`

func wideDir(b *testing.B) string {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wide.nika.yaml"), []byte(wideForEach), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// maxRSS is a finished process's peak resident set, in MiB.
func maxRSS(ps *os.ProcessState) float64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return 0
}

// BenchmarkForEachBinary is the wall time and peak RSS of `nika run` over
// n items, to the end. 999,999 is the widest list of integers a for_each
// can take: the value budget (1,000,000 nodes) counts the array itself.
func BenchmarkForEachBinary(b *testing.B) {
	for _, n := range []int{10000, 100000, 999999} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			dir := wideDir(b)
			var rss float64
			for b.Loop() {
				cmd := exec.Command(nikaBin, "run", "wide.nika.yaml", "--var", fmt.Sprintf("n=%d", n), "--quiet")
				cmd.Dir, cmd.Env = dir, testEnv
				out, err := cmd.Output()
				if err != nil || strings.TrimSpace(string(out)) != fmt.Sprintf(`{"count":%d}`, n) {
					b.Fatalf("nika run: %v, stdout %q", err, out)
				}
				rss = max(rss, maxRSS(cmd.ProcessState))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
			b.ReportMetric(rss, "peak-RSS-MiB")
		})
	}
}

// BenchmarkForEachSIGINT is the time from SIGINT to the exit of `nika run`
// (130) during a for_each of 100,000 items: the signal is sent a fixed delay
// after the list task settled (its ✓ line on stderr), while the iterations
// run. Target: ≤ 1 s.
func BenchmarkForEachSIGINT(b *testing.B) {
	const n = 100000
	for _, delay := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond} {
		b.Run(fmt.Sprintf("items=%d/after=%s", n, delay), func(b *testing.B) {
			dir := wideDir(b)
			var total, worst time.Duration
			for b.Loop() {
				cmd := exec.Command(nikaBin, "run", "wide.nika.yaml", "--var", fmt.Sprintf("n=%d", n), "--report", "report.json")
				cmd.Dir, cmd.Env = dir, testEnv
				stderr, err := cmd.StderrPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				sc := bufio.NewScanner(stderr)
				for sc.Scan() && !strings.HasPrefix(sc.Text(), "✓ gen") {
				}
				time.Sleep(delay) // a benchmark's fixed point in the run, not a synchronization
				sent := time.Now()
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					b.Fatal(err)
				}
				for sc.Scan() { // drain stderr until the process closes it
				}
				err = cmd.Wait()
				took := time.Since(sent)
				if cmd.ProcessState.ExitCode() != 130 {
					b.Fatalf("exit %v, want 130 (the run ended before the signal? raise n)", err)
				}
				total += took
				worst = max(worst, took)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-exit")
			b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
		})
	}
}
