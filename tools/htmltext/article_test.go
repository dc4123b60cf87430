package htmltext

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"

	"github.com/nikahq/nika/internal/fuzzbudget"
)

// longPara is enough prose for Readability to take a block as content (it wants a few hundred
// characters before it trusts a candidate).
const longPara = "<p>Exponential backoff spaces the attempts out, and jitter keeps a thousand clients from retrying " +
	"in the same millisecond, so that an overloaded service gets the time it needs to recover before " +
	"the next wave arrives. A step that is not idempotent needs an idempotency key as well.</p>"

func TestArticle(t *testing.T) {
	base, _ := url.Parse("https://example.com/blog/post.html")
	chrome := `<nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></nav>` +
		`<aside class="sidebar"><h3>Popular</h3><ul><li><a href="/a">A</a></li><li><a href="/b">B</a></li></ul></aside>`
	cases := []struct {
		name, html string
		want       []string // in this order
		not        []string
	}{
		{"content kept, chrome dropped",
			"<title>Retries that do not hurt | The Blog</title>" + chrome + "<article><h1>Retries that do not hurt</h1>" + longPara + longPara + "</article>" +
				`<footer class="site-footer">© 2026 <a href="/privacy">Privacy</a></footer>`,
			[]string{"# Retries that do not hurt\n\nExponential backoff", "idempotency key as well."},
			[]string{"Home", "Popular", "Privacy", "Blog"}},
		{"title from <title> when the content has no heading",
			"<title>Backoff notes</title>" + chrome + "<main>" + longPara + longPara + "</main>",
			[]string{"# Backoff notes\n\nExponential"}, nil},
		{"links absolute against <base>, javascript links as text, code language kept",
			`<head><base href="https://cdn.example.org/docs/"></head><article><h1>T</h1>` + longPara +
				`<p>See <a href="retries.html">the guide</a> or <a href="javascript:go()">this</a>, it is long enough to count as text in the article.</p>` +
				`<pre><code class="language-yaml">retry: { max_attempts: 4 }</code></pre>` + longPara + `</article>`,
			[]string{"[the guide](https://cdn.example.org/docs/retries.html)", "or this,", "```yaml\nretry: { max_attempts: 4 }\n```"},
			[]string{"javascript:"}},
		{"scripts and styles never reach the content",
			"<article><h1>T</h1>" + longPara + "<script>alert('x')</script><style>p{}</style>" + longPara + "</article>",
			[]string{"Exponential"}, []string{"alert", "p{}"}},
		{"empty page", "", nil, nil},
		{"no readable text", "<html><body><div></div><img src=x.png></body></html>", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Article(c.html, base)
			if len(c.want) == 0 && got != "" {
				t.Fatalf("got %q, want \"\"", got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q missing (or out of order) in:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("%q should be gone from:\n%s", n, got)
				}
			}
			if got != strings.TrimSpace(got) {
				t.Errorf("not trimmed: %q", got)
			}
		})
	}
}

// A page nesting more than 512 elements, which x/net/html refuses, is read flat, and still has
// an article.
func TestArticleTooDeep(t *testing.T) {
	base, _ := url.Parse("https://e.com/p")
	doc := "<title>Deep</title>" + strings.Repeat("<div>", 600) + longPara + longPara
	if got := Article(doc, base); !strings.HasPrefix(got, "# Deep\n\nExponential backoff") {
		t.Errorf("got %q", got)
	}
}

func TestSelect(t *testing.T) {
	page := `<html><head><title> The  Page </title><script type="application/ld+json">{"a":1}</script></head><body>
<h1>Top</h1><h2>One</h2><p>x</p><h2>Two <em>half</em></h2><p hidden>secret</p>
<ul><li>a</li><li>b<ul><li>c</li></ul></li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>
<pre>  keep
    indent</pre><div class="card"><p>p1</p><script>bad()</script><p>p2</p></div><span></span></body></html>`
	cases := []struct {
		sel  string
		want []string
	}{
		{"h2", []string{"One", "Two half"}},
		{"h1, h2", []string{"Top", "One", "Two half"}}, // document order, not selector order
		{"title", []string{"The Page"}},                // dropped by mode text, but asked for
		{`script[type="application/ld+json"]`, []string{`{"a":1}`}},
		{"p[hidden]", []string{"secret"}},
		{"li", []string{"a", "b\nc", "c"}}, // a match inside a match is listed too
		{"tr", []string{"k\tv", "1\t2"}},
		{"td:nth-child(2)", []string{"2"}},
		{"pre", []string{"keep\n    indent"}},
		{".card", []string{"p1\np2"}}, // the script inside the match is still dropped
		{"span", []string{""}},        // one entry per match, even an empty one
		{"article", []string{}},       // no match
		{"h2:contains(\"Two\")", []string{"Two half"}},
	}
	for _, c := range cases {
		t.Run(c.sel, func(t *testing.T) {
			m, err := cascadia.ParseGroup(c.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Select(context.Background(), page, m, 1<<20)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestSelectBounds(t *testing.T) {
	nested := strings.Repeat("<div>", 400) + strings.Repeat("word ", 200) // each div repeats all the text
	all := cascadia.MustCompile("div")
	if _, err := Select(context.Background(), nested, all, 100_000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("nested divs: %v, want ErrTooLarge", err)
	}
	if got, err := Select(context.Background(), nested, cascadia.MustCompile("div:empty"), 100_000); err != nil || len(got) != 0 {
		t.Errorf("no match: %q, %v", got, err)
	}
	// Empty matches count one byte each, so a page of empty elements is bounded too.
	empties := strings.Repeat("<br>", 2000)
	if _, err := Select(context.Background(), empties, cascadia.MustCompile("br"), 1000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("empty matches: %v, want ErrTooLarge", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Select(ctx, strings.Repeat("<p>x</p>", 1000), cascadia.MustCompile("p"), 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// articleFuzzSeeds is FuzzArticleSelect's seed corpus: an article with chrome around it, the
// shapes Readability rewrites (br runs, divs used as paragraphs, lazy images, javascript links,
// data tables), and malformed or non-UTF-8 input. TestArticleFuzzSeedBudget bounds it.
var articleFuzzSeeds = []string{
	"<title>T | S</title><nav><a href=/>H</a></nav><article><h1>T</h1><p>" + strings.Repeat("word ", 25) + "</p></article><footer>f</footer>",
	"<div>a<br><br>b<br><br>c</div><div><div>" + strings.Repeat("text, ", 20) + "</div></div>",
	"<img data-src=/i.png><noscript><img src=/j.png></noscript><a href=javascript:x><b>j</b></a><figure><img src=k></figure>",
	"<table><tr><th>a<td>b</table><pre>x<br>y</pre><h2>T</h2><h2>T</h2>",
	"<p>Cr\xe8me \x80</p>", "", "<", "<html><body>", "<a href=\"\x00\">\xff</a>", "<base href=//x><a href=y>z</a>",
	`<script type="application/ld+json">{"@type":"Article","headline":"H"}</script><p>x</p>`,
}

// articleFuzzSelectors are the selectors FuzzArticleSelect runs over each input, one per input
// by its length, so the fuzzer mutates the page and not the selector.
var articleFuzzSelectors = func() []cascadia.Matcher {
	var ms []cascadia.Matcher
	for _, s := range []string{"p", "*", "div > p, h2", "a[href]", ":not(div)", "li:nth-child(2n+1)", "td:empty", ":root"} {
		ms = append(ms, cascadia.MustCompile(s))
	}
	return ms
}()

// FuzzArticleSelect: whatever the bytes, Article and Select never panic and give valid UTF-8;
// the article is trimmed, and Select's texts are trimmed and within the bound.
func FuzzArticleSelect(f *testing.F) {
	for _, s := range articleFuzzSeeds {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, doc string) {
		a := Article(doc, base)
		if !utf8.ValidString(a) || a != strings.TrimSpace(a) {
			t.Fatalf("article %q is not valid trimmed UTF-8", a)
		}
		m := articleFuzzSelectors[len(doc)%len(articleFuzzSelectors)]
		texts, err := Select(context.Background(), doc, m, 1<<16)
		if err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatal(err)
		}
		for _, s := range texts {
			if !utf8.ValidString(s) || s != strings.TrimSpace(s) {
				t.Fatalf("match text %q is not valid trimmed UTF-8", s)
			}
		}
	})
}

// TestArticleFuzzSeedBudget keeps FuzzArticleSelect's seeds small enough that a one-minute fuzz
// run spends its time mutating rather than re-running and minimizing seeds.
func TestArticleFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzArticleSelect", articleFuzzSeeds, fuzzbudget.Budget{Count: 16, Largest: 256, Total: 1 << 10})
}
