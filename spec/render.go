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
				caret := caretIndent(line, f.Pos.Column)
				if _, err := fmt.Fprintf(w, " %s | %s\n %s | %s^\n", num, strings.ReplaceAll(line, "\t", " "), pad, caret); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// caretIndent is the blank run that puts a caret under rune column col.
func caretIndent(line string, col int) string {
	n := col - 1
	if max := utf8.RuneCountInString(line); n > max {
		n = max
	}
	if n < 0 {
		n = 0
	}
	return strings.Repeat(" ", n)
}

// FormatFinding renders one finding on one line.
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
	return b.String()
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
