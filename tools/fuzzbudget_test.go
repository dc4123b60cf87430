package tools

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A seedBudget bounds one fuzz target's seed corpus: its f.Add seeds and its files under
// testdata/fuzz/<target>/ (where `go test -fuzz` writes a failing input, which plain `go test`
// then runs as a seed).
//
// The budget is in seeds and bytes, not time. `go test -fuzz` runs every seed once (baseline
// coverage), then mutates the corpus entries in turn and minimizes each mutant that reaches new
// code, which costs up to n²/2 executions for an n-byte input (the minimizer tries removing
// every byte range). Mutants of a 2 KB seed page kept both workers of FuzzHTMLToMarkdown
// minimizing from the 6th second of a 40 s run to its end. The count bounds how long the first
// round over the seeds lasts, the largest seed bounds one minimization, and the total bounds
// the baseline.
type seedBudget struct {
	count   int // seeds
	largest int // bytes of the largest seed
	total   int // bytes of all the seeds
}

// checkSeedBudget fails when target's seeds (the f.Add ones, plus its testdata/fuzz files)
// exceed b.
func checkSeedBudget(t *testing.T, target string, seeds []string, b seedBudget) {
	t.Helper()
	sizes := make(map[string]int, len(seeds))
	for i, s := range seeds {
		sizes["f.Add seed #"+strconv.Itoa(i)] = len(s)
	}
	dir := filepath.Join("testdata", "fuzz", target)
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		sizes[filepath.Join(dir, e.Name())] = int(info.Size()) // the encoded file: an upper bound
	}
	total, largest, which := 0, 0, ""
	for name, n := range sizes {
		total += n
		if n > largest {
			largest, which = n, name
		}
	}
	t.Logf("%s: %d seeds, %d bytes, the largest %d bytes (%s)", target, len(sizes), total, largest, which)
	const fix = "trim the seeds (see the comment on the target's seed list), or raise the budget in " +
		"TestFuzzSeedBudget after measuring executions per minute with scripts/fuzz.sh (BENCHMARKS.md, Fuzzing)"
	if len(sizes) > b.count {
		t.Errorf("%s has %d seeds, over its budget of %d: %s", target, len(sizes), b.count, fix)
	}
	if largest > b.largest {
		t.Errorf("%s: %s has %d bytes, over the budget of %d for one seed: %s", target, which, largest, b.largest, fix)
	}
	if total > b.total {
		t.Errorf("%s: its seeds have %d bytes in all, over its budget of %d: %s", target, total, b.total, fix)
	}
}

// TestFuzzSeedBudget keeps the seed corpora of this package's fuzz targets small enough that a
// one-minute fuzz run spends its time mutating rather than re-running and minimizing seeds.
func TestFuzzSeedBudget(t *testing.T) {
	checkSeedBudget(t, "FuzzHTMLToMarkdown", htmlFuzzSeeds, seedBudget{count: 24, largest: 256, total: 2 << 10})
	checkSeedBudget(t, "FuzzGlobPattern", globFuzzSeeds, seedBudget{count: 48, largest: 256, total: 1 << 10})
}
