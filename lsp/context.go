package lsp

import (
	"regexp"
	"strings"
)

// Completion reads the cursor's place from the text, line by line, not
// from the AST: while a key or a value is half typed the file often does not
// parse. Block structure is indentation: a line's content column (after its
// indentation and `- ` markers) says which mapping it belongs to.

// yamlLine is one line as the completion context sees it.
type yamlLine struct {
	blank   bool   // empty or a comment
	dashes  []int  // columns of the `- ` item markers before the content
	content int    // column where the content starts
	key     string // the mapping key that starts the content, "" when none
	value   string // the key's inline value (trimmed, comment dropped)
}

var keyRE = regexp.MustCompile(`^("[^"]*"|'[^']*'|[^\s:#'"{}\[\],&*!|>%@` + "`" + `][^:#]*?)[ \t]*:([ \t]|$)`)

func parseLine(s string) yamlLine {
	var yl yamlLine
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	for i < len(s) && s[i] == '-' && (i+1 == len(s) || s[i+1] == ' ') {
		yl.dashes = append(yl.dashes, i)
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	yl.content = i
	rest := strings.TrimRight(s[i:], " \t\r")
	if (rest == "" && len(yl.dashes) == 0) || strings.HasPrefix(rest, "#") {
		yl.blank = true
		return yl
	}
	if m := keyRE.FindStringSubmatchIndex(rest); m != nil {
		yl.key = strings.Trim(rest[m[2]:m[3]], `"'`)
		v := rest[m[1]:]
		if j := strings.Index(v, " #"); j >= 0 {
			v = v[:j]
		}
		yl.value = strings.TrimSpace(v)
	}
	return yl
}

// cursorContext is the cursor's place in the YAML structure.
type cursorContext struct {
	path     []string // keys (and "-" for items) from the root to the mapping the cursor is in
	lines    []int    // the line of each element of path
	key      string   // at a value: the key whose value is typed; at a key position: ""
	item     bool     // the value is an item of the sequence that is key's value
	inScalar bool     // inside a block scalar (`|`, `>`): no structure to complete
	word     string   // what is typed of the word before the cursor
	wordFrom int      // its offset in the document
	space    bool     // a value typed right after `key:`: the insertion needs a space first
	siblings []string // at a key position: the keys the mapping already has
	line     int      // the cursor's line
}

// contextAt finds the context of the cursor at offset off of text.
func contextAt(x *lineIndex, off int) cursorContext {
	l := x.line(off)
	start := x.start[l]
	before := string(x.text[start:off])
	c := cursorContext{line: l}
	cur := parseLine(before)
	wordStart := strings.LastIndexAny(before, " \t[,{\"'") + 1
	c.word, c.wordFrom = before[wordStart:], start+wordStart
	parents := func(col int, dashes []int) []string { return pathAbove(x, l, col, dashes, &c) }
	switch {
	case cur.key != "" && len(before) > cur.content+len(cur.key):
		// `key: value…` or `key: [a, b…` on this line
		c.key = cur.key
		c.path = parents(cur.content, cur.dashes)
		value := before[strings.Index(before[cur.content:], ":")+cur.content+1:]
		c.space = value == ""
		if open := strings.LastIndex(value, "["); open >= 0 && !strings.Contains(value[open:], "]") {
			c.item = true
		}
	case len(cur.dashes) > 0 && !strings.Contains(before[cur.content:], ":"):
		// `- item…`: an item of the sequence under the parent key, or the
		// first key of a mapping item
		c.item = true
		c.path = parents(cur.dashes[0], nil)
		if n := len(c.path); n > 0 {
			c.key, c.path, c.lines = c.path[n-1], c.path[:n-1], c.lines[:n-1]
		}
		if len(cur.dashes) > 1 { // `- - x`: only the innermost level is completed
			c.inScalar = true
		}
	default:
		// a key position: what is typed is a key of the mapping at this column
		col := cur.content
		if cur.blank && len(cur.dashes) == 0 {
			col = len(before) // nothing typed yet: the cursor's column
		}
		c.path = parents(col, cur.dashes)
		c.siblings = siblingKeys(x, l, col, len(cur.dashes) > 0)
	}
	return c
}

// pathAbove walks up from line l to find the keys that hold content at
// column col. dashes are the item markers of line l itself, each one a
// sequence level. A parent whose value is a block scalar marks the context
// inScalar.
func pathAbove(x *lineIndex, l, col int, dashes []int, c *cursorContext) []string {
	var path []string
	var lines []int
	want := col
	afterDash := false
	for i := len(dashes) - 1; i >= 0; i-- {
		path, lines = append(path, "-"), append(lines, l)
		want, afterDash = dashes[i], true
	}
	for k := l - 1; k >= 0 && (want > 0 || afterDash); k-- {
		yl := parseLine(string(x.text[x.start[k]:x.lineEnd(k)]))
		if yl.blank {
			continue
		}
		if yl.key != "" && (yl.content < want || (afterDash && yl.content == want && len(yl.dashes) == 0)) {
			if len(path) == 0 && (strings.HasPrefix(yl.value, "|") || strings.HasPrefix(yl.value, ">")) {
				c.inScalar = true
			}
			path, lines = append(path, yl.key), append(lines, k)
			want, afterDash = yl.content, false
		}
		for i := len(yl.dashes) - 1; i >= 0; i-- {
			if yl.dashes[i] < want {
				path, lines = append(path, "-"), append(lines, k)
				want, afterDash = yl.dashes[i], true
			}
		}
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
		lines[i], lines[j] = lines[j], lines[i]
	}
	c.lines = lines
	return path
}

// siblingKeys lists the keys already written at column col in the mapping
// that holds line l. newItem says line l starts a new sequence item, so the
// lines above belong to other items.
func siblingKeys(x *lineIndex, l, col int, newItem bool) []string {
	var keys []string
	if !newItem {
		for k := l - 1; k >= 0; k-- {
			yl := parseLine(string(x.text[x.start[k]:x.lineEnd(k)]))
			if yl.blank {
				continue
			}
			if yl.content < col {
				break
			}
			if yl.content == col && yl.key != "" {
				keys = append(keys, yl.key)
			}
			if yl.content == col && len(yl.dashes) > 0 {
				break // the first line of this item
			}
		}
	}
	for k := l + 1; k < len(x.start); k++ {
		yl := parseLine(string(x.text[x.start[k]:x.lineEnd(k)]))
		if yl.blank {
			continue
		}
		if yl.content < col || (yl.content == col && len(yl.dashes) > 0) {
			break
		}
		if yl.content == col && yl.key != "" {
			keys = append(keys, yl.key)
		}
	}
	return keys
}

// childValue finds, in the mapping that is the value of the key on line
// parent, the inline value of key (e.g. the `tool:` beside an `args:`).
func childValue(x *lineIndex, parent int, key string) string {
	py := parseLine(string(x.text[x.start[parent]:x.lineEnd(parent)]))
	col := -1
	for k := parent + 1; k < len(x.start); k++ {
		yl := parseLine(string(x.text[x.start[k]:x.lineEnd(k)]))
		if yl.blank {
			continue
		}
		if yl.content <= py.content && (len(yl.dashes) == 0 || yl.dashes[0] <= py.content) {
			break
		}
		if col < 0 {
			col = yl.content
		}
		if yl.content == col && yl.key == key {
			return strings.Trim(yl.value, `"'`)
		}
	}
	return ""
}
