package tools

import (
	"testing"

	"github.com/nikahq/nika/internal/fuzzbudget"
)

// TestFuzzSeedBudget keeps the seed corpora of this package's fuzz targets small enough that a
// one-minute fuzz run spends its time mutating rather than re-running and minimizing seeds.
func TestFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzHTMLToMarkdown", htmlFuzzSeeds, fuzzbudget.Budget{Count: 24, Largest: 256, Total: 2 << 10})
}
