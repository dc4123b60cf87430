package tools

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzHTMLToMarkdown: whatever the bytes, the converters never panic and produce valid UTF-8;
// Markdown and text are trimmed, and links are absolute http(s) URLs without fragments.
func FuzzHTMLToMarkdown(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fetch", "*.html"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{"", "<", "<pre>```</pre>", "<ul><li><ol><li>x", "<a href=\"\x00\">\xff</a>",
		"<table><tr><td><table><tr><td>n</td></tr></table></td></tr></table>", "<b><p>x</b>y</p>",
		"<a href=/x><a href=/y>z</a></a>", "<svg><a href=/s>t</a></svg><math><mi>m</mi></math>"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.com/a/b?c#d")
	f.Fuzz(func(t *testing.T, doc string) {
		md := htmlToMarkdown(doc, base)
		txt := htmlToText(doc)
		for name, s := range map[string]string{"markdown": md, "text": txt} {
			if !utf8.ValidString(s) {
				t.Fatalf("%s output is not valid UTF-8: %q", name, s)
			}
			if s != strings.TrimSpace(s) {
				t.Fatalf("%s output is not trimmed: %q", name, s)
			}
		}
		for _, l := range htmlLinks(doc, base) {
			u, err := url.Parse(l.(map[string]any)["url"].(string))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
				t.Fatalf("link %v is not an absolute http(s) URL without fragment", l)
			}
		}
		htmlMetadata(doc, base)
	})
}

// x/net/html refuses documents nesting more than 512 elements; such a page is still read, flat.
func TestHTMLTooDeep(t *testing.T) {
	base, _ := url.Parse("https://e.com/p")
	doc := `<html lang="de"><head><title>Deep</title><meta name="description" content="D"><script>bad()</script></head><body>` +
		strings.Repeat("<div>", 600) + `<h1>Head</h1><p>para <a href="/x">link <b>b</b></a> after</p><style>x{}</style><svg><svg></svg>no</svg>end`
	if got, want := htmlToMarkdown(doc, base), "Head\n\npara [link b](https://e.com/x) after\nend"; got != want {
		t.Errorf("markdown %q, want %q", got, want)
	}
	if got, want := htmlToText(doc), "Head\n\npara link b after\nend"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	links := htmlLinks(doc, base)
	if len(links) != 1 || links[0].(map[string]any)["url"] != "https://e.com/x" || links[0].(map[string]any)["text"] != "link b" {
		t.Errorf("links %v", links)
	}
	if m := htmlMetadata(doc, base); m.title != "Deep" || m.description != "D" || m.lang != "de" {
		t.Errorf("metadata %+v", *m)
	}
}
