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
