package htmltext

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// blockKind is the kind of one rendered block.
type blockKind int

const (
	bPara blockKind = iota
	bHeading
	bCode
	bRule
	bList
	bQuote
	bTable
)

type block struct {
	kind     blockKind
	level    int    // heading level
	text     string // para and heading: inline content; code: the raw text
	lang     string // code
	ordered  bool   // list
	start    int    // ordered list
	items    [][]block
	children []block // quote
	rows     [][]string
}

// ---- the converter ----

type converter struct {
	md        bool
	base      *url.URL
	hasBlocks map[*html.Node]bool // inline elements that contain a block element
}

func newConverter(doc *html.Node, md bool, final *url.URL) *converter {
	c := &converter{md: md, base: documentBase(doc, final), hasBlocks: map[*html.Node]bool{}}
	c.markBlocks(doc)
	return c
}

// markBlocks records, bottom-up in one pass, which elements contain a block element.
func (c *converter) markBlocks(n *html.Node) bool {
	found := false
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if dropped(ch) {
			continue
		}
		if c.markBlocks(ch) || isBlock(ch) {
			found = true
		}
	}
	if found {
		c.hasBlocks[n] = true
	}
	return found
}

// collector gathers the blocks of one container, with the inline run in progress.
type collector struct {
	c   *converter
	out []block
	in  *inlineBuf
}

func (c *converter) blocksOf(n *html.Node) []block {
	col := &collector{c: c, in: &inlineBuf{}}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		col.node(ch)
	}
	col.flush()
	return col.out
}

func (col *collector) flush() {
	if t := paraText(col.in.String()); t != "" {
		col.out = append(col.out, block{kind: bPara, text: t})
	}
	col.in = &inlineBuf{}
}

func (col *collector) add(b block) {
	col.flush()
	col.out = append(col.out, b)
}

func (col *collector) node(n *html.Node) {
	c := col.c
	switch n.Type {
	case html.TextNode:
		col.in.text(n.Data, false)
		return
	case html.ElementNode:
	default:
		return
	}
	if dropped(n) {
		return
	}
	if n.Namespace != "" || !isBlock(n) {
		if n.Namespace == "" && n.DataAtom == atom.Br {
			col.in.newline()
			return
		}
		if c.hasBlocks[n] && !(n.Namespace == "" && n.DataAtom == atom.A) {
			for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
				col.node(ch)
			}
			return
		}
		c.inline(col.in, n, false)
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w := &inlineBuf{}
		c.inlineChildren(w, n, false)
		if t := oneLineText(w.String()); t != "" {
			col.add(block{kind: bHeading, level: int(n.Data[1] - '0'), text: t})
		} else {
			col.flush()
		}
	case atom.Ul, atom.Ol, atom.Menu:
		if b, ok := c.list(n); ok {
			col.add(b)
		} else {
			col.flush()
		}
	case atom.Pre:
		code := strings.TrimSuffix(preText(n), "\n")
		if strings.TrimSpace(code) != "" {
			col.add(block{kind: bCode, text: code, lang: codeLang(n)})
		} else {
			col.flush()
		}
	case atom.Blockquote:
		if ch := c.blocksOf(n); len(ch) > 0 {
			col.add(block{kind: bQuote, children: ch})
		} else {
			col.flush()
		}
	case atom.Hr:
		col.add(block{kind: bRule})
	case atom.Table:
		col.flush()
		if cap := firstChildElement(n, atom.Caption); cap != nil {
			col.out = append(col.out, c.blocksOf(cap)...)
		}
		if rows := c.tableRows(n); len(rows) > 0 {
			col.add(block{kind: bTable, rows: rows})
		}
	default: // a generic block container
		col.flush()
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			col.node(ch)
		}
		col.flush()
	}
}

func firstChildElement(n *html.Node, a atom.Atom) *html.Node {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if isElement(ch, a) {
			return ch
		}
	}
	return nil
}

// list builds a list block; ok is false when no item has content.
func (c *converter) list(n *html.Node) (block, bool) {
	b := block{kind: bList, ordered: n.DataAtom == atom.Ol, start: 1}
	if b.ordered {
		if s, ok := attr(n, "start"); ok {
			if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v >= 0 && v < 1e9 {
				b.start = v
			}
		}
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		var item []block
		switch {
		case isElement(ch, atom.Li):
			item = c.blocksOf(ch)
		case ch.Type == html.ElementNode || ch.Type == html.TextNode:
			// Content directly inside the list (invalid, but found in the wild) is an item.
			col := &collector{c: c, in: &inlineBuf{}}
			col.node(ch)
			col.flush()
			item = col.out
		}
		if len(item) > 0 {
			b.items = append(b.items, item)
		}
	}
	return b, len(b.items) > 0
}

// tableRows returns the cells of the table's rows, not descending into nested tables.
func (c *converter) tableRows(t *html.Node) [][]string {
	var rows [][]string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			switch {
			case dropped(ch):
			case isElement(ch, atom.Tr):
				if cells := c.rowCells(ch); len(cells) > 0 {
					rows = append(rows, cells)
				}
			case isElement(ch, atom.Thead), isElement(ch, atom.Tbody), isElement(ch, atom.Tfoot):
				walk(ch)
			}
		}
	}
	walk(t)
	return rows
}

// rowCells returns the text of the cells of a table row.
func (c *converter) rowCells(tr *html.Node) []string {
	var cells []string
	for cell := tr.FirstChild; cell != nil; cell = cell.NextSibling {
		if (isElement(cell, atom.Td) || isElement(cell, atom.Th)) && !dropped(cell) {
			w := &inlineBuf{}
			c.inlineChildren(w, cell, false)
			t := oneLineText(w.String())
			if c.md {
				t = strings.ReplaceAll(t, "|", `\|`)
			}
			cells = append(cells, t)
		}
	}
	return cells
}

// preText is the text of a <pre>, whitespace kept, <br> as a newline.
func preText(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			switch {
			case ch.Type == html.TextNode:
				b.WriteString(ch.Data)
			case dropped(ch):
			case isElement(ch, atom.Br):
				b.WriteByte('\n')
			case ch.Type == html.ElementNode:
				walk(ch)
			}
		}
	}
	walk(n)
	return strings.ReplaceAll(b.String(), "\r\n", "\n")
}

// codeLang is the language of a <pre>: a `language-x` or `lang-x` class on it or on its first
// <code> child.
func codeLang(pre *html.Node) string {
	nodes := []*html.Node{pre}
	if code := firstChildElement(pre, atom.Code); code != nil {
		nodes = append(nodes, code)
	}
	for _, n := range nodes {
		cls, _ := attr(n, "class")
		for _, f := range strings.Fields(cls) {
			for _, p := range []string{"language-", "lang-"} {
				if l, ok := strings.CutPrefix(f, p); ok && l != "" && !strings.ContainsAny(l, "`~") {
					return l
				}
			}
		}
	}
	return ""
}
