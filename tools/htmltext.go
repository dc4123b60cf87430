package tools

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML for nika:fetch's floor modes (LANGUAGE.md §7.5, D39): Markdown, visible text, links and
// metadata, over golang.org/x/net/html's HTML5 parse tree.
//
// Both converters first build the same block structure (paragraphs, headings, code, rules,
// lists, quotes, tables), then render it:
//
//   - Dropped with their content: script, style, noscript, iframe, svg (§7.5), plus template,
//     head, title, and any element with the `hidden` attribute (none of them is visible text).
//     CSS is not interpreted.
//   - Inline text has its HTML whitespace collapsed to single spaces; <br> is a line break.
//   - Markdown: `#` headings; `-` and `N.` list items (N from <ol start>), nested lists indented
//     under their item; fenced code for <pre> (the fence is longer than any backtick run inside,
//     the language comes from a `language-x` or `lang-x` class of the pre or its code child);
//     `> ` quotes; `---` rules; GFM pipe tables (the first row is the header); **strong**,
//     *emphasis* and `code` spans; links as [text](absolute-url), resolved against <base> or
//     the final URL, for http, https and mailto only (others keep just their text; a link with
//     no text is dropped); images as ![alt](absolute-url) when they have alt text and an
//     http(s) source. Blocks are separated by one blank line. Text is not escaped, except `[`,
//     `]` and `\` inside link text and image alt text, and `|` inside table cells.
//   - Metadata: property names (`og:…`, `twitter:…`, read from `property`, else `name`) are
//     matched case-insensitively and their suffixes lower-cased; values are trimmed.
//   - Text: each block on its own line(s); list items without markers; table cells separated by
//     a tab; <pre> keeps its line structure and indentation; at most one blank line in a row;
//     lines and the whole trimmed.
//   - A block element inside a link is flattened into the link text; another inline element
//     (span, strong, …) that contains blocks is transparent.
//   - A page nesting more than 512 elements, which x/net/html refuses to parse, is read token by
//     token into a flat document (flatDocument): its text, links and metadata survive, its
//     structure (lists, tables, emphasis) does not.

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

var droppedTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Iframe: true, atom.Svg: true,
	atom.Template: true, atom.Head: true, atom.Title: true,
}

var blockTags = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Body: true,
	atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true, atom.Dialog: true,
	atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true,
	atom.Figure: true, atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hgroup: true, atom.Hr: true,
	atom.Html: true, atom.Legend: true, atom.Li: true, atom.Main: true, atom.Menu: true, atom.Nav: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true,
	atom.Tbody: true, atom.Td: true, atom.Tfoot: true, atom.Th: true, atom.Thead: true, atom.Tr: true,
	atom.Ul: true, atom.Search: true,
}

func isElement(n *html.Node, a atom.Atom) bool {
	return n.Type == html.ElementNode && n.Namespace == "" && n.DataAtom == a
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func dropped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if n.Namespace == "svg" && n.Data == "svg" {
		return true
	}
	if n.Namespace != "" {
		return false
	}
	if droppedTags[n.DataAtom] {
		return true
	}
	_, hidden := attr(n, "hidden")
	return hidden
}

func isBlock(n *html.Node) bool {
	return n.Type == html.ElementNode && n.Namespace == "" && blockTags[n.DataAtom]
}

func isHTMLSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
}

// parseHTML parses a document. x/net/html gives up on a document that nests more than 512
// open elements; such a page is read token by token into a flat document instead (flatDocument),
// so that every mode still gets its text, links and metadata, without the nesting.
func parseHTML(text string) *html.Node {
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return flatDocument(text)
	}
	return doc
}

// flatDocument builds html > (head, body) from the tokens of text: title, meta, link and base
// go to head; text, <br>s in place of block boundaries, and <a> elements holding their text go
// to body; dropped elements are skipped with their content; <html lang> is kept.
func flatDocument(text string) *html.Node {
	el := func(a atom.Atom, attrs []html.Attribute) *html.Node {
		return &html.Node{Type: html.ElementNode, Data: a.String(), DataAtom: a, Attr: attrs}
	}
	doc := &html.Node{Type: html.DocumentNode}
	root, head, body := el(atom.Html, nil), el(atom.Head, nil), el(atom.Body, nil)
	doc.AppendChild(root)
	root.AppendChild(head)
	root.AppendChild(body)
	z := html.NewTokenizer(strings.NewReader(text))
	cur := body              // body, or the open <a>
	var title *html.Node     // the open <title>
	skip, skipDepth := "", 0 // a dropped element being skipped
	langSeen := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return doc
		}
		tok := z.Token()
		if skip != "" {
			switch {
			case tt == html.StartTagToken && tok.Data == skip:
				skipDepth++
			case tt == html.EndTagToken && tok.Data == skip:
				if skipDepth--; skipDepth == 0 {
					skip = ""
				}
			}
			continue
		}
		switch tt {
		case html.TextToken:
			if title != nil {
				title.AppendChild(&html.Node{Type: html.TextNode, Data: tok.Data})
			} else {
				cur.AppendChild(&html.Node{Type: html.TextNode, Data: tok.Data})
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			a := tok.DataAtom
			switch {
			case a == atom.Html:
				if !langSeen {
					langSeen = true
					root.Attr = tok.Attr
				}
			case a == atom.Title && tt == html.StartTagToken:
				title = el(atom.Title, nil)
				head.AppendChild(title)
			case a == atom.Meta || a == atom.Link || a == atom.Base:
				head.AppendChild(el(a, tok.Attr))
			case a == atom.A:
				link := el(atom.A, tok.Attr)
				body.AppendChild(link)
				cur = link
				if tt == html.SelfClosingTagToken {
					cur = body
				}
			case droppedTags[a] && a != atom.Head && a != atom.Title || tok.Data == "svg":
				if tt == html.StartTagToken {
					skip, skipDepth = tok.Data, 1
				}
			case a == atom.Br || blockTags[a]:
				cur.AppendChild(el(atom.Br, nil))
			}
		case html.EndTagToken:
			switch a := tok.DataAtom; {
			case a == atom.Title:
				title = nil
			case a == atom.A:
				cur = body
			case blockTags[a]:
				cur.AppendChild(el(atom.Br, nil))
			}
		}
	}
}

// documentBase is the URL relative references resolve against: the href of the first <base>
// that has one (HTML: a <base target> alone does not count), itself resolved against the final
// URL, else the final URL.
func documentBase(doc *html.Node, final *url.URL) *url.URL {
	for n := range doc.Descendants() {
		if isElement(n, atom.Base) {
			h, ok := attr(n, "href")
			if !ok {
				continue
			}
			if u := resolveRef(final, h); u != nil {
				return u
			}
			break
		}
	}
	return final
}

// resolveRef resolves an href against base, or returns nil.
func resolveRef(base *url.URL, href string) *url.URL {
	href = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, strings.TrimSpace(href))
	ref, err := url.Parse(href)
	if err != nil {
		return nil
	}
	if base == nil {
		if !ref.IsAbs() {
			return nil
		}
		return ref
	}
	return base.ResolveReference(ref)
}

func isHTTP(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return (s == "http" || s == "https") && u.Host != ""
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
				var cells []string
				for cell := ch.FirstChild; cell != nil; cell = cell.NextSibling {
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
				if len(cells) > 0 {
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

// ---- inline content ----

// inlineBuf accumulates inline text with HTML whitespace collapsed: a run of spaces is written
// only when content follows it on the same line.
type inlineBuf struct {
	b       strings.Builder
	lead    bool // whitespace before any content
	pending bool // whitespace after the last content
	started bool
	lastNL  bool
}

func (w *inlineBuf) String() string { return w.b.String() }

func (w *inlineBuf) space() {
	if w.started {
		w.pending = true
	} else {
		w.lead = true
	}
}

func (w *inlineBuf) flushSpace() {
	if w.pending && w.started && !w.lastNL {
		w.b.WriteByte(' ')
	}
	w.pending = false
}

func (w *inlineBuf) text(s string, escapeBrackets bool) {
	for _, r := range s {
		if isHTMLSpace(r) {
			w.space()
			continue
		}
		w.flushSpace()
		if escapeBrackets && (r == '[' || r == ']' || r == '\\') {
			w.b.WriteByte('\\')
		}
		w.b.WriteRune(r)
		w.started, w.lastNL = true, false
	}
}

func (w *inlineBuf) raw(s string) {
	if s == "" {
		return
	}
	w.flushSpace()
	w.b.WriteString(s)
	w.started, w.lastNL = true, strings.HasSuffix(s, "\n")
}

func (w *inlineBuf) newline() {
	w.pending = false
	w.b.WriteByte('\n')
	w.started, w.lastNL = true, true
}

// wrap appends sub's content between open and close, keeping its surrounding whitespace and
// line breaks outside the markers. Empty content adds only its whitespace.
func (w *inlineBuf) wrap(sub *inlineBuf, open, close string) {
	if sub.lead {
		w.space()
	}
	s := sub.String()
	core := strings.Trim(s, "\n")
	if core == "" {
		if s != "" {
			w.raw(s)
		}
	} else {
		i := strings.Index(s, core)
		if i > 0 {
			w.raw(s[:i])
		}
		w.raw(open + core + close)
		if rest := s[i+len(core):]; rest != "" {
			w.raw(rest)
		}
	}
	if sub.pending {
		w.space()
	}
}

func (c *converter) inlineChildren(w *inlineBuf, n *html.Node, inLink bool) {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.inline(w, ch, inLink)
	}
}

// inline renders n as inline content into w.
func (c *converter) inline(w *inlineBuf, n *html.Node, inLink bool) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data, c.md && inLink)
		return
	case html.ElementNode:
	default:
		return
	}
	if dropped(n) {
		return
	}
	if n.Namespace != "" {
		c.inlineChildren(w, n, inLink)
		return
	}
	if !c.md {
		switch {
		case n.DataAtom == atom.Br:
			w.newline()
		case isBlock(n):
			w.space()
			c.inlineChildren(w, n, inLink)
			w.space()
		default:
			c.inlineChildren(w, n, inLink)
		}
		return
	}
	switch n.DataAtom {
	case atom.Br:
		w.newline()
	case atom.A:
		c.link(w, n, inLink)
	case atom.Img:
		c.image(w, n)
	case atom.Strong, atom.B:
		sub := &inlineBuf{}
		c.inlineChildren(sub, n, inLink)
		w.wrap(sub, "**", "**")
	case atom.Em, atom.I:
		sub := &inlineBuf{}
		c.inlineChildren(sub, n, inLink)
		w.wrap(sub, "*", "*")
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		sub := &inlineBuf{}
		sub.text(textContent(n), false)
		s := sub.String()
		if s == "" {
			if sub.lead {
				w.space()
			}
			return
		}
		fence := strings.Repeat("`", longestRun(s, '`')+1)
		pad := ""
		if strings.Contains(s, "`") {
			pad = " "
		}
		if sub.lead {
			w.space()
		}
		w.raw(fence + pad + s + pad + fence)
		if sub.pending {
			w.space()
		}
	default:
		if isBlock(n) {
			w.space()
			c.inlineChildren(w, n, inLink)
			w.space()
			return
		}
		c.inlineChildren(w, n, inLink)
	}
}

// link renders <a>: [text](absolute-url) for http, https and mailto targets.
func (c *converter) link(w *inlineBuf, n *html.Node, inLink bool) {
	sub := &inlineBuf{}
	c.inlineChildren(sub, n, true)
	href, ok := attr(n, "href")
	var u *url.URL
	if ok && !inLink {
		u = resolveRef(c.base, href)
	}
	if u != nil {
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			if u.Host == "" {
				u = nil
			}
		case "mailto":
		default:
			u = nil
		}
	}
	if u == nil {
		// Not a usable link: its text only, without the bracket escapes.
		plain := &inlineBuf{}
		c.inlineChildren(plain, n, inLink)
		w.wrap(plain, "", "")
		return
	}
	text := oneLineText(sub.String())
	if text == "" {
		if sub.lead || sub.pending {
			w.space()
		}
		return
	}
	if sub.lead {
		w.space()
	}
	w.raw("[" + text + "](" + markdownURL(u) + ")")
	if sub.pending {
		w.space()
	}
}

func (c *converter) image(w *inlineBuf, n *html.Node) {
	alt, _ := attr(n, "alt")
	src, _ := attr(n, "src")
	alt = oneLineText(collapseSpace(alt))
	if alt == "" || src == "" {
		return
	}
	u := resolveRef(c.base, src)
	if u == nil || !isHTTP(u) {
		return
	}
	alt = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`).Replace(alt)
	w.raw("![" + alt + "](" + markdownURL(u) + ")")
}

// markdownURL writes a URL so that it cannot end the (…) of a Markdown link early.
func markdownURL(u *url.URL) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(u.String())
}

func longestRun(s string, b byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// textContent is all the text under n, dropped elements excluded.
func textContent(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			switch {
			case ch.Type == html.TextNode:
				b.WriteString(ch.Data)
			case dropped(ch):
			case ch.Type == html.ElementNode:
				walk(ch)
			}
		}
	}
	walk(n)
	return b.String()
}

// collapseSpace collapses HTML whitespace runs to one space and trims.
func collapseSpace(s string) string {
	w := &inlineBuf{}
	w.text(s, false)
	return w.String()
}

// oneLineText joins the lines of inline content with spaces.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// paraText trims each line of a paragraph, drops leading and trailing empty lines and keeps
// at most one empty line in a row.
func paraText(s string) string {
	var out []string
	blank := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.Trim(l, " ")
		if l == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// ---- rendering ----

// htmlToMarkdown converts an HTML document to trimmed Markdown.
func htmlToMarkdown(text string, final *url.URL) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	doc := parseHTML(text)
	c := newConverter(doc, true, final)
	return strings.TrimSpace(strings.Join(renderMarkdown(c.blocksOf(doc), false), "\n"))
}

// renderMarkdown renders blocks as lines, blocks separated by a blank line; in a tight list
// item a nested list follows its paragraph directly.
func renderMarkdown(blocks []block, tight bool) []string {
	var lines []string
	for i, b := range blocks {
		if i > 0 && !(tight && b.kind == bList && blocks[i-1].kind == bPara) {
			lines = append(lines, "")
		}
		switch b.kind {
		case bPara:
			lines = append(lines, strings.Split(b.text, "\n")...)
		case bHeading:
			lines = append(lines, strings.Repeat("#", b.level)+" "+b.text)
		case bCode:
			fence := strings.Repeat("`", max(3, longestRun(b.text, '`')+1))
			lines = append(lines, fence+b.lang)
			for _, l := range strings.Split(b.text, "\n") {
				lines = append(lines, strings.TrimRight(l, " \t"))
			}
			lines = append(lines, fence)
		case bRule:
			lines = append(lines, "---")
		case bList:
			for j, item := range b.items {
				marker := "- "
				if b.ordered {
					marker = strconv.Itoa(b.start+j) + ". "
				}
				indent := strings.Repeat(" ", len(marker))
				for k, l := range renderMarkdown(item, true) {
					switch {
					case k == 0:
						lines = append(lines, marker+l)
					case l == "":
						lines = append(lines, "")
					default:
						lines = append(lines, indent+l)
					}
				}
			}
		case bQuote:
			for _, l := range renderMarkdown(b.children, false) {
				if l == "" {
					lines = append(lines, ">")
				} else {
					lines = append(lines, "> "+l)
				}
			}
		case bTable:
			cols := 0
			for _, r := range b.rows {
				cols = max(cols, len(r))
			}
			for j, r := range b.rows {
				cells := make([]string, cols)
				copy(cells, r)
				lines = append(lines, "| "+strings.Join(cells, " | ")+" |")
				if j == 0 {
					lines = append(lines, "|"+strings.Repeat(" --- |", cols))
				}
			}
		}
	}
	return lines
}

// htmlToText returns the visible text of an HTML document.
func htmlToText(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	doc := parseHTML(text)
	c := newConverter(doc, false, nil)
	var lines []string
	renderText(c.blocksOf(doc), &lines)
	var out []string
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func renderText(blocks []block, lines *[]string) {
	for _, b := range blocks {
		switch b.kind {
		case bPara, bHeading, bCode:
			*lines = append(*lines, strings.Split(b.text, "\n")...)
		case bList:
			for _, item := range b.items {
				renderText(item, lines)
			}
		case bQuote:
			renderText(b.children, lines)
		case bTable:
			for _, r := range b.rows {
				*lines = append(*lines, strings.Join(r, "\t"))
			}
		}
	}
}

// ---- links and metadata ----

// htmlLinks is mode links: [{url, text}] for each <a href> in document order, http(s) only,
// fragments stripped, a repeated URL keeping its first occurrence.
func htmlLinks(text string, final *url.URL) []any {
	out := []any{}
	doc := parseHTML(text)
	base := documentBase(doc, final)
	seen := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			if isElement(ch, atom.Template) {
				continue
			}
			if isElement(ch, atom.A) {
				if href, ok := attr(ch, "href"); ok {
					if u := resolveRef(base, href); u != nil && isHTTP(u) {
						u.Fragment, u.RawFragment = "", ""
						s := u.String()
						if !seen[s] {
							seen[s] = true
							out = append(out, map[string]any{"url": s, "text": allText(ch)})
						}
					}
				}
			}
			walk(ch)
		}
	}
	walk(doc)
	return out
}

// allText is the anchor text of links mode: every text node under n, whitespace collapsed.
func allText(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
			b.WriteByte(' ')
		}
	}
	return strings.Join(strings.FieldsFunc(b.String(), isHTMLSpace), " ")
}

// pageMeta is what mode metadata reads from a page.
type pageMeta struct {
	title, description, canonical, lang string
	og, twitter                         map[string]any
}

// htmlMetadata reads a page's metadata (§7.5).
func htmlMetadata(text string, final *url.URL) *pageMeta {
	m := &pageMeta{og: map[string]any{}, twitter: map[string]any{}}
	doc := parseHTML(text)
	base := documentBase(doc, final)
	var description string
	titleSeen, descSeen, canonSeen := false, false, false
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Namespace != "" {
			continue
		}
		switch n.DataAtom {
		case atom.Html:
			if m.lang == "" {
				l, _ := attr(n, "lang")
				m.lang = strings.TrimSpace(l)
			}
		case atom.Title:
			if !titleSeen {
				titleSeen = true
				m.title = strings.Join(strings.FieldsFunc(textContent(n), isHTMLSpace), " ")
			}
		case atom.Meta:
			content, hasContent := attr(n, "content")
			if !hasContent {
				continue
			}
			if name, _ := attr(n, "name"); strings.EqualFold(strings.TrimSpace(name), "description") && !descSeen {
				descSeen = true
				description = strings.TrimSpace(content)
			}
			key, ok := attr(n, "property")
			if !ok {
				key, _ = attr(n, "name")
			}
			key = strings.TrimSpace(key)
			for _, t := range []struct {
				prefix string
				into   map[string]any
			}{{"og:", m.og}, {"twitter:", m.twitter}} {
				if len(key) > len(t.prefix) && strings.EqualFold(key[:len(t.prefix)], t.prefix) {
					suffix := strings.ToLower(key[len(t.prefix):])
					if _, dup := t.into[suffix]; !dup {
						t.into[suffix] = strings.TrimSpace(content)
					}
				}
			}
		case atom.Link:
			if canonSeen {
				continue
			}
			rel, _ := attr(n, "rel")
			for _, r := range strings.FieldsFunc(rel, isHTMLSpace) {
				if strings.EqualFold(r, "canonical") {
					if href, ok := attr(n, "href"); ok {
						canonSeen = true
						if u := resolveRef(base, href); u != nil && u.IsAbs() {
							m.canonical = u.String()
						}
					}
					break
				}
			}
		}
	}
	m.description = description
	if m.title == "" {
		if s, ok := m.og["title"].(string); ok {
			m.title = strings.TrimSpace(s)
		}
	}
	if m.description == "" {
		if s, ok := m.og["description"].(string); ok {
			m.description = strings.TrimSpace(s)
		}
	}
	return m
}
