package htmltext

import (
	"net/url"
	"testing"
)

// The converters against small exact cases (tools/testdata/fetch's golden pages, read through
// nika:fetch, cover whole pages).
func TestHTMLConverters(t *testing.T) {
	base, _ := url.Parse("https://example.com/dir/page")
	cases := []struct {
		name, html, md, text string
	}{
		{"dropped elements", `<p>a</p><script>s</script><style>x</style><noscript>n</noscript><iframe>i</iframe><svg><text>v</text></svg><template>t</template><p>b</p>`, "a\n\nb", "a\nb"},
		{"whitespace collapse", "<p>  a \n\t b  </p>", "a b", "a b"},
		{"headings", "<h1>One</h1><h3> Three <br> lines </h3>", "# One\n\n### Three lines", "One\nThree lines"},
		{"relative link", `<a href="../x?y=1#z">X</a>`, "[X](https://example.com/x?y=1#z)", "X"},
		{"link parens escaped", `<a href="/a (b)">t</a>`, "[t](https://example.com/a%20%28b%29)", "t"},
		{"link brackets escaped", `<a href="/">[1]</a>`, `[\[1\]](https://example.com/)`, "[1]"},
		{"link text backslash escaped", `<a href="/">C:\</a>`, `[C:\\](https://example.com/)`, `C:\`},
		{"image alt backslash escaped", `<img src="/i.png" alt="a\">`, `![a\\](https://example.com/i.png)`, ""},
		{"first base with an href", `<base target="_blank"><base href="https://b.example/x/"><a href="y">Y</a>`, "[Y](https://b.example/x/y)", "Y"},
		{"empty link dropped", `x <a href="/"> </a> y`, "x y", "x y"},
		{"javascript link is text", `<a href="javascript:void(0)">go</a>`, "go", "go"},
		{"nested lists", "<ul><li>a<ol><li>b</li><li>c</li></ol></li><li>d</li></ul>", "- a\n  1. b\n  2. c\n- d", "a\nb\nc\nd"},
		{"list item paragraphs", "<ol><li><p>p1</p><p>p2</p></li></ol>", "1. p1\n\n   p2", "p1\np2"},
		{"fenced code with backticks", "<pre><code class=\"lang-go\">a ```\n\tb</code></pre>", "````go\na ```\n\tb\n````", "a ```\n\tb"},
		{"inline code with backtick", "<p><code>a`b</code></p>", "`` a`b ``", "a`b"},
		{"emphasis spacing", "<p>x<b> bold </b>y<i>i</i></p>", "x **bold** y*i*", "x bold yi"},
		{"blockquote", "<blockquote><p>q1</p><p>q2</p></blockquote>", "> q1\n>\n> q2", "q1\nq2"},
		{"table", "<table><tr><th>a</th><th>b|c</th></tr><tr><td>1</td></tr></table>", "| a | b\\|c |\n| --- | --- |\n| 1 |  |", "a\tb|c\n1"},
		{"br runs", "<p>a<br><br><br><br>b</p>", "a\n\nb", "a\n\nb"},
		{"hidden attribute", `<p hidden>h</p><p>v</p>`, "v", "v"},
		{"image", `<img src="i.png" alt="An  image"><img src="data:x" alt="d"><img src="n.png">`, "![An image](https://example.com/dir/i.png)", ""},
		{"block inside link flattened", `<a href="/c"><div><h2>T</h2><p>d</p></div></a>`, "[T d](https://example.com/c)", "T d"},
		{"entities and nbsp", "<p>a &amp; b&nbsp;c &lt;d&gt;</p>", "a & b\u00a0c <d>", "a & b\u00a0c <d>"},
		{"hr", "<p>a</p><hr><p>b</p>", "a\n\n---\n\nb", "a\nb"},
		{"empty document", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Markdown(c.html, base); got != c.md {
				t.Errorf("markdown:\n got %q\nwant %q", got, c.md)
			}
			if got := Text(c.html); got != c.text {
				t.Errorf("text:\n got %q\nwant %q", got, c.text)
			}
		})
	}
}
