package spec_test

import (
	"testing"

	"github.com/nikahq/nika/internal/fuzzbudget"
)

// TestFuzzSeedBudget keeps FuzzCheck's seed corpus small enough that a one-minute fuzz run
// spends its time mutating rather than re-running and minimizing seeds.
func TestFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzCheck", fuzzCheckSeeds(t), fuzzbudget.Budget{Count: 32, Largest: 640, Total: 10 << 10})
}
