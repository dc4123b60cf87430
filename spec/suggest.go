package spec

import (
	"fmt"
	"strings"
)

// suggest returns the candidate nearest to s within Levenshtein distance 2,
// comparing lower-cased strings; ties go to the alphabetically first
// (LANGUAGE.md §9.3). It returns "" when nothing is near enough.
func suggest(s string, candidates []string) string {
	ls := strings.ToLower(s)
	best, bestD := "", 3
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := levenshtein(ls, strings.ToLower(c), bestD)
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if bestD > 2 {
		return ""
	}
	return best
}

// didYouMean formats a suggestion for a detail: " (did you mean `x`?)".
func didYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return fmt.Sprintf(" Did you mean `%s`?", c)
	}
	return ""
}

// levenshtein is the edit distance between a and b (in runes), cut short
// once it provably exceeds max.
func levenshtein(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
