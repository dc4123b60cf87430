// Package nearest picks the "did you mean" candidate of LANGUAGE.md §9.3,
// the one rule shared by the checker, the expression front end and the
// builtin catalog.
package nearest

import "strings"

// Name returns the candidate nearest to s within Levenshtein distance 2,
// comparing lower-cased strings, with ties broken alphabetically. It
// returns "" when nothing is near enough, or when s is itself a candidate.
func Name(s string, candidates []string) string {
	ls := strings.ToLower(s)
	best, bestD := "", 3
	for _, c := range candidates {
		if c == s {
			return ""
		}
		d := distance(ls, strings.ToLower(c), bestD)
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if bestD > 2 {
		return ""
	}
	return best
}

// distance is the edit distance between a and b in runes, cut short (any
// value > max) once it provably exceeds max.
func distance(a, b string, max int) int {
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
