package htmltext

import (
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
)

// Article returns the main content of an HTML document as trimmed Markdown (nika:fetch mode
// `article`): codeberg.org/readeck/go-readability (a port of Mozilla's Readability.js 0.6)
// picks the content and strips the page's chrome (navigation, sidebars, share buttons, ads),
// and this package's own Markdown renderer writes it, under the same rules as Markdown. The
// article's title, when Readability finds one, comes first as a `#` heading unless the content
// already opens with a heading of that text. A page with no readable content gives "".
func Article(text string, final *url.URL) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	doc := parseHTML(text)
	base := documentBase(doc, final) // before Readability rewrites the tree
	p := readability.NewParser()
	// Readability strips class attributes from the content it returns; the renderer reads the
	// `language-x` class of code blocks, and classes weigh in the extraction before that step
	// either way.
	p.KeepClasses = true
	art, err := p.ParseAndMutate(doc, base)
	if err != nil || art.Node == nil {
		return ""
	}
	c := &converter{md: true, base: base, hasBlocks: map[*html.Node]bool{}}
	c.markBlocks(art.Node)
	col := &collector{c: c, in: &inlineBuf{}}
	col.node(art.Node)
	col.flush()
	blocks := col.out
	if title := oneLineText(collapseSpace(art.Title())); title != "" {
		if len(blocks) == 0 || blocks[0].kind != bHeading || !strings.EqualFold(blocks[0].text, title) {
			blocks = append([]block{{kind: bHeading, level: 1, text: title}}, blocks...)
		}
	}
	return strings.TrimSpace(strings.Join(renderMarkdown(blocks, false), "\n"))
}
