package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/nikahq/nika/spec"
)

// Code actions are quick fixes for the findings whose range meets the
// requested one, computed from the server's own findings of the current
// text (never from the client's copy, which may be older):
//   - every finding whose detail has a "did you mean `X`?" gets "Change `W`
//     to `X`": W, the wrong name, is the quoted name of the message found in
//     the finding's range (for a dotted `vars.nam`, its last part);
//   - a key from another workflow dialect whose detail names the nika key
//     (`after` → "Use `depends_on`.") gets "Rename `after` to `depends_on`";
//   - NIKA-DAG-003 gets "Add `X` to depends_on of `T`": X appended to T's
//     list (flow or block), or a `depends_on: [X]` line after T's `id:`.

var (
	didYouMeanRE = regexp.MustCompile("(?i)did you mean `([^`]+)`\\?")
	quotedRE     = regexp.MustCompile("`([^`]+)`|\"([^\"]+)\"|'([^']+)'")
	missingEdge  = regexp.MustCompile("^Add `([^`]+)` to `depends_on` of `([^`]+)`")
	dialectKey   = regexp.MustCompile("^Use `([a-z_]+)`\\. Remove `([^`]+)`\\.$")
)

func (s *server) codeAction(raw json.RawMessage) (any, *rpcError) {
	var p codeActionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if len(p.Context.Only) > 0 && !wantsQuickFix(p.Context.Only) {
		return []codeAction{}, nil
	}
	sn := s.snapshotOf(p.TextDocument.URI)
	if sn == nil {
		return nil, nil
	}
	from, to := sn.lines.offset(p.Range.Start), sn.lines.offset(p.Range.End)
	actions := []codeAction{}
	for i, f := range sn.analysis.Findings {
		ff, ft := sn.span(f)
		if ft < from || ff > to {
			continue
		}
		diag := sn.diagnostics()[i]
		for _, a := range sn.fixes(f, ff, ft) {
			a.Kind = "quickfix"
			a.Diagnostics = []Diagnostic{diag}
			actions = append(actions, a)
		}
	}
	return actions, nil
}

func wantsQuickFix(only []string) bool {
	for _, k := range only {
		if k == "quickfix" || k == "" || strings.HasPrefix("quickfix", k+".") {
			return true
		}
	}
	return false
}

// fixes returns the mechanical fixes of one finding spanning [from, to).
func (sn *snapshot) fixes(f spec.Finding, from, to int) []codeAction {
	var out []codeAction
	if m := didYouMeanRE.FindStringSubmatch(f.Detail); m != nil {
		if a, ok := sn.renameFix(f, from, to, m[1]); ok {
			out = append(out, a)
		}
	}
	if m := dialectKey.FindStringSubmatch(f.Detail); m != nil && f.Code == spec.CodeParseUnknownField {
		if a, ok := sn.renameFix(spec.Finding{Message: "`" + m[2] + "`"}, from, to, m[1]); ok {
			out = append(out, a)
		}
	}
	if f.Code == spec.CodeDAGMissingEdge {
		if m := missingEdge.FindStringSubmatch(f.Detail); m != nil {
			if a, ok := sn.addEdgeFix(m[1], m[2]); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// renameFix replaces the wrong name in the finding's range by the
// suggestion.
func (sn *snapshot) renameFix(f spec.Finding, from, to int, want string) (codeAction, bool) {
	region := sn.text[from:to]
	for _, m := range quotedRE.FindAllStringSubmatch(f.Message, -1) {
		wrong := m[1] + m[2] + m[3]
		if wrong == want {
			continue
		}
		last := wrong
		if i := strings.LastIndexByte(wrong, '.'); i >= 0 && !strings.Contains(want, ".") {
			last = wrong[i+1:] // vars.nam → vars.name: only the name changes
		}
		at := -1
		if i := indexName(region, wrong); i >= 0 {
			at = from + i + len(wrong) - len(last)
		} else if i := indexName(region, last); last != wrong && i >= 0 {
			at = from + i // written another way, e.g. tasks['x'].field
		}
		if at < 0 {
			continue
		}
		r := sn.lines.rangeOf(at, at+len(last))
		verb := "Change"
		if end := at + len(last); end < len(sn.text) && sn.text[end] == ':' {
			verb = "Rename" // a mapping key
		}
		return codeAction{
			Title:       fmt.Sprintf("%s `%s` to `%s`", verb, last, want),
			IsPreferred: true,
			Edit:        workspaceEdit{Changes: map[string][]textEdit{sn.uri: {{Range: r, NewText: want}}}},
		}, true
	}
	return codeAction{}, false
}

// indexName finds name in b where it is not part of a longer identifier.
func indexName(b []byte, name string) int {
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(name))
		if j < 0 {
			return -1
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isIdent(b[j-1])) && (end == len(b) || !isIdent(b[end])) {
			return j
		}
		i = j + 1
	}
}

// addEdgeFix adds dep to the depends_on of task id.
func (sn *snapshot) addEdgeFix(dep, id string) (codeAction, bool) {
	t, ok := findTask(tasksOf(sn.file()), id)
	if !ok {
		return codeAction{}, false
	}
	var edit textEdit
	switch {
	case t.depsPair == nil:
		edit, ok = sn.insertDependsOn(t, dep)
	default:
		edit, ok = sn.appendDep(t, dep)
	}
	if !ok {
		return codeAction{}, false
	}
	return codeAction{
		Title:       fmt.Sprintf("Add `%s` to depends_on of `%s`", dep, id),
		IsPreferred: true,
		Edit:        workspaceEdit{Changes: map[string][]textEdit{sn.uri: {edit}}},
	}, true
}

// insertDependsOn writes `depends_on: [dep]` on a line of its own after the
// task's `id:` line, at the id key's indentation. A task written as a flow
// mapping gets none (there is no line to add).
func (sn *snapshot) insertDependsOn(t taskEntry, dep string) (textEdit, bool) {
	if t.node.Style == spec.StyleFlow {
		return textEdit{}, false
	}
	keyOff := sn.nodeOffset(t.idKey)
	l := sn.lines.line(keyOff)
	if sn.lines.line(sn.nodeOffset(t.idNode)) != l {
		return textEdit{}, false
	}
	indent := strings.Repeat(" ", keyOff-sn.lines.start[l])
	at := len(sn.text)
	prefix := ""
	if l+1 < len(sn.lines.start) {
		at = sn.lines.start[l+1]
	} else {
		prefix = sn.newline()
	}
	pos := sn.lines.position(at)
	return textEdit{Range: Range{pos, pos}, NewText: prefix + indent + "depends_on: [" + dep + "]" + sn.newline()}, true
}

// appendDep adds dep at the end of an existing depends_on list.
func (sn *snapshot) appendDep(t taskEntry, dep string) (textEdit, bool) {
	v := t.depsPair.Value.Deref()
	if v == nil || v.Kind != spec.KindSeq {
		return textEdit{}, false
	}
	if v.Style == spec.StyleFlow {
		open := sn.nodeOffset(v)
		end := sn.tokenEnd(open)
		if end <= open || sn.text[end-1] != ']' {
			return textEdit{}, false
		}
		closeAt := end - 1
		text := dep
		if len(v.Items) > 0 {
			text = ", " + dep
			last := sn.nodeOffset(v.Items[len(v.Items)-1])
			closeAt = sn.tokenEnd(last)
		}
		pos := sn.lines.position(closeAt)
		return textEdit{Range: Range{pos, pos}, NewText: text}, true
	}
	if len(v.Items) == 0 {
		return textEdit{}, false
	}
	last := sn.nodeOffset(v.Items[len(v.Items)-1])
	l := sn.lines.line(last)
	lead := string(sn.text[sn.lines.start[l]:last])
	if strings.Trim(lead, " -") != "" || !strings.Contains(lead, "-") {
		return textEdit{}, false
	}
	at, prefix := len(sn.text), sn.newline()
	if l+1 < len(sn.lines.start) {
		at, prefix = sn.lines.start[l+1], ""
	}
	pos := sn.lines.position(at)
	return textEdit{Range: Range{pos, pos}, NewText: prefix + lead + dep + sn.newline()}, true
}

// newline is the document's line break.
func (sn *snapshot) newline() string {
	if bytes.Contains(sn.text, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}
