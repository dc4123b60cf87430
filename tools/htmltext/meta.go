package htmltext

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ---- links and metadata ----

// Links is mode links: [{url, text}] for each <a href> in document order, http(s) only,
// fragments stripped, a repeated URL keeping its first occurrence.
func Links(text string, final *url.URL) []any {
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

// Meta is what mode metadata reads from a page; "" is absent.
type Meta struct {
	Title, Description, Canonical, Lang string
	// OG and Twitter map the lower-cased suffixes of the og: and twitter: properties to their
	// first value.
	OG, Twitter map[string]any
}

// Metadata reads a page's metadata (§7.5); final is the page's URL, against which (or its
// <base>) the canonical link resolves.
func Metadata(text string, final *url.URL) *Meta {
	m := &Meta{OG: map[string]any{}, Twitter: map[string]any{}}
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
			if m.Lang == "" {
				l, _ := attr(n, "lang")
				m.Lang = strings.TrimSpace(l)
			}
		case atom.Title:
			if !titleSeen {
				titleSeen = true
				m.Title = strings.Join(strings.FieldsFunc(textContent(n), isHTMLSpace), " ")
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
			}{{"og:", m.OG}, {"twitter:", m.Twitter}} {
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
							m.Canonical = u.String()
						}
					}
					break
				}
			}
		}
	}
	m.Description = description
	if m.Title == "" {
		if s, ok := m.OG["title"].(string); ok {
			m.Title = strings.TrimSpace(s)
		}
	}
	if m.Description == "" {
		if s, ok := m.OG["description"].(string); ok {
			m.Description = strings.TrimSpace(s)
		}
	}
	return m
}
