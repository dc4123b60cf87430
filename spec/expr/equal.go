package expr

import (
	"bytes"
	"math"
	"reflect"
	"time"
)

// ---- equality (D14) ----

func fnEqual(args ...any) (any, error)    { return equal(args[0], args[1]), nil }
func fnNotEqual(args ...any) (any, error) { return !equal(args[0], args[1]), nil }

// number kinds for numeric comparison.
const (
	numNone = iota
	numInt
	numUint
	numFloat
)

type number struct {
	kind int
	i    int64
	u    uint64
	f    float64
}

func toNumber(v any) (number, bool) {
	switch x := v.(type) {
	case int:
		return number{kind: numInt, i: int64(x)}, true
	case float64:
		return number{kind: numFloat, f: x}, true
	case int64:
		return number{kind: numInt, i: x}, true
	case time.Duration:
		return number{}, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return number{kind: numInt, i: rv.Int()}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u <= math.MaxInt64 {
			return number{kind: numInt, i: int64(u)}, true
		}
		return number{kind: numUint, u: u}, true
	case reflect.Float32, reflect.Float64:
		return number{kind: numFloat, f: rv.Float()}, true
	}
	return number{}, false
}

// floatEqualsInt compares a float with an integer exactly (no rounding of the
// integer to the nearest float).
func floatEqualsInt(f float64, n number) bool {
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	if n.kind == numUint {
		return f >= 1<<63 && f < 1<<64 && uint64(f) == n.u
	}
	return f >= -(1<<63) && f < 1<<63 && int64(f) == n.i
}

func numbersEqual(a, b number) bool {
	switch {
	case a.kind == numFloat && b.kind == numFloat:
		return a.f == b.f
	case a.kind == numFloat:
		return floatEqualsInt(a.f, b)
	case b.kind == numFloat:
		return floatEqualsInt(b.f, a)
	case a.kind == numUint || b.kind == numUint:
		return a.kind == b.kind && a.u == b.u
	}
	return a.i == b.i
}

// equal is nika's deep equality: numbers compare numerically at every depth,
// values of different kinds are unequal, and it never fails.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int:
		if y, ok := b.(int); ok {
			return x == y
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x == y
		}
	case []any:
		if y, ok := b.([]any); ok {
			if len(x) != len(y) {
				return false
			}
			for i := range x {
				if !equal(x[i], y[i]) {
					return false
				}
			}
			return true
		}
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			if len(x) != len(y) {
				return false
			}
			for k, xv := range x {
				yv, ok := y[k]
				if !ok || !equal(xv, yv) {
					return false
				}
			}
			return true
		}
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case time.Duration:
		y, ok := b.(time.Duration)
		return ok && x == y
	}
	if b == nil {
		return false
	}
	if na, ok := toNumber(a); ok {
		nb, ok := toNumber(b)
		return ok && numbersEqual(na, nb)
	}
	return equalReflect(reflect.ValueOf(a), reflect.ValueOf(b))
}

func isByteSlice(v reflect.Value) bool {
	return v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8
}

func equalReflect(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return b.Kind() == reflect.String && a.String() == b.String()
	case reflect.Bool:
		return b.Kind() == reflect.Bool && a.Bool() == b.Bool()
	case reflect.Slice, reflect.Array:
		if b.Kind() != reflect.Slice && b.Kind() != reflect.Array {
			return false
		}
		if isByteSlice(a) != isByteSlice(b) {
			return false
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !equal(a.Index(i).Interface(), b.Index(i).Interface()) {
				return false
			}
		}
		return true
	case reflect.Map:
		if b.Kind() != reflect.Map || a.Len() != b.Len() {
			return false
		}
		am, aok := stringKeyed(a)
		bm, bok := stringKeyed(b)
		if !aok || !bok {
			return reflect.DeepEqual(a.Interface(), b.Interface())
		}
		for k, av := range am {
			bv, ok := bm[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	}
	if !a.IsValid() || !b.IsValid() || a.Type() != b.Type() || !a.Type().Comparable() {
		return false
	}
	return a.Equal(b)
}

// stringKeyed copies a map whose keys are all strings into a map[string]any.
func stringKeyed(m reflect.Value) (map[string]any, bool) {
	out := make(map[string]any, m.Len())
	it := m.MapRange()
	for it.Next() {
		k := it.Key()
		if k.Kind() == reflect.Interface {
			k = k.Elem()
		}
		if k.Kind() != reflect.String {
			return nil, false
		}
		out[k.String()] = it.Value().Interface()
	}
	return out, true
}

// ---- membership ----
