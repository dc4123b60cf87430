package catalog

import "github.com/nikahq/nika/spec/internal/nearest"

// suggest returns the "did you mean" candidate for name (LANGUAGE.md §9.3).
func suggest(name string, candidates []string) string { return nearest.Name(name, candidates) }
