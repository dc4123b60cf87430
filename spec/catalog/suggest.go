package catalog

import (
	"sort"
	"strings"
)

// suggest returns the candidate nearest to name for a "did you mean" (LANGUAGE.md §9.3):
// Levenshtein distance ≤ 2 over lower-cased strings, the nearest wins, ties broken
// alphabetically; "" when none is close enough or name is itself a candidate.
func suggest(name string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	lname := strings.ToLower(name)
	best, bestDist := "", 3
	for _, c := range sorted {
		if c == name {
			return ""
		}
		if d := levenshtein(lname, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// levenshtein is the edit distance between a and b, counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
