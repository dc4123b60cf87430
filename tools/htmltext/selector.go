package htmltext

import (
	"context"
	"errors"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ErrTooLarge is Select's error when the text of the matches exceeds its bound.
var ErrTooLarge = errors.New("the text of the matches is larger than the bound")

// ctxCheckEvery is how many nodes Select visits between two looks at its context: a look costs
// little next to the matching, and a huge page is still stopped within a few microseconds.
const ctxCheckEvery = 256

// Select returns the text of every element m matches (nika:fetch mode `selector`), in document
// order; a match inside another match is listed too. Each text is the element's visible text as
// Text renders it (blocks on their own lines, whitespace collapsed, at most one blank line,
// trimmed), "" for an element with none, so the list has one entry per match. The match itself
// is read even when Text would drop it (a `title`, a `script` holding JSON-LD, a `[hidden]`
// element): selecting it asks for it; elements Text drops inside a match are still dropped.
//
// The result is bounded: once the texts' bytes, plus one per match, exceed maxBytes, Select
// stops with ErrTooLarge (a selector such as `*` or `div` on a deeply nested page repeats the
// same text once per enclosing match). It returns ctx.Err() when ctx ends.
func Select(ctx context.Context, text string, m cascadia.Matcher, maxBytes int64) ([]string, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	doc := parseHTML(text)
	c := newConverter(doc, false, nil)
	out := []string{}
	var size int64
	seen := 0
	for n := range doc.Descendants() {
		if seen++; seen%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if n.Type != html.ElementNode || !m.Match(n) {
			continue
		}
		t := c.matchText(n)
		if size += int64(len(t)) + 1; size > maxBytes {
			return nil, ErrTooLarge
		}
		out = append(out, t)
	}
	return out, nil
}

// matchText is the visible text of one matched element (see Select).
func (c *converter) matchText(n *html.Node) string {
	col := &collector{c: c, in: &inlineBuf{}}
	if dropped(n) {
		// Text never enters it, so its block marks were not computed.
		c.markBlocks(n)
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			col.node(ch)
		}
	} else if isElement(n, atom.Tr) {
		// A row alone reads as it does in its table: cells separated by a tab.
		if cells := c.rowCells(n); len(cells) > 0 {
			col.add(block{kind: bTable, rows: [][]string{cells}})
		}
	} else {
		col.node(n)
	}
	col.flush()
	return textOf(col.out)
}
