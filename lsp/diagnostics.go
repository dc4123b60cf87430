package lsp

import "github.com/nikahq/nika/spec"

// diagnostics converts every finding of the snapshot, in the checker's
// order, into an LSP diagnostic.
func (sn *snapshot) diagnostics() []Diagnostic {
	sn.diagsOnce.Do(func() {
		fs := sn.analysis.Findings
		sn.diags = make([]Diagnostic, 0, len(fs))
		for _, f := range fs {
			sn.diags = append(sn.diags, sn.diagnostic(f))
		}
	})
	return sn.diags
}

// span is the document byte range a finding covers: from its position over
// the token that starts there.
func (sn *snapshot) span(f spec.Finding) (from, to int) {
	from = sn.lines.specOffset(f.Pos, sn.bom)
	return from, sn.tokenEnd(from)
}

// diagnostic is one finding as LSP has it. The message is the finding's
// message, then its detail (how to fix it) on a line of its own, so an
// editor that shows one line shows what is wrong. The code is the NIKA code,
// or the lint rule of a warning. Data carries the finding's own fields.
func (sn *snapshot) diagnostic(f spec.Finding) Diagnostic {
	from, to := sn.span(f)
	d := Diagnostic{
		Range:    sn.lines.rangeOf(from, to),
		Severity: severityError,
		Code:     f.Code,
		Source:   "nika",
		Message:  f.Message,
		Data: &diagnosticData{Line: f.Pos.Line, Column: f.Pos.Column, Path: f.Path, Message: f.Message,
			Detail: f.Detail, Category: f.Category, Rule: f.Rule},
	}
	if f.Detail != "" {
		d.Message += "\n" + f.Detail
	}
	if !f.IsError() {
		d.Severity = severityWarning
		d.Code = f.Rule
	}
	return d
}
