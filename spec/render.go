package spec

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// FileResult is the outcome of checking one file, as rendered by `nika check`.
type FileResult struct {
	File     *File // nil when the file could not be read
	Name     string
	Findings []Finding
}

// Valid reports whether the file has no errors.
func (r FileResult) Valid() bool { return !HasErrors(r.Findings) }

// TextOptions choose how findings are printed; cmd/nika decides them.
type TextOptions struct {
	Snippet bool // print the source line and a caret under the subject
}

// WriteText prints findings in the format of DECISIONS.md D21:
// `FILE:LINE:COL: error[CODE] PATH: MESSAGE — DETAIL`, then the source line
// and a caret.
//
// Text output goes to a terminal, and a workflow is untrusted input: every
// control character of the source line, the file name, the path, the
// message and the detail is written as an escape (`\x1b`, `\x07`, see
// Inert), so ESC and BEL in a workflow cannot recolour, retitle or clear
// the reader's terminal. A source line is cut to a window of about
// snippetWidth columns around the caret, with `…` on each cut side; the
// caret stays under its character after escaping and cutting.
func WriteText(w io.Writer, results []FileResult, opts TextOptions) error {
	for _, r := range results {
		for _, f := range r.Findings {
			if _, err := io.WriteString(w, FormatFinding(r.Name, f)+"\n"); err != nil {
				return err
			}
			if opts.Snippet && r.File != nil && f.Pos.IsValid() {
				line := r.File.Line(f.Pos.Line)
				if line == "" && f.Pos.Line > 1 {
					continue
				}
				num := fmt.Sprintf("%d", f.Pos.Line)
				pad := strings.Repeat(" ", len(num))
				text, caret := snippet(line, f.Pos.Column)
				if _, err := fmt.Fprintf(w, " %s | %s\n %s | %s^\n", num, text, pad, caret); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// snippetWidth is about how many columns of a source line a snippet shows.
const snippetWidth = 120

// snippet renders a source line for the terminal, escaped (tabs as one
// space each) and cut to about snippetWidth columns around rune column
// col, and the blank run that puts a caret under that column.
func snippet(line string, col int) (text, caret string) {
	var cells []string // what each rune of the line renders as
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		cells = append(cells, inertRune(r, line[i:i+size]))
		i += size
	}
	at := min(max(col-1, 0), len(cells)) // the rune under the caret; len(cells): past the end
	width := func(from, to int) int {
		n := 0
		for _, c := range cells[from:to] {
			n += utf8.RuneCountInString(c)
		}
		return n
	}
	start, end := 0, len(cells)
	if width(0, len(cells)) > snippetWidth {
		// About a third of the window before the caret, the rest after;
		// whatever one side does not use goes to the other.
		start, end = at, at
		used := 0
		grow := func(left bool, limit int) {
			for {
				i := end
				if left {
					i = start - 1
				}
				if i < 0 || i >= len(cells) {
					return
				}
				cw := utf8.RuneCountInString(cells[i])
				if used+cw > limit && used > 0 {
					return
				}
				used += cw
				if left {
					start--
				} else {
					end++
				}
			}
		}
		grow(false, 1) // the character under the caret, however wide its escape
		grow(true, snippetWidth/3)
		grow(false, snippetWidth)
		grow(true, snippetWidth)
	}
	var b strings.Builder
	indent := 0
	if start > 0 {
		b.WriteString("…")
		indent++
	}
	b.WriteString(strings.Join(cells[start:end], ""))
	if end < len(cells) {
		b.WriteString("…")
	}
	indent += width(start, at)
	return b.String(), strings.Repeat(" ", indent)
}

// Inert returns s with every character that a terminal could take as a
// command written as a visible escape: C0 controls and DEL as `\xNN` (tab as
// one space), C1 controls and the bidirectional overrides and isolates
// (which make a line display other than it reads) as `\uNNNN`, and a byte
// that is not UTF-8 as `\xNN`. Everything else is unchanged.
func Inert(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || inertRune(r, string(r)) != string(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(inertRune(r, s[i:i+size]))
		i += size
	}
	return b.String()
}

// inertRune renders one decoded rune (raw is its source bytes) for a terminal.
func inertRune(r rune, raw string) string {
	switch {
	case r == '\t':
		return " "
	case r == utf8.RuneError && len(raw) == 1:
		return fmt.Sprintf("\\x%02x", raw[0])
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("\\x%02x", r)
	case r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return fmt.Sprintf("\\u%04x", r)
	}
	return raw
}

// FormatFinding renders one finding on one line, inert for a terminal: the
// file name, path, message and detail may quote the workflow, so their
// control characters are escaped (Inert) — a newline too, so it stays one line.
func FormatFinding(file string, f Finding) string {
	var b strings.Builder
	b.WriteString(file)
	if f.Pos.IsValid() {
		fmt.Fprintf(&b, ":%d:%d", f.Pos.Line, f.Pos.Column)
	}
	b.WriteString(": ")
	b.WriteString(string(f.Severity))
	switch {
	case f.Code != "":
		b.WriteString("[" + f.Code + "] ")
	case f.Rule != "":
		b.WriteString("[" + f.Rule + "] ")
	default:
		b.WriteString(": ")
	}
	if f.Path != "" {
		b.WriteString(f.Path + ": ")
	}
	b.WriteString(f.Message)
	if f.Detail != "" {
		b.WriteString(" — " + f.Detail)
	}
	return Inert(b.String())
}

// CheckReport is the one JSON object `nika check --json` prints (D21).
type CheckReport struct {
	Valid bool              `json:"valid"`
	Files []FileCheckReport `json:"files"`
}

// FileCheckReport is one file of a CheckReport.
type FileCheckReport struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
}

// Report builds the D21 object for a set of checked files.
func Report(results []FileResult) CheckReport {
	rep := CheckReport{Valid: true, Files: []FileCheckReport{}}
	for _, r := range results {
		errs, warns := Split(r.Findings)
		fr := FileCheckReport{File: r.Name, Valid: len(errs) == 0, Errors: errs, Warnings: warns}
		rep.Valid = rep.Valid && fr.Valid
		rep.Files = append(rep.Files, fr)
	}
	return rep
}

// WriteJSON prints the D21 object followed by a newline.
func WriteJSON(w io.Writer, results []FileResult) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(Report(results))
}

// UnreadableFile is the code-less finding for a file that cannot be read (D21).
func UnreadableFile(name string, err error) Finding {
	return Finding{File: name, Severity: SeverityError, Namespace: "PARSE", Category: "parse_error",
		Message: "cannot read the file: " + oneLine(err.Error()), Detail: "Check the path and the file's permissions."}
}
