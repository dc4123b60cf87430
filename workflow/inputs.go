package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nikahq/nika/spec"
)

// ResolveVars turns the declared vars and the --var texts into the run's
// var values (LANGUAGE.md §2.1): a supplied value converted by the var's
// type, else its default, else null. An undeclared name or a missing
// required var is NIKA-VAR-001, a failed conversion NIKA-VAR-006; both
// refuse the run before any task (exit 2).
func ResolveVars(w *Workflow, supplied map[string]string) (map[string]any, *spec.Error) {
	byName := make(map[string]*spec.VarDecl, len(w.Vars))
	names := make([]string, 0, len(w.Vars))
	for _, v := range w.Vars {
		byName[v.Name] = v
		names = append(names, v.Name)
	}
	keys := make([]string, 0, len(supplied))
	for k := range supplied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := byName[k]; !ok {
			hint := ""
			if len(names) > 0 {
				hint = " (declared: " + strings.Join(names, ", ") + ")"
			}
			return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("--var %s: the workflow declares no var %q%s", k, k, hint),
				map[string]any{"var": k})
		}
	}
	out := make(map[string]any, len(w.Vars))
	for _, v := range w.Vars {
		text, given := supplied[v.Name]
		switch {
		case given:
			val, err := convertVar(v, text)
			if err != nil {
				return nil, spec.NewError(spec.CodeVarRuntime, fmt.Sprintf("--var %s: %v", v.Name, err), map[string]any{"var": v.Name, "type": varType(v)})
			}
			out[v.Name] = val
		case v.Required:
			return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("var %q is required: pass --var %s=<%s>", v.Name, v.Name, varType(v)),
				map[string]any{"var": v.Name})
		default:
			out[v.Name] = v.Default
		}
	}
	return out, nil
}

// ResolveModels sets the model of every task whose model a var names (`model: ${{ vars.NAME }}`,
// Task.ModelVar) from the run's var values, before the run starts, so that the providers of
// the run are known (and their keys checked) before anything runs. A value that is not a model
// id is NIKA-VAR-006 (exit 2). It changes the tasks of w: a compiled workflow serves one run.
func ResolveModels(w *Workflow, vars map[string]any) *spec.Error {
	for _, t := range w.Tasks {
		if t.ModelVar != "" {
			m, err := modelFromVar(vars, t.ModelVar, fmt.Sprintf("task %q", t.ID), t.ID)
			if err != nil {
				return err
			}
			t.Model = m
		}
		for i, step := range t.OnFinally {
			if step.ModelVar != "" {
				m, err := modelFromVar(vars, step.ModelVar, fmt.Sprintf("on_finally step %d of task %q", i, t.ID), t.ID)
				if err != nil {
					return err
				}
				step.Model = m
			}
		}
	}
	return nil
}

// modelFromVar is the model var name holds, or NIKA-VAR-006 saying what is wrong with it.
func modelFromVar(vars map[string]any, name, who, task string) (string, *spec.Error) {
	v := vars[name]
	s, isString := v.(string)
	msg, detail := spec.ModelProblem(s)
	switch {
	case v == nil:
		msg, detail = "it is not set", fmt.Sprintf("Pass --var %s=<provider>/<name>, or give the var a default.", name)
	case !isString:
		msg, detail = fmt.Sprintf("it is %v, not a string", v), "Pass a model id like `openai/gpt-4o-mini`."
	}
	if msg != "" {
		return "", spec.NewError(spec.CodeVarRuntime, fmt.Sprintf("%s takes its model from var %q: %s — %s", who, name, msg, detail),
			map[string]any{"var": name, "task": task})
	}
	return s, nil
}

func varType(v *spec.VarDecl) string {
	if v.Type == "" {
		return "string"
	}
	return v.Type
}

// convertVar applies the --var conversion of §2.1. An untyped var converts
// by the JSON type of its default; a null default means verbatim.
func convertVar(v *spec.VarDecl, text string) (any, error) {
	switch v.Type {
	case "", "string":
		return text, nil
	case "integer":
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil || strings.HasPrefix(text, "+") {
			return nil, fmt.Errorf("%q is not a base-10 integer", text)
		}
		return int(i), nil
	case "boolean":
		switch text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", text)
	case "number", "array", "object":
		val, err := decodeJSON(text)
		if err != nil {
			return nil, fmt.Errorf("%q is not JSON: %v", text, err)
		}
		ok := false
		switch val.(type) {
		case int, float64:
			ok = v.Type == "number"
		case []any:
			ok = v.Type == "array"
		case map[string]any:
			ok = v.Type == "object"
		}
		if !ok {
			return nil, fmt.Errorf("%q is not a JSON %s", text, v.Type)
		}
		return val, nil
	}
	return nil, fmt.Errorf("unknown type %q", v.Type)
}

// decodeJSON decodes one JSON value into the value model: integral
// numbers without fraction or exponent within int64 become int (§4.3).
func decodeJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return int(i)
			}
		}
		f, _ := strconv.ParseFloat(s, 64)
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

// ResolveSecrets reads every declared secret once, before the first task
// (§2.3): env secrets through lookup, file secrets relative to runDir minus
// one trailing newline. An unset or empty variable or an unreadable file is
// NIKA-VAR-001 (details.secret); so is a value shorter than 4 bytes, which
// masking could not hide (D24). Both refuse the run with exit 3.
func ResolveSecrets(w *Workflow, runDir string, lookup func(string) (string, bool)) (map[string]any, *spec.Error) {
	out := make(map[string]any, len(w.Secrets))
	for _, s := range w.Secrets {
		var val string
		switch s.Source {
		case "env":
			v, ok := lookup(s.Key)
			if !ok || v == "" {
				return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("secret %q: environment variable %s is unset or empty", s.Name, s.Key),
					map[string]any{"secret": s.Name})
			}
			val = v
		case "file":
			p := s.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(runDir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("secret %q: cannot read %s: %v", s.Name, s.Path, err),
					map[string]any{"secret": s.Name})
			}
			switch { // one trailing \n or \r\n, nothing else (§2.3)
			case bytes.HasSuffix(b, []byte("\r\n")):
				b = b[:len(b)-2]
			case bytes.HasSuffix(b, []byte("\n")):
				b = b[:len(b)-1]
			}
			val = string(b)
		default:
			return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("secret %q: source %q is not supported", s.Name, s.Source),
				map[string]any{"secret": s.Name})
		}
		if len(val) < 4 {
			return nil, spec.NewError(spec.CodeVarUnresolved, fmt.Sprintf("secret %q is shorter than 4 bytes and could not be masked", s.Name),
				map[string]any{"secret": s.Name})
		}
		out[s.Name] = val
	}
	return out, nil
}

// Mask is the replacement of every secret value (§2.3): six U+2022.
const Mask = "••••••"

// NewMasker returns a function that replaces each secret value with Mask
// (LANGUAGE.md §2.3, D24), in any of the forms it takes in what the engine
// writes: raw, JSON-escaped once (a secret inside a JSON text held in a
// string), and JSON-escaped twice (JSON inside JSON, as `tojson | tojson` or
// a tool's JSON-encoded field makes it: the secret a"b\c appears as
// a\\\"b\\\\c). The escaping is that of every encoder in play: canonical JSON
// and gojq (<>& raw), encoding/json (<>& as \u003c…, U+2028 and U+2029 as
// \u2028), gojq (DEL as \u007f), and any mix of them across the two levels.
// Deeper nesting, other escapings (\/, \uXXXX for any non-ASCII, upper-case
// hex) and base64 are not caught; masking is textual.
//
// Every occurrence of every form is found, overlapping ones included, and
// each run of overlapping occurrences becomes one Mask: a secret that
// contains another, or overlaps it ("hunter22" and "22abc" in
// "hunter22abc"), is masked whole, with no part of either left over.
// Adjacent occurrences stay separate masks.
func NewMasker(secrets map[string]any) func(string) string {
	seen := map[string]bool{}
	var forms []string
	for _, v := range secrets {
		s, ok := v.(string)
		if !ok || s == "" || seen[s] {
			continue
		}
		seen[s] = true
		forms = append(forms, s)
		level := []string{s}
		for range maxEscapes {
			var next []string
			for _, f := range level {
				for _, e := range jsonEscapes(f) {
					if !seen[e] {
						seen[e] = true
						forms = append(forms, e)
						next = append(next, e)
					}
				}
			}
			level = next
		}
	}
	if len(forms) == 0 {
		return func(s string) string { return s }
	}
	sort.Strings(forms) // deterministic, though the result does not depend on the order
	return (&masker{forms: forms}).mask
}

// maxEscapes is how many levels of JSON string escaping NewMasker undoes.
const maxEscapes = 2

// jsonEscapes returns the distinct bodies (without quotes) of s written as
// a JSON string by the encoders the engine uses (see NewMasker).
func jsonEscapes(s string) []string {
	var out []string
	for _, html := range []bool{false, true} {
		for _, lineSep := range []bool{false, true} {
			for _, del := range []bool{false, true} {
				if e := jsonEscape(s, html, lineSep, del); !containsString(out, e) {
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// jsonEscape writes s as the body of a JSON string: " and \ escaped, \b \f
// \n \r \t short, other control characters \u00xx; <>& (html), U+2028 and
// U+2029 (lineSep) and DEL (del) escaped as \u00xx when asked. Other bytes,
// invalid UTF-8 included, are kept.
func jsonEscape(s string, html, lineSep, del bool) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20, html && (c == '<' || c == '>' || c == '&'), del && c == 0x7f:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		case lineSep && c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			b.WriteString(`\u202`)
			b.WriteByte(hex[s[i+2]-0xa0])
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// masker replaces the occurrences of its forms by Mask.
type masker struct{ forms []string }

func (k *masker) mask(s string) string {
	type span struct{ from, to int }
	var spans []span
	for _, f := range k.forms {
		for i := 0; i+len(f) <= len(s); {
			j := strings.Index(s[i:], f)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(f)})
			i += j + 1 // overlapping occurrences of one form too ("abab" in "ababab")
		}
	}
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].from < spans[b].from })
	var b strings.Builder
	last, cur := 0, spans[0]
	flush := func() {
		b.WriteString(s[last:cur.from])
		b.WriteString(Mask)
		last = cur.to
	}
	for _, sp := range spans[1:] {
		if sp.from < cur.to { // overlaps: one mask for both
			cur.to = max(cur.to, sp.to)
			continue
		}
		flush()
		cur = sp
	}
	flush()
	b.WriteString(s[last:])
	return b.String()
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
