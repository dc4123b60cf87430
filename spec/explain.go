package spec

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

// Explain returns the long explanation of an allocated code: what it means, when it fires (static or runtime), a minimal
// YAML example that triggers it (for static codes), and how to fix it. ok is false for an unknown code.
// The id is matched case-insensitively, so `nika explain nika-parse-010` works too.
func Explain(id string) (text string, ok bool) {
	text, ok = explainTexts()[strings.ToUpper(strings.TrimSpace(id))]
	return text, ok
}

// explanation is the hand-written part of a code's text, read from explain/<NAMESPACE>.md (see
// explainFiles); the header's category, stage and transience come from the code registry, so
// they cannot drift from it.
type explanation struct {
	title   string // short title for the header line
	body    string // paragraphs separated by "\n\n"; a line starting with "* " is a bullet
	example string // YAML that triggers the code (static codes), verbatim
	fix     string // prescriptive: what to write instead, how to handle it
}

// explainWidth is the column at which paragraphs are wrapped.
const explainWidth = 100

// explainTexts maps every allocated code to its rendered text. Built on first use; never mutated.
var explainTexts = sync.OnceValue(func() map[string]string {
	es, _ := explanations() // a malformed file is caught by TestExplainFiles
	m := make(map[string]string, len(codeTable))
	for _, c := range codeTable {
		e, ok := es[c.ID]
		if !ok {
			continue // caught by TestExplainEveryCode
		}
		m[c.ID] = renderExplain(c, e)
	}
	return m
})

func renderExplain(c Code, e explanation) string {
	var b strings.Builder
	if c.Retired {
		b.WriteString(c.ID + " — retired (never emitted)\n")
	} else {
		b.WriteString(c.ID + " — " + e.title + " (" + c.Category + ", " + explainStage(c.Stage) + ", " +
			explainTransient(c.Transient) + ")\n")
	}
	for _, p := range strings.Split(e.body, "\n\n") {
		b.WriteString("\n")
		explainWrap(&b, p)
	}
	if e.example != "" {
		b.WriteString("\nExample:\n")
		for _, l := range explainDedent(strings.Split(strings.Trim(e.example, "\n"), "\n")) {
			l = strings.TrimRight(l, " \t")
			if l == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("  " + l + "\n")
		}
	}
	if e.fix != "" {
		b.WriteString("\n")
		explainWrap(&b, "Fix: "+e.fix)
	}
	return b.String()
}

// explainDedent removes the indentation common to the non-empty lines, so that a task snippet written
// as `  - id: x` (as it sits in a file) is shown from its first column.
func explainDedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return out
}

func explainStage(s string) string {
	switch s {
	case "S":
		return "static"
	case "R":
		return "runtime"
	case "S/R":
		return "static or runtime"
	}
	return s
}

func explainTransient(t string) string {
	switch t {
	case "no":
		return "not transient"
	case "yes":
		return "transient"
	}
	return "transient: " + t
}

// explainWrap writes one paragraph wrapped at explainWidth. Each "\n"-separated line of p is
// wrapped on its own; a line starting with "* " gets a hanging indent. Spaces inside `code`
// spans never break a line.
func explainWrap(b *strings.Builder, p string) {
	for _, line := range strings.Split(p, "\n") {
		indent := ""
		if strings.HasPrefix(line, "* ") {
			indent = "  "
		}
		words := explainSplitWords(line)
		col := 0
		for i, w := range words {
			wl := len([]rune(w))
			switch {
			case i == 0:
				b.WriteString(w)
				col = wl
			case col+1+wl > explainWidth:
				b.WriteString("\n" + indent + w)
				col = len(indent) + wl
			default:
				b.WriteString(" " + w)
				col += 1 + wl
			}
		}
		b.WriteString("\n")
	}
}

// explainSplitWords splits on spaces, keeping backquoted spans whole.
func explainSplitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inCode := false
	for _, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == ' ' && !inCode:
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// The hand-written texts are Markdown, one file per namespace (explain/PARSE.md, …), embedded in
// the binary. A file is read as a list of sections, one per code:
//
//	## NIKA-PARSE-010 — bad `timeout`        the id, " — ", the title
//
//	Paragraphs of the body.                  lines joined with spaces; a line starting with
//	* a bullet                               "* " starts a new line of the paragraph
//
//	```yaml                                  the example, verbatim (static codes)
//	  - id: fetch
//	```
//
//	Fix: what to write instead.              the fix: the last paragraph, starting "Fix: "
//
// Whatever comes before the first "## " (the file's title and introduction) is not read.
//
//go:embed explain/*.md
var explainFiles embed.FS

// explanations reads the embedded files once.
var explanations = sync.OnceValues(func() (map[string]explanation, error) {
	return parseExplanations(explainFiles)
})

// parseExplanations reads every explain/*.md file of fsys. It returns what it could read and,
// for the sections it could not, an error naming the file and line.
func parseExplanations(fsys fs.FS) (map[string]explanation, error) {
	names, err := fs.Glob(fsys, "explain/*.md")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := map[string]explanation{}
	var errs []string
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, e := range parseExplainFile(name, string(b), out) {
			errs = append(errs, e.Error())
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// explainSection is a section being read: its code, where it starts, and its parts so far.
type explainSection struct {
	id   string
	line int
	e    explanation
	body []string // paragraphs
}

// parseExplainFile adds the sections of one file to out and returns its errors.
func parseExplainFile(name, text string, out map[string]explanation) []error {
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	var sec *explainSection
	var para []string // the lines of the paragraph being read
	paraLine := 0     // the line it starts on
	endPara := func() {
		if sec == nil || len(para) == 0 {
			para = nil
			return
		}
		p := explainJoin(para)
		para = nil
		switch {
		case sec.e.fix != "":
			fail(paraLine, "%s: text after the `Fix:` paragraph", sec.id)
		case strings.HasPrefix(p, "Fix: "):
			sec.e.fix = strings.TrimPrefix(p, "Fix: ")
		default:
			sec.body = append(sec.body, p)
		}
	}
	endSection := func() {
		if sec == nil {
			return
		}
		sec.e.body = strings.Join(sec.body, "\n\n")
		switch _, dup := out[sec.id]; {
		case dup:
			fail(sec.line, "%s is explained twice", sec.id)
		case sec.e.body == "":
			fail(sec.line, "%s has no text", sec.id)
		default:
			out[sec.id] = sec.e
		}
		sec = nil
	}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l, n := strings.TrimRight(lines[i], " \t\r"), i+1
		switch {
		case strings.HasPrefix(l, "## "):
			endPara()
			endSection()
			id, title, ok := strings.Cut(strings.TrimPrefix(l, "## "), " — ")
			if !ok || !strings.HasPrefix(id, "NIKA-") || title == "" {
				fail(n, "a section header is `## NIKA-… — title`, not %q", l)
				continue
			}
			sec = &explainSection{id: id, line: n, e: explanation{title: title}}
		case sec == nil:
			// the file's title and introduction
		case strings.HasPrefix(l, "```"):
			endPara()
			var ex []string
			for i++; i < len(lines) && strings.TrimRight(lines[i], " \t\r") != "```"; i++ {
				ex = append(ex, strings.TrimRight(lines[i], "\r"))
			}
			switch {
			case i == len(lines):
				fail(n, "%s: the example's fence is not closed", sec.id)
			case sec.e.example != "":
				fail(n, "%s has two examples", sec.id)
			default:
				sec.e.example = strings.Join(ex, "\n")
			}
		case l == "":
			endPara()
		default:
			if len(para) == 0 {
				paraLine = n
			}
			para = append(para, l)
		}
	}
	endPara()
	endSection()
	return errs
}

// explainJoin makes a paragraph of its source lines: a line starting with "* " begins a new
// line of the paragraph, any other continues the one before (its indentation dropped).
func explainJoin(lines []string) string {
	var out []string
	for _, l := range lines {
		if len(out) == 0 || strings.HasPrefix(l, "* ") {
			out = append(out, l)
			continue
		}
		out[len(out)-1] += " " + strings.TrimLeft(l, " ")
	}
	return strings.Join(out, "\n")
}
