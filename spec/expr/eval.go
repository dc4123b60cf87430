package expr

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// EvalError is a run-time evaluation failure, including a result that cannot
// be normalized into the value model. The caller maps it to NIKA-VAR-006,
// unless Interrupted(err) reports that the evaluation's context ended.
// (Rendering a bytes value into a string is NIKA-VAR-007, but that is the
// caller's check: Eval returns []byte as a legitimate value.)
type EvalError struct {
	Message string
	cause   error // ErrSteps, or the interruption; nil otherwise
}

func (e *EvalError) Error() string { return e.Message }

// Unwrap returns ErrSteps for an evaluation that ran out of steps, and the
// interruption (see Interrupted) for one whose context ended.
func (e *EvalError) Unwrap() error { return e.cause }

// Eval evaluates a compiled program. values holds the namespace roots:
// "vars", "env", "secrets" (map[string]any), "tasks" (map[string]any from
// task id to its record), "with" (map[string]any), "item" (any) and "index"
// (int); a missing root reads as null. Values must belong to the value model
// (nil, bool, int, float64, string, []any, map[string]any, []byte) and are
// never modified.
//
// The result is normalized (LANGUAGE.md §4.3): integer kinds become int,
// float32 becomes float64, typed slices and maps become []any and
// map[string]any (at every depth), a time.Time becomes an RFC 3339 UTC string
// with milliseconds and a time.Duration its Go string; any other type is an
// error. Errors are *EvalError. Eval is safe for concurrent use.
//
// Eval runs under a budget of its own, NewBudget(nil): MaxSteps steps, no
// cancellation.
func (p *Program) Eval(values map[string]any) (any, error) {
	return p.EvalBudget(values, nil)
}

// EvalBudget is Eval under a budget shared with other evaluations (nil: one
// of its own, with no context): it fails with an *EvalError that unwraps to
// ErrSteps once the budget's steps are spent, and with one for which
// Interrupted is true, within one loop iteration, once the budget's context
// is done (budget.go).
func (p *Program) EvalBudget(values map[string]any, b *Budget) (result any, err error) {
	defer func() {
		if r := recover(); r != nil { // expr's VM recovers its own panics; this guards normalization
			result, err = nil, &EvalError{Message: fmt.Sprintf("evaluation failed: %v", r)}
		}
	}()
	if p == nil || p.prog == nil {
		return nil, &EvalError{Message: "expression has compile errors"}
	}
	if b == nil {
		b = NewBudget(nil)
	}
	if err := b.stopped(); err != nil {
		return nil, &EvalError{Message: err.Error(), cause: err}
	}
	env := values
	if p.metered {
		env = make(map[string]any, len(values)+1)
		for k, v := range values {
			env[k] = v
		}
		env[stepKey] = b.step
	}
	var machine vm.VM
	machine.MemoryBudget = memoryBudget
	out, err := machine.Run(p.prog, env)
	if err != nil {
		var stop interrupted
		switch {
		case errors.As(err, &stop):
			return nil, &EvalError{Message: stop.Error(), cause: stop}
		case errors.Is(err, ErrSteps):
			return nil, &EvalError{Message: ErrSteps.Error(), cause: ErrSteps}
		}
		return nil, &EvalError{Message: runtimeMessage(err)}
	}
	v, err := Normalize(out)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func runtimeMessage(err error) string {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	msg = cleanMessage(msg)
	if strings.HasPrefix(msg, "invalid operation: ") && (strings.Contains(msg, "string + ") || strings.HasSuffix(msg, " + string")) {
		msg += " (`+` joins strings only; convert with string(x))"
	}
	return msg
}

const maxDepth = 10000

// Normalize converts a Go value into the value model (LANGUAGE.md §4.3), as
// Eval does with its result. Containers are copied only when something in
// them changes. Errors are *EvalError.
func Normalize(v any) (any, error) {
	left := maxValueNodes
	return normalize(v, 0, &left)
}

// maxValueNodes bounds the values Normalize visits. Values may share parts (`let b = [a, a]`), so a
// few doublings in an expression describe a value far larger than the memory it takes; without
// the bound its walk would run for minutes, out of reach of any task timeout.
const maxValueNodes = 10_000_000

func normalize(v any, depth int, left *int) (any, error) {
	if depth > maxDepth {
		return nil, &EvalError{Message: "value is nested too deeply"}
	}
	if *left--; *left < 0 {
		return nil, &EvalError{Message: fmt.Sprintf("value has more than %d elements; build a smaller value", maxValueNodes)}
	}
	switch x := v.(type) {
	case nil, bool, int, float64, string, []byte:
		return v, nil
	case []any:
		if x == nil {
			return []any{}, nil
		}
		var out []any
		for i, e := range x {
			n, err := normalize(e, depth+1, left)
			if err != nil {
				return nil, err
			}
			if out == nil && !same(n, e) {
				out = make([]any, len(x))
				copy(out, x[:i])
			}
			if out != nil {
				out[i] = n
			}
		}
		if out == nil {
			return x, nil
		}
		return out, nil
	case map[string]any:
		if x == nil {
			return map[string]any{}, nil
		}
		var out map[string]any
		for k, e := range x {
			n, err := normalize(e, depth+1, left)
			if err != nil {
				return nil, err
			}
			if out == nil && !same(n, e) {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			if out != nil {
				out[k] = n
			}
		}
		if out == nil {
			return x, nil
		}
		return out, nil
	case float32:
		return float64(x), nil
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000Z07:00"), nil
	case time.Duration:
		return x.String(), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int(u), nil
		}
		return float64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalize(rv.Index(i).Interface(), depth+1, left)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k, err := mapKey(it.Key())
			if err != nil {
				return nil, err
			}
			n, err := normalize(it.Value().Interface(), depth+1, left)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, &EvalError{Message: fmt.Sprintf("a value of Go type %T is not part of the value model", v)}
}

// same reports whether normalization left a value unchanged (for
// copy-on-write; only the kinds normalize returns as is need to match).
func same(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int:
		y, ok := b.(int)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || x != x && y != y)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []byte:
		y, ok := b.([]byte)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	return false
}

func mapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.Interface {
		k = k.Elem()
	}
	switch k.Kind() {
	case reflect.String:
		return k.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), nil
	case reflect.Bool:
		return strconv.FormatBool(k.Bool()), nil
	}
	if !k.IsValid() {
		return "", &EvalError{Message: "an object key is null"}
	}
	return "", &EvalError{Message: fmt.Sprintf("an object key of kind %s is not a string", kindName(k.Interface()))}
}
