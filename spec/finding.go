package spec

import (
	"bytes"
	"encoding/json"
	"sort"
)

// Severity tells errors, which make a file invalid, from warnings, which never do.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one static diagnostic (LANGUAGE.md §9.1). It is a value, not an
// error: a file's findings are a []Finding, and an empty list is success.
type Finding struct {
	File      string
	Severity  Severity
	Code      string // exact NIKA code; "" for warnings and code-less findings
	Rule      string // warnings: the lint rule id
	Namespace string
	Category  string
	Message   string // what is wrong, one line
	Detail    string // how to fix it
	Path      string // YAML path, e.g. tasks[2].retry.max_attempts
	Pos       Pos
}

func newFinding(file, code string, pos Pos, path, msg, detail string) Finding {
	f := Finding{File: file, Severity: SeverityError, Code: code, Message: msg, Detail: detail, Path: path, Pos: pos}
	if c, ok := LookupCode(code); ok {
		f.Namespace, f.Category = c.Namespace(), c.Category
	}
	return f
}

func newWarning(file, rule, namespace string, pos Pos, path, msg, detail string) Finding {
	return Finding{File: file, Severity: SeverityWarning, Rule: rule, Namespace: namespace,
		Category: "validation_error", Message: msg, Detail: detail, Path: path, Pos: pos}
}

// IsError reports whether f makes the file invalid.
func (f Finding) IsError() bool { return f.Severity == SeverityError }

// MarshalJSON writes the finding object of LANGUAGE.md §9.1: code is null
// when there is none, rule appears on warnings only.
func (f Finding) MarshalJSON() ([]byte, error) {
	type wire struct {
		Severity  Severity `json:"severity"`
		Code      *string  `json:"code"`
		Rule      string   `json:"rule,omitempty"`
		Namespace string   `json:"namespace"`
		Category  string   `json:"category"`
		Message   string   `json:"message"`
		Detail    string   `json:"detail"`
		Path      string   `json:"path"`
		Line      *int     `json:"line"`
		Column    *int     `json:"column"`
	}
	w := wire{Severity: f.Severity, Rule: f.Rule, Namespace: f.Namespace, Category: f.Category,
		Message: f.Message, Detail: f.Detail, Path: f.Path}
	if f.Code != "" {
		w.Code = &f.Code
	}
	if f.Pos.IsValid() { // a file that cannot be read has no position: null
		w.Line, w.Column = &f.Pos.Line, &f.Pos.Column
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.IsError() {
			return true
		}
	}
	return false
}

// SortFindings orders findings by line, column, code, then message
// (LANGUAGE.md §9.2) and drops exact duplicates.
func SortFindings(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Column != b.Pos.Column {
			return a.Pos.Column < b.Pos.Column
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Message != b.Message {
			return a.Message < b.Message
		}
		return a.Rule < b.Rule
	})
	out := fs[:0]
	for i, f := range fs {
		if i > 0 && f == fs[i-1] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Split separates errors from warnings, keeping their order.
func Split(fs []Finding) (errs, warns []Finding) {
	errs, warns = []Finding{}, []Finding{}
	for _, f := range fs {
		if f.IsError() {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	return errs, warns
}

// pathKey renders one mapping key of a YAML path: identifiers as .key,
// anything else as ["key"].
func pathKey(base, key string) string {
	if isIdent(key) {
		if base == "" {
			return key
		}
		return base + "." + key
	}
	b, _ := json.Marshal(key)
	return base + "[" + string(b) + "]"
}

func pathIndex(base string, i int) string {
	return base + "[" + itoa(i) + "]"
}

func itoa(i int) string {
	if i >= 0 && i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
