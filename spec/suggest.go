package spec

import (
	"fmt"

	"github.com/nikahq/nika/spec/internal/nearest"
)

// suggest returns the "did you mean" candidate for s (LANGUAGE.md §9.3).
func suggest(s string, candidates []string) string { return nearest.Name(s, candidates) }

// didYouMean formats a suggestion for a detail: " Did you mean `x`?".
func didYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return fmt.Sprintf(" Did you mean `%s`?", c)
	}
	return ""
}
