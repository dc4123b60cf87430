package htmltext

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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
