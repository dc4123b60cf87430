package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/nikahq/nika/spec"
)

// findingContext is how many source lines the editor shows around a finding.
const findingContext = 2

// newPage is the data of /new.
type newPage struct {
	Workflow, Vars string
	Checked        bool // the findings below are the checker's on Workflow
	Findings       findingsView
	Problem        string // why a submission was refused, beyond findings
}

// findingsView is the checker's findings on a text, each placed under its source line.
type findingsView struct {
	Valid            bool
	Errors, Warnings int
	Lines            []sourceLine // the lines around findings, in order; a gap is Skip
	Loose            []findingView
}

type sourceLine struct {
	N        int
	Text     string
	Skip     bool // "…" between two windows
	Findings []findingView
}

type findingView struct {
	Line, Col                        int
	Severity, Code, Rule, Path       string
	Message, Detail, Explain, Indent string
}

// handleNewPage is the editor: paste or upload a workflow, give vars, check, run.
func (s *Server) handleNewPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "new", pageData{Title: "New run", Nav: "new", Data: newPage{}})
}

// handleNewSubmit is the editor's form (multipart, for the upload, or urlencoded): "check" shows
// the findings; "run" submits like POST /v1/runs and goes to the run's page.
func (s *Server) handleNewSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes+64<<10)
	d := newPage{}
	src, err := formWorkflow(r)
	if err != nil {
		d.Problem = err.Error()
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status, d.Problem = http.StatusRequestEntityTooLarge, fmt.Sprintf("The workflow is over %d bytes.", s.opts.MaxBodyBytes)
		}
		s.render(w, r, status, "new", pageData{Title: "New run", Nav: "new", Data: d})
		return
	}
	if int64(len(src)) > s.opts.MaxBodyBytes { // the limit of POST /v1/runs, whichever way it came
		d.Problem = fmt.Sprintf("The workflow is over %d bytes.", s.opts.MaxBodyBytes)
		s.render(w, r, http.StatusRequestEntityTooLarge, "new", pageData{Title: "New run", Nav: "new", Data: d})
		return
	}
	d.Workflow, d.Vars = src, r.FormValue("vars")
	res, _ := s.check(submittedName, []byte(src))
	d.Checked, d.Findings = true, placeFindings(src, res.Findings)
	if r.FormValue("action") == "check" || !res.Valid() {
		status := http.StatusOK
		if !res.Valid() && r.FormValue("action") != "check" {
			status = http.StatusBadRequest
		}
		s.render(w, r, status, "new", pageData{Title: "New run", Nav: "new", Data: d})
		return
	}
	vars, err := formVars(d.Vars)
	if err != nil {
		d.Problem = err.Error()
		s.render(w, r, http.StatusBadRequest, "new", pageData{Title: "New run", Nav: "new", Data: d})
		return
	}
	sub := s.submit(submittedName, []byte(src), vars)
	switch {
	case sub.findings != nil:
		d.Findings = placeFindings(src, sub.findings.Findings)
		s.render(w, r, http.StatusBadRequest, "new", pageData{Title: "New run", Nav: "new", Data: d})
	case sub.refusal != nil:
		d.Problem = sub.refusal.text
		if sub.refusal.err != nil {
			d.Problem = sub.refusal.err.Code + ": " + sub.refusal.err.Message
		}
		s.render(w, r, sub.refusal.status, "new", pageData{Title: "New run", Nav: "new", Data: d})
	default:
		http.Redirect(w, r, "/runs/"+sub.id, http.StatusSeeOther)
	}
}

// formWorkflow is the form's workflow: the uploaded file when one was chosen, else the text.
func formWorkflow(r *http.Request) (string, error) {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return "", err
		}
		if f, _, err := r.FormFile("upload"); err == nil {
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil {
				return "", err
			}
			if len(b) > 0 {
				return string(b), nil
			}
		}
	} else if err := r.ParseForm(); err != nil {
		return "", err
	}
	return r.FormValue("workflow"), nil
}

// formVars reads the vars box: one `name=value` a line, the text of `nika run --var`.
func formVars(text string) (map[string]string, error) {
	vars := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("vars line %d: write name=value", i+1)
		}
		vars[strings.TrimSpace(k)] = v
	}
	return vars, nil
}

// handleCheck is the editor's live check: the workflow text in the body, the findings placed
// under their lines as an HTML fragment (the same template as the page without script).
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		http.Error(w, "the workflow is too large", http.StatusRequestEntityTooLarge)
		return
	}
	res, _ := s.check(submittedName, b)
	s.render(w, r, http.StatusOK, "findings", pageData{Data: placeFindings(string(b), res.Findings)})
}

// placeFindings puts each finding under its line, with the lines around it; findings without a
// position are listed apart.
func placeFindings(src string, fs []spec.Finding) findingsView {
	v := findingsView{Valid: !spec.HasErrors(fs)}
	lines := strings.Split(src, "\n")
	at := map[int][]findingView{}
	show := map[int]bool{}
	for _, f := range fs {
		fv := findingView{Line: f.Pos.Line, Col: f.Pos.Column, Severity: string(f.Severity), Code: f.Code, Rule: f.Rule,
			Path: f.Path, Message: f.Message, Detail: f.Detail, Explain: explainPath(f.Code)}
		if f.Severity == spec.SeverityError {
			v.Errors++
		} else {
			v.Warnings++
		}
		if f.Pos.Line < 1 || f.Pos.Line > len(lines) {
			v.Loose = append(v.Loose, fv)
			continue
		}
		fv.Indent = caretIndent(lines[f.Pos.Line-1], f.Pos.Column)
		at[f.Pos.Line] = append(at[f.Pos.Line], fv)
		for n := f.Pos.Line - findingContext; n <= f.Pos.Line+findingContext; n++ {
			if n >= 1 && n <= len(lines) {
				show[n] = true
			}
		}
	}
	last := 0
	for n := 1; n <= len(lines); n++ {
		if !show[n] {
			continue
		}
		if last != 0 && n != last+1 {
			v.Lines = append(v.Lines, sourceLine{Skip: true})
		}
		v.Lines = append(v.Lines, sourceLine{N: n, Text: strings.TrimRight(lines[n-1], "\r"), Findings: at[n]})
		last = n
	}
	return v
}

// caretIndent is the text before column col (1-based, in runes) of line with every character
// but a tab turned into a space, so a caret under it lines up in a monospace font.
func caretIndent(line string, col int) string {
	var b strings.Builder
	i := 1
	for _, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	return b.String()
}
