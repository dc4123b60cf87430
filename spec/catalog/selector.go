package catalog

import (
	"github.com/andybalholm/cascadia"
)

// ParseSelector compiles the `selector` of nika:fetch mode `selector` (LANGUAGE.md §7.5): a CSS
// selector group as cascadia reads it (`h1, h2`, `a[href^="https:"]`, `li:nth-child(2n)`,
// `:has(…)`, `:contains("…")`), pseudo-elements refused. The static check and nika:fetch
// both call it, so a selector that passes `nika check` compiles at run time and one that
// does not is refused with the same message.
func ParseSelector(s string) (cascadia.SelectorGroup, error) {
	return cascadia.ParseGroup(s)
}
