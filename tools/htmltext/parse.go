package htmltext

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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
