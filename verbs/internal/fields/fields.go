// Package fields reads the evaluated verb body of a workflow.Job: string-typed fields rendered by the
// table of LANGUAGE.md §4.7, parameters that turn out invalid only after evaluation as NIKA-VAR-006
// (DECISIONS.md D27), and the NIKA-CANCEL-001 of a done context. It is shared by the verbs.
package fields

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Invalid is the NIKA-VAR-006 of a field whose evaluated value cannot be used.
func Invalid(field, format string, args ...any) *spec.Error {
	return spec.NewError(spec.CodeVarRuntime, fmt.Sprintf(format, args...), map[string]any{"field": field})
}

// String reads a string-typed field (§4.7): a string is used as it is, any other value is rendered
// by the §4.7 table (an array or object as canonical JSON; bytes are NIKA-VAR-007, NaN and ±Inf
// NIKA-VAR-006). ok is false when the field is absent.
func String(f map[string]any, name string) (s string, ok bool, err *spec.Error) {
	v, ok := f[name]
	if !ok {
		return "", false, nil
	}
	s, err = Render(name, v)
	return s, true, err
}

// Render renders one value of a string-typed field by the §4.7 table, naming the field in errors.
func Render(field string, v any) (string, *spec.Error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	s, err := workflow.Render(v)
	if err != nil {
		e := *err
		e.Message = fmt.Sprintf("`%s`: %s", field, err.Message)
		e.Details = copyMap(err.Details)
		e.Details["field"] = field
		return "", &e
	}
	return s, nil
}

// Number reads a numeric field as a float64. ok is false when the field is absent; a value that is
// not a finite number is NIKA-VAR-006.
func Number(f map[string]any, name string) (n float64, ok bool, err *spec.Error) {
	v, ok := f[name]
	if !ok {
		return 0, false, nil
	}
	switch x := v.(type) {
	case int:
		return float64(x), true, nil
	case int64:
		return float64(x), true, nil
	case float32:
		n = float64(x)
	case float64:
		n = x
	default:
		return 0, true, Invalid(name, "`%s` must be a number, not %s", name, kindOf(v))
	}
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, true, Invalid(name, "`%s` must be a finite number, not %v", name, n)
	}
	return n, true, nil
}

// Integer reads an integer field. An integral float (2.0) counts as an integer. ok is false when
// the field is absent; anything else is NIKA-VAR-006.
func Integer(f map[string]any, name string) (n int, ok bool, err *spec.Error) {
	v, ok := f[name]
	if !ok {
		return 0, false, nil
	}
	switch x := v.(type) {
	case int:
		return x, true, nil
	case int64:
		return int(x), true, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x), true, nil
		}
		return 0, true, Invalid(name, "`%s` must be an integer, not %v", name, x)
	}
	return 0, true, Invalid(name, "`%s` must be an integer, not %s", name, kindOf(v))
}

// Cancelled returns the NIKA-CANCEL-001 of a done context: it wraps ctx.Err() and
// context.Cause(ctx), so a caller whose context carries a task-deadline cause finds it with
// errors.Is and can tell a timeout from a user cancellation. extra, when non-nil, is wrapped too.
func Cancelled(ctx context.Context, extra error) *spec.Error {
	cause := context.Cause(ctx)
	wrapped := ctx.Err()
	if wrapped == nil {
		wrapped = context.Canceled
	}
	if cause != nil && !errors.Is(cause, wrapped) {
		wrapped = fmt.Errorf("%w: %w", wrapped, cause)
	}
	if extra != nil {
		wrapped = fmt.Errorf("%w (%w)", wrapped, extra)
	}
	msg := "cancelled"
	if cause != nil {
		msg = "cancelled: " + cause.Error()
	}
	return spec.NewError(spec.CodeCancel, msg, nil).Wrap(wrapped)
}

// KindOf names the value-model kind of v, for messages.
func KindOf(v any) string { return kindOf(v) }

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int, int64:
		return "an integer"
	case float64, float32:
		return "a number"
	case string:
		return "a string"
	case []byte:
		return "bytes"
	case []any, []string:
		return "an array"
	case map[string]any, map[string]string:
		return "an object"
	}
	return fmt.Sprintf("a value of Go type %T", v)
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
