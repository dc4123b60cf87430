package htmltext

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nikahq/nika/internal/fuzzbudget"
)

// htmlFuzzSeeds is FuzzHTMLToMarkdown's seed corpus: one short document per shape the
// converters handle, rather than the golden pages under tools/testdata/fetch (tools' TestFetch*
// read those). A fuzz run minimizes every mutant that finds new coverage, at up to n²/2 executions for n
// bytes, each running all four readers: a mutant of the 2 KB page.html kept both workers
// minimizing for most of a 60 s run. TestFuzzSeedBudget bounds the seeds.
var htmlFuzzSeeds = []string{
	// Head: <base>, title whitespace, description, og: and twitter: properties in any case,
	// rel=Canonical, <html lang>.
	`<html lang=en><head><base href="https://b.example/r/"><title> T  t </title><meta name=description content=" D ">` +
		`<meta property=OG:Title content=O><meta name=twitter:card content=s><link rel=Canonical href=/c></head>`,
	// Inline: emphasis, code spans with backticks, relative, mailto, javascript and empty links,
	// an image with brackets in its alt text, <br>.
	"<h1>A <em>b</em></h1><p><strong>s</strong> <code>a`b</code> <a href=x.html#f>[r]</a> <a href=mailto:m@e.x>m</a> " +
		"<a href=javascript:x>j</a> <a href=/e></a><img src=/i.png alt=\"[i]\"><br>t</p>",
	// Blocks: nested and numbered lists, a paragraph item, <pre> with a language and a fence
	// inside, a quote with a break, a rule.
	"<ul><li>a<ul><li>b</ul><li><p>c</ul><ol start=3><li>d</ol><pre class=language-go>x\n  ``` y</pre>" +
		"<blockquote><p>q<br>r</blockquote><hr>",
	// A table with a caption, a header row and a pipe in a cell.
	"<table><caption>c</caption><thead><tr><th>h<th>i</thead><tr><td>a | b<td>c</table>",
	// Dropped elements and the hidden attribute.
	"<p hidden>h</p><script>s</script><style>x</style><noscript>n</noscript><iframe>f</iframe>" +
		"<svg><text>v</text></svg><template>t</template>ok",
	// Blocks inside a link and inside an inline element; a link inside a link through a table
	// cell (the HTML parser keeps that nesting).
	"<a href=/card><div><h3>T</h3><p>x</p></div></a><span>L <b>b</b><div>N</div>t</span>" +
		"<a href=/o>o<table><td><a href=/i>i</a></table></a>",
	// Bytes that are not UTF-8 (a Latin-1 page).
	"<p>Cr\xe8me \xa9 \x80</p>",
	"", "<", "<pre>```</pre>", "<ul><li><ol><li>x", "<a href=\"\x00\">\xff</a>",
	"<table><tr><td><table><tr><td>n</td></tr></table></td></tr></table>", "<b><p>x</b>y</p>",
	"<a href=/x><a href=/y>z</a></a>", "<svg><a href=/s>t</a></svg><math><mi>m</mi></math>",
}

// FuzzHTMLToMarkdown: whatever the bytes, the converters never panic and produce valid UTF-8;
// Markdown and text are trimmed, and links are absolute http(s) URLs without fragments.
func FuzzHTMLToMarkdown(f *testing.F) {
	for _, s := range htmlFuzzSeeds {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.com/a/b?c#d")
	f.Fuzz(func(t *testing.T, doc string) {
		md := Markdown(doc, base)
		txt := Text(doc)
		for name, s := range map[string]string{"markdown": md, "text": txt} {
			if !utf8.ValidString(s) {
				t.Fatalf("%s output is not valid UTF-8: %q", name, s)
			}
			if s != strings.TrimSpace(s) {
				t.Fatalf("%s output is not trimmed: %q", name, s)
			}
		}
		for _, l := range Links(doc, base) {
			u, err := url.Parse(l.(map[string]any)["url"].(string))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
				t.Fatalf("link %v is not an absolute http(s) URL without fragment", l)
			}
		}
		Metadata(doc, base)
	})
}

// x/net/html refuses documents nesting more than 512 elements; such a page is still read, flat.
func TestHTMLTooDeep(t *testing.T) {
	base, _ := url.Parse("https://e.com/p")
	doc := `<html lang="de"><head><title>Deep</title><meta name="description" content="D"><script>bad()</script></head><body>` +
		strings.Repeat("<div>", 600) + `<h1>Head</h1><p>para <a href="/x">link <b>b</b></a> after</p><style>x{}</style><svg><svg></svg>no</svg>end`
	if got, want := Markdown(doc, base), "Head\n\npara [link b](https://e.com/x) after\nend"; got != want {
		t.Errorf("markdown %q, want %q", got, want)
	}
	if got, want := Text(doc), "Head\n\npara link b after\nend"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	links := Links(doc, base)
	if len(links) != 1 || links[0].(map[string]any)["url"] != "https://e.com/x" || links[0].(map[string]any)["text"] != "link b" {
		t.Errorf("links %v", links)
	}
	if m := Metadata(doc, base); m.Title != "Deep" || m.Description != "D" || m.Lang != "de" {
		t.Errorf("metadata %+v", *m)
	}
}

// TestFuzzSeedBudget keeps FuzzHTMLToMarkdown's seeds small enough that a one-minute fuzz run
// spends its time mutating rather than re-running and minimizing seeds.
func TestFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzHTMLToMarkdown", htmlFuzzSeeds, fuzzbudget.Budget{Count: 24, Largest: 256, Total: 2 << 10})
}
