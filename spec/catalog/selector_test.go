package catalog

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/nikahq/nika/internal/fuzzbudget"
)

// selectorFuzzSeeds is FuzzParseSelector's seed corpus: each selector form cascadia parses
// (type, class, id, attribute operators, combinators, groups, structural and custom
// pseudo-classes, escapes) and the malformed shapes. TestSelectorFuzzSeedBudget bounds it.
var selectorFuzzSeeds = []string{"h1", "a.b#c", `a[href^="https:" i]`, "[x~=y],[x|=y],[x$=y],[x*=y]", "ul > li + li ~ li",
	"li:nth-child(2n+1)", "p:nth-last-of-type(-n+3)", ":not(.x):has(b)", `:contains("x")`, ":matches(^a+$)",
	":root:empty", `\31 23`, "", " ", "a,", "a[", "a >", "::before", ":is(a)", "a\x00", "\xff", "*|*", ":nth-child(n", "a:hover"}

// FuzzParseSelector: the selector parser never panics, and a selector it accepts matches over
// a small page without panicking.
func FuzzParseSelector(f *testing.F) {
	for _, s := range selectorFuzzSeeds {
		f.Add(s)
	}
	doc, err := html.Parse(strings.NewReader(`<html lang=en><body><ul><li class=x>a</li><li><b>b</b></li></ul><p id=p></p><a href="https://e.x">l</a></body></html>`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		for n := range doc.Descendants() {
			sel.Match(n)
		}
	})
}

func TestSelectorFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzParseSelector", selectorFuzzSeeds, fuzzbudget.Budget{Count: 32, Largest: 64, Total: 512})
}
