package workflow

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/expr"
)

// Scope is what an expression sees at one position (LANGUAGE.md §4.2). The
// caller (the planner) fills only what the position may see.
type Scope struct {
	Vars, Env, Secrets map[string]any
	Tasks              map[string]any // task id -> record (map[string]any with status, output, error, started_at, ended_at, duration_ms, and binding names)
	With               map[string]any // nil when not visible
	Item               any
	Index              int
	HasItem            bool // inside for_each
}

// values is the namespace map handed to expr. A nil vars/env/secrets/tasks
// map reads as an empty object, so that `vars.x` is null rather than a
// member access on null; with, item and index are absent (null) when not
// visible.
func (s Scope) values() map[string]any {
	m := map[string]any{
		"vars":    orEmpty(s.Vars),
		"env":     orEmpty(s.Env),
		"secrets": orEmpty(s.Secrets),
		"tasks":   orEmpty(s.Tasks),
	}
	if s.With != nil {
		m["with"] = s.With
	}
	if s.HasItem {
		m["item"] = s.Item
		m["index"] = s.Index
	}
	return m
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Limits on what one evaluation may produce.
//
// The literal tree of a spec.Value shares aliased subtrees (the checker never
// expands aliases), so copying it is bounded like materializing a value
// (D12): 10,000 nodes or 1 MiB of expanded literal content. The checker has
// already refused larger trees; this is the run-time guard.
//
// Values computed by expressions are bounded separately and far more
// generously: a task output of 50,000 records or a 5 MiB file is ordinary
// data, not an alias bomb. The ceiling exists because expressions can build
// shared subtrees too (`let a = [x, x]; let b = [a, a]; …`), whose copy or
// rendering would otherwise grow exponentially.
const (
	maxLiteralNodes = 10_000
	maxLiteralBytes = 1 << 20
	maxValueNodes   = 1_000_000
	maxValueBytes   = 64 << 20
	maxDepth        = canon.MaxDepth
	numberBytes     = 8 // what a number counts against a byte budget, as in D12
)

// Eval evaluates a spec.Value tree: literals pass through (deep-copied where
// they are maps/slices so callers may mutate results), a *spec.Template that
// is exactly one placeholder keeps its type (§4.7 whole-string), any other
// template is rendered to a string with the §4.7 table (see Render).
// Expression results are deep-copied too, so the result never shares memory
// with the scope.
//
// Errors are *spec.Error: NIKA-VAR-006 for an evaluation failure, a value
// that cannot be rendered (NaN, ±Inf) or a result beyond the memory bounds,
// with details {expression, path} (path: the template's YAML path) when a
// template is at fault; NIKA-VAR-007 for bytes rendered into a string.
//
// The expressions of one Eval call share one step budget (expr.MaxSteps); a
// loop beyond it is NIKA-VAR-006. EvalContext also stops them once ctx is
// done.
func Eval(v spec.Value, s Scope) (any, *spec.Error) {
	return newEvaluator(s).literal(v, 0)
}

// EvalContext is Eval under ctx: once ctx is done, the expression being
// evaluated stops within one loop iteration and the error is
// NIKA-CANCEL-001 (the caller, who cancelled ctx, knows why: a task's
// timeout, a fail-fast, the user).
func EvalContext(ctx context.Context, v spec.Value, s Scope) (any, *spec.Error) {
	e := newEvaluator(s)
	e.budget = expr.NewBudget(ctx)
	return e.literal(v, 0)
}

// EvalString evaluates a string-typed field (prompt, system, a string
// command, cwd, stdin, exec.env values, URLs): a whole-string value that is
// not a string is rendered with the same table.
func EvalString(v spec.Value, s Scope) (string, *spec.Error) {
	e := newEvaluator(s)
	switch x := v.(type) {
	case string:
		return x, nil
	case *spec.Template:
		if x != nil && x.Whole() {
			part := &x.Parts[0]
			raw, err := e.run(x, part)
			if err != nil {
				return "", err
			}
			return e.render(raw, x, part)
		}
	}
	out, err := e.literal(v, 0)
	if err != nil {
		return "", err
	}
	if str, ok := out.(string); ok {
		return str, nil
	}
	return e.render(out, nil, nil)
}

// EvalBool evaluates a `when:` (a bool or a template): a non-boolean is
// NIKA-VAR-006.
func EvalBool(v spec.Value, s Scope) (bool, *spec.Error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case *spec.Template:
		if x == nil {
			break
		}
		out, err := newEvaluator(s).template(x)
		if err != nil {
			return false, err
		}
		if b, ok := out.(bool); ok {
			return b, nil
		}
		expression := x.Source
		if x.Whole() {
			expression = x.Parts[0].Text
		}
		return false, spec.NewError(spec.CodeVarRuntime,
			fmt.Sprintf("`when` must be a boolean, but `%s` is %s", expression, withArticle(kindOf(out))),
			map[string]any{"expression": expression, "path": x.Path})
	}
	return false, spec.NewError(spec.CodeVarRuntime,
		fmt.Sprintf("`when` must be a boolean, but it is %s", withArticle(kindOf(v))), nil)
}

// Render renders one value by the §4.7 table: a string as is, an integer in
// decimal, a float in Go's encoding/json format (NaN and ±Inf are
// NIKA-VAR-006), a boolean as true/false, null as "null", an array or object
// as canonical JSON (bytes inside it as base64, like every JSON output,
// §4.3), and a bytes value is NIKA-VAR-007. Values outside the model are
// normalized first (§4.3); one that does not normalize is NIKA-VAR-006.
func Render(v any) (string, *spec.Error) {
	return (&evaluator{valNodes: maxValueNodes, valBytes: maxValueBytes}).render(v, nil, nil)
}

// evaluator is one Eval call: the scope, the remaining budgets and the
// results of the programs already run (an aliased subtree holds the same
// template several times; expressions are pure, so each runs once).
type evaluator struct {
	values             map[string]any
	litNodes, litBytes int
	valNodes, valBytes int
	memo               map[*expr.Program]result
	dirty              bool         // a walk met a value outside the model
	budget             *expr.Budget // the step budget (and context) the expressions share
}

type result struct {
	v   any
	err *spec.Error
}

func newEvaluator(s Scope) *evaluator {
	return &evaluator{
		values:   s.values(),
		litNodes: maxLiteralNodes, litBytes: maxLiteralBytes,
		valNodes: maxValueNodes, valBytes: maxValueBytes,
		budget: expr.NewBudget(nil),
	}
}

// literal copies a literal tree, evaluating the templates inside it.
func (e *evaluator) literal(v spec.Value, depth int) (any, *spec.Error) {
	e.litNodes--
	if e.litNodes < 0 || e.litBytes < 0 || depth > maxDepth {
		return nil, errLiteralTooLarge()
	}
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case int, float64:
		e.litBytes -= numberBytes
		return x, nil
	case string:
		e.litBytes -= len(x)
		if e.litBytes < 0 {
			return nil, errLiteralTooLarge()
		}
		return x, nil
	case []any:
		if x == nil {
			return []any(nil), nil
		}
		out := make([]any, len(x))
		for i, it := range x {
			c, err := e.literal(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		if x == nil {
			return map[string]any(nil), nil
		}
		out := make(map[string]any, len(x))
		for k, it := range x {
			e.litBytes -= len(k)
			c, err := e.literal(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case *spec.Template:
		if x == nil {
			return nil, nil
		}
		return e.template(x)
	}
	// Not a literal kind (bytes, or a Go value a caller built): copy it as a
	// value, normalized.
	out, err := e.own(v, nil, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// template evaluates one template: the typed value of a whole-string one,
// the rendered text of any other.
func (e *evaluator) template(t *spec.Template) (any, *spec.Error) {
	if t.Whole() {
		part := &t.Parts[0]
		raw, err := e.run(t, part)
		if err != nil {
			return nil, err
		}
		return e.own(raw, t, part)
	}
	var b strings.Builder
	for i := range t.Parts {
		part := &t.Parts[i]
		if part.Program == nil {
			b.WriteString(part.Text)
			continue
		}
		raw, err := e.run(t, part)
		if err != nil {
			return nil, err
		}
		s, err := e.render(raw, t, part)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	e.valBytes -= b.Len() // the literal runs too: they are copied into the result
	if e.valBytes < 0 {
		return nil, errValueTooLarge(t, nil)
	}
	return b.String(), nil
}

// run evaluates one placeholder, once per evaluator.
func (e *evaluator) run(t *spec.Template, part *spec.TemplatePart) (any, *spec.Error) {
	if r, ok := e.memo[part.Program]; ok {
		return r.v, r.err
	}
	v, err := part.Program.EvalBudget(e.values, e.budget)
	var r result
	switch {
	case err != nil && expr.Interrupted(err):
		r.err = spec.NewError(spec.CodeCancel,
			fmt.Sprintf("evaluating `%s`: %s", part.Text, err.Error()), details(t, part)).Wrap(err)
	case err != nil:
		r.err = spec.NewError(spec.CodeVarRuntime,
			fmt.Sprintf("evaluating `%s`: %s", part.Text, err.Error()), details(t, part)).Wrap(err)
	default:
		r.v = v
	}
	if e.memo == nil {
		e.memo = map[*expr.Program]result{}
	}
	e.memo[part.Program] = r
	return r.v, r.err
}

// own returns a deep copy of an evaluated value, in the value model, charged
// against the value budget.
func (e *evaluator) own(v any, t *spec.Template, part *spec.TemplatePart) (any, *spec.Error) {
	out, err := e.walk(v, 0, true)
	if err != nil {
		return nil, err.at(t, part)
	}
	return out, nil
}

// render renders an evaluated value by the §4.7 table. An array or object is
// measured against the value budget first: it is rendered whole, so its
// expanded size is what matters.
func (e *evaluator) render(v any, t *spec.Template, part *spec.TemplatePart) (string, *spec.Error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int:
		return strconv.Itoa(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "null", nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", walkErrorf(spec.CodeVarRuntime, "%v cannot be rendered as text", x).at(t, part)
		}
		b, err := canon.Marshal(x)
		if err != nil {
			return "", walkErrorf(spec.CodeVarRuntime, "%s", err).at(t, part)
		}
		return string(b), nil
	case []byte:
		return "", walkErrorf(spec.CodeVarBytes, "a bytes value cannot be rendered into a string; pass it whole-string to an argument that takes bytes").at(t, part)
	case []any, map[string]any:
		e.dirty = false
		if _, err := e.walk(v, 0, false); err != nil {
			return "", err.at(t, part)
		}
		if e.dirty { // something inside is outside the model
			n, err := expr.Normalize(v)
			if err != nil {
				return "", walkErrorf(spec.CodeVarRuntime, "%s", err).at(t, part)
			}
			v = n
		}
		b, err := canon.Marshal(v)
		if err != nil {
			return "", walkErrorf(spec.CodeVarRuntime, "%s", strings.TrimPrefix(err.Error(), "canon: ")).at(t, part) // NaN, ±Inf or too deep, inside
		}
		return string(b), nil
	}
	n, err := expr.Normalize(v)
	if err != nil {
		return "", walkErrorf(spec.CodeVarRuntime, "%s", err).at(t, part)
	}
	if reflect.TypeOf(n) == reflect.TypeOf(v) { // cannot happen; guards the recursion
		return "", walkErrorf(spec.CodeVarRuntime, "a value of Go type %T is not part of the value model", v).at(t, part)
	}
	return e.render(n, t, part)
}

// walkError is an error found while walking a value, before the template it
// belongs to is known.
type walkError struct{ code, message string }

func walkErrorf(code, format string, args ...any) *walkError {
	return &walkError{code, fmt.Sprintf(format, args...)}
}

func (w *walkError) at(t *spec.Template, part *spec.TemplatePart) *spec.Error {
	if w == errBudget {
		return errValueTooLarge(t, part)
	}
	msg := w.message
	if part != nil {
		msg = fmt.Sprintf("evaluating `%s`: %s", part.Text, msg)
	}
	return spec.NewError(w.code, msg, details(t, part))
}

// errBudget reports an exhausted value budget.
var errBudget = &walkError{spec.CodeVarRuntime, "value budget exhausted"}

// walk copies (build) or only measures a value against the value budget.
// Values outside the model are normalized (copied, in measure mode, and
// flagged in e.dirty).
func (e *evaluator) walk(v any, depth int, build bool) (any, *walkError) {
	e.valNodes--
	if e.valNodes < 0 || e.valBytes < 0 {
		return nil, errBudget
	}
	if depth > maxDepth {
		return nil, walkErrorf(spec.CodeVarRuntime, "value nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case int, float64:
		e.valBytes -= numberBytes
		return x, nil
	case string:
		if e.valBytes -= len(x); e.valBytes < 0 {
			return nil, errBudget
		}
		return x, nil
	case []byte:
		if e.valBytes -= len(x); e.valBytes < 0 {
			return nil, errBudget
		}
		if !build || x == nil {
			return x, nil
		}
		return append(make([]byte, 0, len(x)), x...), nil
	case []any:
		if !build || x == nil {
			for _, it := range x {
				if _, err := e.walk(it, depth+1, false); err != nil {
					return nil, err
				}
			}
			return x, nil
		}
		out := make([]any, len(x))
		for i, it := range x {
			c, err := e.walk(it, depth+1, true)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		if !build || x == nil {
			for k, it := range x {
				e.valBytes -= len(k)
				if _, err := e.walk(it, depth+1, false); err != nil {
					return nil, err
				}
			}
			return x, nil
		}
		out := make(map[string]any, len(x))
		for k, it := range x {
			e.valBytes -= len(k)
			c, err := e.walk(it, depth+1, true)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	n, err := expr.Normalize(v)
	if err != nil {
		return nil, walkErrorf(spec.CodeVarRuntime, "%s", err)
	}
	if reflect.TypeOf(n) == reflect.TypeOf(v) { // cannot happen for a value outside the model; guards the recursion
		return nil, walkErrorf(spec.CodeVarRuntime, "a value of Go type %T is not part of the value model", v)
	}
	e.dirty = true
	e.valNodes++ // n is the same node, normalized
	return e.walk(n, depth, build)
}

func details(t *spec.Template, part *spec.TemplatePart) map[string]any {
	if t == nil {
		return nil
	}
	expression := t.Source
	if part != nil {
		expression = part.Text
	}
	return map[string]any{"expression": expression, "path": t.Path}
}

func errLiteralTooLarge() *spec.Error {
	return spec.NewError(spec.CodeVarRuntime,
		"the literal value is larger than the limit of 10,000 nodes or 1 MiB (counted with any aliases expanded); make it smaller, or build it in a task", nil)
}

func errValueTooLarge(t *spec.Template, part *spec.TemplatePart) *spec.Error {
	return spec.NewError(spec.CodeVarRuntime,
		fmt.Sprintf("the evaluated value exceeds %d nodes or %d MiB", maxValueNodes, maxValueBytes>>20), details(t, part))
}

// kindOf names the kind of a value of the model, as messages say it.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int:
		return "integer"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case []byte:
		return "bytes"
	case *spec.Template:
		return "string"
	}
	return fmt.Sprintf("a Go %T", v)
}

func withArticle(kind string) string {
	switch kind {
	case "null", "bytes":
		return kind
	case "integer", "array", "object":
		return "an " + kind
	}
	if strings.HasPrefix(kind, "a ") {
		return kind
	}
	return "a " + kind
}
