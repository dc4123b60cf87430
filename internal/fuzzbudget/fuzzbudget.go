// Package fuzzbudget bounds a fuzz target's seed corpus, for the TestFuzzSeedBudget tests of the
// packages that have fuzz targets (BENCHMARKS.md, Fuzzing).
//
// The budget is in seeds and bytes, not time. `go test -fuzz` runs every seed once (baseline
// coverage), then mutates the corpus entries in turn and minimizes each mutant that reaches new
// code, which costs up to n²/2 executions for an n-byte input (the minimizer tries removing
// every byte range). With 167 seeds of up to 3 KB, a 60 s run of FuzzCheck never got past
// minimizing mutants of its first seeds, and mutants of a 2 KB page kept both workers of
// FuzzHTMLToMarkdown minimizing for most of a 60 s run. The count bounds how long the first round
// over the seeds lasts, the largest seed bounds one minimization, and the total bounds the
// baseline.
package fuzzbudget

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Budget bounds one fuzz target's seed corpus.
type Budget struct {
	Count   int // seeds
	Largest int // bytes of the largest seed
	Total   int // bytes of all the seeds
}

// Check fails t when target's seeds (the f.Add ones, plus its files under testdata/fuzz/<target>/
// of the package under test, where `go test -fuzz` writes a failing input that plain `go test`
// then runs as a seed) exceed b.
func Check[S string | []byte](t *testing.T, target string, seeds []S, b Budget) {
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
		if n > largest || (n == largest && name < which) {
			largest, which = n, name
		}
	}
	t.Logf("%s: %d seeds, %d bytes, the largest %d bytes (%s)", target, len(sizes), total, largest, which)
	const fix = "trim the seeds (see the comment on the target's seed list), or raise the budget in " +
		"TestFuzzSeedBudget after measuring executions per minute with scripts/fuzz.sh (BENCHMARKS.md, Fuzzing)"
	if len(sizes) > b.Count {
		t.Errorf("%s has %d seeds, over its budget of %d: %s", target, len(sizes), b.Count, fix)
	}
	if largest > b.Largest {
		t.Errorf("%s: %s has %d bytes, over the budget of %d for one seed: %s", target, which, largest, b.Largest, fix)
	}
	if total > b.Total {
		t.Errorf("%s: its seeds have %d bytes in all, over its budget of %d: %s", target, total, b.Total, fix)
	}
}
