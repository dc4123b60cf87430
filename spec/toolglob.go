package spec

import "strings"

// ToolAllowed applies a list of tool globs to a canonical tool name
// (LANGUAGE.md §2.4.1): `*` matches any run without `/` or `:`, `**` any
// run, a leading `!` negates, the last matching pattern wins, and no match
// denies.
func ToolAllowed(globs []string, name string) bool {
	allowed := false
	for _, g := range globs {
		neg := strings.HasPrefix(g, "!")
		if GlobMatch(strings.TrimPrefix(g, "!"), name) {
			allowed = !neg
		}
	}
	return allowed
}

// GlobMatch matches one tool glob against a name in O(len(p)·len(s)), with
// no backtracking.
func GlobMatch(p, s string) bool {
	if strings.IndexByte(p, '*') < 0 { // a plain name, the common whitelist entry: no tables
		return p == s
	}
	// Tokens: literal bytes, '*' (one segment) and '**' (anything).
	type tok struct {
		lit  byte
		kind uint8 // 0 literal, 1 star, 2 double star
	}
	var toks []tok
	for i := 0; i < len(p); i++ {
		if p[i] == '*' {
			if i+1 < len(p) && p[i+1] == '*' {
				toks = append(toks, tok{kind: 2})
				for i+1 < len(p) && p[i+1] == '*' {
					i++
				}
				continue
			}
			toks = append(toks, tok{kind: 1})
			continue
		}
		toks = append(toks, tok{lit: p[i]})
	}
	// cur[j]: the first i tokens match s[:j].
	prev := make([]bool, len(s)+1)
	cur := make([]bool, len(s)+1)
	prev[0] = true
	for _, t := range toks {
		for j := range cur {
			cur[j] = false
		}
		switch t.kind {
		case 0:
			for j := 1; j <= len(s); j++ {
				cur[j] = prev[j-1] && s[j-1] == t.lit
			}
		case 1:
			cur[0] = prev[0]
			for j := 1; j <= len(s); j++ {
				cur[j] = prev[j] || (cur[j-1] && s[j-1] != '/' && s[j-1] != ':')
			}
		case 2:
			cur[0] = prev[0]
			for j := 1; j <= len(s); j++ {
				cur[j] = prev[j] || cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(s)]
}
