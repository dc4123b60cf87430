package lsp

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// genWorkflow is spec's D33 generator (spec/bench_test.go): task i depends
// on t(i-1) and t(i/2), has one `with` expression, a prompt with two
// placeholders and one jq binding. The first var's default is on line 5.
func genWorkflow(n int) string {
	var b strings.Builder
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
	return b.String()
}

// edit is the i-th edit of the soak: the var default on line 5 (0-based 4)
// is rewritten, alternating between a valid value and a placeholder (a var
// default is literal-only: NIKA-VAR-005), so every other version has one
// finding.
func edit(i int) contentChange {
	text := fmt.Sprintf("\"go %d\"", i)
	if i%2 == 1 {
		text = fmt.Sprintf("\"${{ %d }}\"", i)
	}
	return contentChange{Range: &Range{Position{4, 9}, Position{4, 1 << 20}}, Text: text}
}

// 1,000 edits leave no goroutine behind (goleak, in TestMain) and the heap
// does not grow: after the 1,000th edit it is within a bound of what it was
// after the 100th. Every hundredth version's diagnostics are awaited, so
// the server keeps up and its queues stay short.
func TestThousandEditsDoNotGrow(t *testing.T) {
	text := genWorkflow(20)
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(validURI, text)
	if got := c.diagnostics(validURI, 1); len(got.Diagnostics) != 0 {
		t.Fatalf("the generated workflow has findings: %+v", got.Diagnostics)
	}
	goroutines := runtime.NumGoroutine()
	var base uint64
	for i := 1; i <= 1000; i++ {
		c.change(validURI, int32(i+1), edit(i))
		if i%100 != 0 {
			continue
		}
		got := c.diagnostics(validURI, int32(i+1))
		if len(got.Diagnostics) != 0 { // i is even: the valid value
			t.Fatalf("version %d: %d diagnostics, want 0", i+1, len(got.Diagnostics))
		}
		if i == 100 {
			base = heap()
		}
	}
	c.change(validURI, 1002, edit(1001))
	if got := c.diagnostics(validURI, 1002); len(got.Diagnostics) != 1 || got.Diagnostics[0].Code != "NIKA-VAR-005" {
		t.Fatalf("the last version: %+v, want one NIKA-VAR-005", got.Diagnostics)
	}
	end := heap()
	// The bound: 8 MiB over the base, where one more retained copy of the
	// document and its analysis per edit would be hundreds of MiB.
	if end > base+8<<20 {
		t.Errorf("the heap grew from %d to %d bytes over 900 edits", base, end)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the edits, %d before", n, goroutines)
	}
	t.Logf("heap after 100 edits %d KiB, after 1,001 %d KiB", base>>10, end>>10)
	c.shutdown()
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
