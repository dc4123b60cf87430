package lsp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/nikahq/nika/spec"
)

const brokenURI = "file:///work/flows/broken.nika.yaml"

// The diagnostics of an opened document are the findings of spec.CheckSource
// for the same name and text, one for one and in order: code, severity,
// message and detail, and a range that starts at the finding's line and
// column converted to UTF-16 (the fixture has é, — and 🚀 before findings
// on their lines).
func TestDiagnosticsAreTheCheckersFindings(t *testing.T) {
	text := fixture(t, "broken.nika.yaml")
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(brokenURI, text)
	got := c.diagnostics(brokenURI, 1)
	want := spec.CheckSource("/work/flows/broken.nika.yaml", []byte(text), spec.CheckOptions{}).Findings
	if len(got.Diagnostics) != len(want) || len(want) < 8 {
		t.Fatalf("%d diagnostics, want the %d findings", len(got.Diagnostics), len(want))
	}
	lines := strings.Split(text, "\n")
	for i, f := range want {
		d := got.Diagnostics[i]
		prefix := []rune(lines[f.Pos.Line-1])[:f.Pos.Column-1]
		wantStart := Position{Line: f.Pos.Line - 1, Character: len(utf16.Encode(prefix))}
		if d.Range.Start != wantStart {
			t.Errorf("%s at %v: range starts at %+v, want %+v", f.Code, f.Pos, d.Range.Start, wantStart)
		}
		if d.Code != f.Code || d.Severity != severityError || d.Source != "nika" {
			t.Errorf("diagnostic %d: code %q severity %d source %q, want %q 1 nika", i, d.Code, d.Severity, d.Source, f.Code)
		}
		if d.Message != f.Message+"\n"+f.Detail {
			t.Errorf("diagnostic %d message %q, want the finding's message and detail", i, d.Message)
		}
		if d.Data == nil || d.Data.Line != f.Pos.Line || d.Data.Column != f.Pos.Column || d.Data.Path != f.Path {
			t.Errorf("diagnostic %d data %+v, want line %d column %d path %s", i, d.Data, f.Pos.Line, f.Pos.Column, f.Path)
		}
	}
	c.shutdown()
}

// Each finding's range covers the token at its position: the key, the
// scalar as written, the whole placeholder.
func TestDiagnosticRangesCoverTheirToken(t *testing.T) {
	text := fixture(t, "broken.nika.yaml")
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(brokenURI, text)
	got := c.diagnostics(brokenURI, 1)
	covers := map[string]string{}
	for _, d := range got.Diagnostics {
		covers[d.Code+" "+d.Data.Path] += slice(t, text, d.Range) + "|"
	}
	for key, want := range map[string]string{
		"NIKA-PARSE-005 modle":                 "modle|",
		"NIKA-INVOKE-001 tasks[0].invoke.tool": "nika:fetc|",
		"NIKA-PARSE-005 tasks[1].depnds_on":    "depnds_on|",
		"NIKA-DAG-003 tasks[1].infer.prompt":   "${{ tasks.fetch.output }}|",
		"NIKA-VAR-001 tasks[1].infer.prompt":   "${{ vars.nam }}|",
		"NIKA-DAG-002 tasks[2].depends_on[0]":  "fetsh|",
		"NIKA-DAG-003 tasks[2].infer.prompt":   "${{ tasks.summarize.output }}|",
		"NIKA-DAG-003 tasks[3].infer.prompt":   "${{ tasks.fetch.output }}|",
		"NIKA-VAR-001 tasks[3].infer.prompt":   "${{ tasks.third.size }}|",
	} {
		if covers[key] != want {
			t.Errorf("%s covers %q, want %q", key, covers[key], want)
		}
	}
	c.shutdown()
}

// slice is the text an LSP range covers, computed by the test from UTF-16
// positions.
func slice(t *testing.T, text string, r Range) string {
	t.Helper()
	return text[offsetOf(t, text, r.Start):offsetOf(t, text, r.End)]
}

func offsetOf(t *testing.T, text string, p Position) int {
	t.Helper()
	off := 0
	for i := 0; i < p.Line; i++ {
		j := strings.IndexByte(text[off:], '\n')
		if j < 0 {
			t.Fatalf("line %d is past the end", p.Line)
		}
		off += j + 1
	}
	units := 0
	for i, r := range text[off:] {
		if units >= p.Character || r == '\n' {
			return off + i
		}
		units += len(utf16.Encode([]rune{r}))
	}
	return len(text)
}

// A change is checked again: fixing a finding removes its diagnostic, and
// the publication carries the changed version.
func TestDidChangeRepublishes(t *testing.T) {
	text := fixture(t, "broken.nika.yaml")
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(brokenURI, text)
	before := c.diagnostics(brokenURI, 1)
	from := at(t, text, "modle", 0)
	to := at(t, text, "modle", len("modle"))
	c.change(brokenURI, 2, contentChange{Range: &Range{from, to}, Text: "model"})
	after := c.diagnostics(brokenURI, 2)
	if len(after.Diagnostics) != len(before.Diagnostics)-1 {
		t.Fatalf("%d diagnostics after the fix, want %d", len(after.Diagnostics), len(before.Diagnostics)-1)
	}
	for _, d := range after.Diagnostics {
		if d.Data.Path == "modle" {
			t.Errorf("the fixed finding is still published: %+v", d)
		}
	}
	// A whole-text change (no range) replaces the document.
	c.change(brokenURI, 3, contentChange{Text: fixture(t, "valid.nika.yaml")})
	if got := c.diagnostics(brokenURI, 3); len(got.Diagnostics) != 0 {
		t.Errorf("the valid workflow has %d diagnostics: %+v", len(got.Diagnostics), got.Diagnostics)
	}
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": brokenURI}})
	c.await(func(m rawMessage) bool {
		var q publishDiagnosticsParams
		return m.Method == "textDocument/publishDiagnostics" && json.Unmarshal(m.Params, &q) == nil && len(q.Diagnostics) == 0 && q.Version == nil
	}, "the empty publication of a closed document")
	c.shutdown()
}

// A text with a byte-order mark and CRLF line breaks: the checker drops the
// mark, the editor's text keeps it (one UTF-16 unit on line 0); every
// finding still lands on its character.
func TestDiagnosticsWithBOMAndCRLF(t *testing.T) {
	text := "\ufeff" + strings.ReplaceAll(fixture(t, "broken.nika.yaml"), "\n", "\r\n")
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(brokenURI, text)
	got := c.diagnostics(brokenURI, 1)
	want := spec.CheckSource("/work/flows/broken.nika.yaml", []byte(text), spec.CheckOptions{}).Findings
	if len(got.Diagnostics) != len(want) {
		t.Fatalf("%d diagnostics, want %d", len(got.Diagnostics), len(want))
	}
	lines := strings.Split(strings.TrimPrefix(text, "\ufeff"), "\r\n")
	for i, f := range want {
		prefix := []rune(lines[f.Pos.Line-1])[:f.Pos.Column-1]
		w := Position{Line: f.Pos.Line - 1, Character: len(utf16.Encode(prefix))}
		if f.Pos.Line == 1 {
			w.Character++ // the mark
		}
		if got.Diagnostics[i].Range.Start != w {
			t.Errorf("%s at %v: starts at %+v, want %+v", f.Code, f.Pos, got.Diagnostics[i].Range.Start, w)
		}
	}
	c.shutdown()
}

// While the text does not parse, completion takes names from the latest
// text that did.
func TestCompletionFromTheLastTextThatParsed(t *testing.T) {
	valid := fixture(t, "valid.nika.yaml")
	c := start(t, Options{}, nil)
	c.initialize()
	c.open(validURI, valid)
	c.diagnostics(validURI, 1)
	broken := strings.Replace(valid, "    infer:\n      prompt: \"Report", "    bad: [\n    infer:\n      prompt: \"${{ vars. }} Report", 1)
	c.change(validURI, 2, contentChange{Text: broken})
	d := c.diagnostics(validURI, 2)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Code != "NIKA-PARSE-001" {
		t.Fatalf("the edited text should not parse: %+v", d.Diagnostics)
	}
	got, order := labels(t, c, validURI, at(t, broken, "${{ vars. }}", len("${{ vars.")))
	if _, ok := got["topic"]; !ok {
		t.Errorf("no var names while the text does not parse: %v", order)
	}
	c.shutdown()
}
