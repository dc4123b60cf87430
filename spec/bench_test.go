package spec

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// genWorkflow is the realistic generator of DECISIONS.md D33: task i
// depends on t(i-1) and t(i/2), has one `with` expression, a prompt with two
// placeholders and one jq binding.
func genWorkflow(n int) []byte {
	var b strings.Builder
	b.Grow(n * 260)
	b.WriteString("nika: v1\nworkflow: bench\nmodel: mock/echo\nvars:\n  topic: \"go\"\ntasks:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: t%d\n", i)
		if i > 0 {
			deps := fmt.Sprintf("t%d", i-1)
			if h := i / 2; h != i-1 {
				deps += fmt.Sprintf(", t%d", h)
			}
			fmt.Fprintf(&b, "    depends_on: [%s]\n", deps)
			fmt.Fprintf(&b, "    with:\n      prev: ${{ tasks.t%d.output }}\n", i-1)
		} else {
			b.WriteString("    with:\n      prev: ${{ vars.topic }}\n")
		}
		b.WriteString("    infer:\n      prompt: \"Step ${{ vars.topic }} after ${{ with.prev }}\"\n")
		b.WriteString("    output:\n      size: \"length\"\n")
	}
	b.WriteString("outputs:\n  last: ${{ tasks.t" + fmt.Sprint(n-1) + ".output }}\n")
	return []byte(b.String())
}

func TestGeneratedWorkflowIsValid(t *testing.T) {
	a := CheckSource("bench.nika.yaml", genWorkflow(200), CheckOptions{})
	for _, f := range a.Findings {
		t.Errorf("unexpected finding: %s", FormatFinding("bench.nika.yaml", f))
	}
	if len(a.Tasks) != 200 {
		t.Fatalf("tasks = %d, want 200", len(a.Tasks))
	}
	if got := a.Graph.Wave("t199"); got != 199 {
		t.Errorf("wave of t199 = %d, want 199", got)
	}
}

// BenchmarkCheck measures Parse + Check on the D33 generator; targets:
// 1,000 tasks < 250 ms and 10,000 < 3 s.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		src := genWorkflow(n)
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				a := CheckSource("bench.nika.yaml", src, CheckOptions{})
				if !a.Valid() {
					b.Fatal("generated workflow is invalid")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
		})
	}
}

// TestCheckAllocatesLinearly guards the D33 targets without timing: the
// bytes a check allocates must grow linearly with the file (4× the tasks,
// about 4× the bytes), so an accidental quadratic pass fails here rather
// than in a benchmark nobody ran.
func TestCheckAllocatesLinearly(t *testing.T) {
	alloc := func(n int) uint64 {
		src := genWorkflow(n)
		CheckSource("warm.nika.yaml", src, CheckOptions{})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		CheckSource("bench.nika.yaml", src, CheckOptions{})
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(500), alloc(2000)
	if ratio := float64(large) / float64(small); ratio > 6 {
		t.Fatalf("checking 4× the tasks allocated %.1f× the bytes (%d vs %d): something is quadratic", ratio, large, small)
	}
}
