package metrics

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// maxValueLen is the longest label value kept; a longer one is Overflow.
const maxValueLen = 128

// capper admits the first max distinct values of one label and maps every later one to Overflow
// (D35). The admitted set only grows, so a value once admitted keeps its own series.
type capper struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
	full bool // len(seen) == max, read under mu
}

func newCapper(limit int) *capper {
	return &capper{max: limit, seen: make(map[string]struct{}, min(limit, 16))}
}

// value returns v, "unknown" for an empty v, or Overflow once the cap is reached or when v cannot be
// a label value.
func (c *capper) value(v string) string {
	if v == "" {
		return "unknown"
	}
	if len(v) > maxValueLen || !utf8.ValidString(v) {
		return Overflow
	}
	c.mu.RLock()
	_, ok := c.seen[v]
	full := c.full
	c.mu.RUnlock()
	switch {
	case ok:
		return v
	case full:
		return Overflow
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if len(c.seen) >= c.max {
		return Overflow
	}
	c.seen[v] = struct{}{}
	c.full = len(c.seen) >= c.max
	return v
}

// canonicalTool reports whether name has the grammar of a tool name (LANGUAGE.md §7):
// `nika:` [a-z][a-z0-9_]* or `mcp:` server `/` tool, server = [a-z][a-z0-9-]*, tool = [A-Za-z0-9_-]+.
func canonicalTool(name string) bool {
	if rest, ok := strings.CutPrefix(name, "nika:"); ok {
		return ident(rest, func(r byte) bool { return lower(r) || digit(r) || r == '_' })
	}
	rest, ok := strings.CutPrefix(name, "mcp:")
	if !ok {
		return false
	}
	server, tool, ok := strings.Cut(rest, "/")
	if !ok || !ident(server, func(r byte) bool { return lower(r) || digit(r) || r == '-' }) || tool == "" {
		return false
	}
	for i := 0; i < len(tool); i++ {
		if r := tool[i]; !lower(r) && !(r >= 'A' && r <= 'Z') && !digit(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// ident reports whether s is a lower-case letter followed by bytes that satisfy rest.
func ident(s string, rest func(byte) bool) bool {
	if s == "" || !lower(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

func lower(r byte) bool { return r >= 'a' && r <= 'z' }
func digit(r byte) bool { return r >= '0' && r <= '9' }
