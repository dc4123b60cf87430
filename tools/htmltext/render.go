package htmltext

import (
	"net/url"
	"strconv"
	"strings"
)

// ---- rendering ----

// Markdown converts an HTML document to trimmed Markdown; final is the page's URL, against which
// (or its <base>) links and images resolve.
func Markdown(text string, final *url.URL) string {
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

// Text returns the visible text of an HTML document, trimmed.
func Text(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	doc := parseHTML(text)
	c := newConverter(doc, false, nil)
	return textOf(c.blocksOf(doc))
}

// textOf renders blocks as text: at most one blank line in a row, lines and the whole trimmed.
func textOf(blocks []block) string {
	var lines []string
	renderText(blocks, &lines)
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
