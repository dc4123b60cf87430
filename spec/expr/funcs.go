package expr

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/builtin"
)

// Names of the internal functions the rewrites call. They contain '%', which
// the lexer never accepts in an identifier, so user code cannot name them.
const (
	fnEq         = "%eq"
	fnNe         = "%ne"
	fnIn         = "%in"
	fnHas        = "%has"
	fnBool       = "%bool"
	fnIdx        = "%idx"
	fnObj        = "%obj"
	fnSliceIdx   = "%sliceidx"
	fnContains   = "%contains"
	fnStartsWith = "%startsWith"
	fnEndsWith   = "%endsWith"
)

// User-visible functions added or overridden by nika.
const (
	fnSize = "size"
	fnHasU = "has"
	fnNow  = "now"
)

func typesOf(fns ...any) []reflect.Type {
	ts := make([]reflect.Type, len(fns))
	for i, f := range fns {
		ts[i] = reflect.TypeOf(f).Elem()
	}
	return ts
}

// nikaFunctions is the function table added to expr's configuration. It is
// built once and never mutated.
func nikaFunctions() []*builtin.Function {
	keys := builtinByName("keys")
	values := builtinByName("values")
	toPairs := builtinByName("toPairs")
	return []*builtin.Function{
		{Name: fnEq, Func: fnEqual, Types: typesOf(new(func(any, any) bool))},
		{Name: fnNe, Func: fnNotEqual, Types: typesOf(new(func(any, any) bool))},
		{Name: fnIn, Func: fnMember, Types: typesOf(new(func(any, any) bool))},
		{Name: fnHas, Func: fnHasPath, Types: typesOf(new(func(any, ...any) bool))},
		{Name: fnBool, Func: fnRequireBool, Types: typesOf(new(func(any, string) bool))},
		{Name: fnIdx, Func: fnIndex, Types: typesOf(new(func(any) any))},
		{Name: fnObj, Func: fnObject, Types: typesOf(new(func(any, string, bool) any))},
		{Name: fnSliceIdx, Func: fnSliceIndex, Types: typesOf(new(func(any) int))},
		{Name: fnContains, Func: stringOp("contains", strings.Contains), Types: typesOf(new(func(any, any) bool))},
		{Name: fnStartsWith, Func: stringOp("startsWith", strings.HasPrefix), Types: typesOf(new(func(any, any) bool))},
		{Name: fnEndsWith, Func: stringOp("endsWith", strings.HasSuffix), Types: typesOf(new(func(any, any) bool))},
		{Name: fnSize, Func: fnSizeOf, Validate: validateSize},
		{Name: fnHasU, Func: fnHasUnrewritten, Types: typesOf(new(func(any) bool))},
		{Name: "fromJSON", Func: fnFromJSON, Types: typesOf(new(func(string) any))},
		{Name: "toJSON", Func: fnToJSON, Types: typesOf(new(func(any) string))},
		{Name: "keys", Func: sortedMapFunc(keys.Func), Validate: keys.Validate},
		{Name: "values", Func: fnSortedValues, Validate: values.Validate},
		{Name: "toPairs", Func: fnSortedPairs, Validate: toPairs.Validate},
	}
}

func builtinByName(name string) *builtin.Function {
	id, ok := builtin.Index[name]
	if !ok {
		panic("expr: no builtin " + name)
	}
	return builtin.Builtins[id]
}

// kindName names the kind of a run-time value in messages.
func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []byte:
		return "bytes"
	case time.Time:
		return "time"
	case time.Duration:
		return "duration"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// fnMember implements `a in coll`: deep-equal membership in an array, key
// presence in an object; `in null` is false (as in expr).
func fnMember(args ...any) (any, error) {
	needle, coll := args[0], args[1]
	switch c := coll.(type) {
	case nil:
		return false, nil
	case []any:
		for _, v := range c {
			if equal(v, needle) {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		k, ok := needle.(string)
		if !ok {
			return false, nil
		}
		_, ok = c[k]
		return ok, nil
	case string, []byte:
		return nil, fmt.Errorf("`in` needs an array or an object on its right, got %s", kindName(coll))
	}
	rv := reflect.ValueOf(coll)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			if equal(rv.Index(i).Interface(), needle) {
				return true, nil
			}
		}
		return false, nil
	case reflect.Map:
		k := reflect.ValueOf(needle)
		if !k.IsValid() || k.Kind() != reflect.String {
			return false, nil
		}
		kt := rv.Type().Key()
		if !k.Type().AssignableTo(kt) {
			if !k.Type().ConvertibleTo(kt) || kt.Kind() != reflect.String {
				return false, nil
			}
			k = k.Convert(kt)
		}
		return rv.MapIndex(k).IsValid(), nil
	}
	return nil, fmt.Errorf("`in` needs an array or an object on its right, got %s", kindName(coll))
}

// ---- has() ----

// fnHasPath implements the rewritten has(e.k1…kn.f): args are the base value
// e followed by the selections. It is true iff every intermediate selection
// succeeds and the last one names a key present in an object (even with a
// null value); a missing or null intermediate, or any selection that would
// fail, gives false, never an error.
func fnHasPath(args ...any) (any, error) {
	cur := args[0]
	keys := args[1:]
	for i, k := range keys {
		last := i == len(keys)-1
		switch c := cur.(type) {
		case map[string]any:
			ks, ok := k.(string)
			if !ok {
				return false, nil
			}
			v, ok := c[ks]
			if !ok {
				return false, nil
			}
			if last {
				return true, nil
			}
			cur = v
			continue
		case nil:
			return false, nil
		}
		rv := reflect.ValueOf(cur)
		switch rv.Kind() {
		case reflect.Map:
			kv := reflect.ValueOf(k)
			if !kv.IsValid() || !kv.Type().AssignableTo(rv.Type().Key()) {
				return false, nil
			}
			v := rv.MapIndex(kv)
			if !v.IsValid() {
				return false, nil
			}
			if last {
				return true, nil
			}
			cur = v.Interface()
		case reflect.Slice, reflect.Array:
			if last {
				return false, nil
			}
			n, ok := toNumber(k)
			if !ok || n.kind == numUint {
				return false, nil
			}
			idx := n.i
			if n.kind == numFloat {
				if n.f != math.Trunc(n.f) || math.Abs(n.f) > 1<<53 {
					return false, nil
				}
				idx = int64(n.f)
			}
			l := int64(rv.Len())
			if idx < 0 {
				idx += l
			}
			if idx < 0 || idx >= l {
				return false, nil
			}
			cur = rv.Index(int(idx)).Interface()
		default:
			return false, nil
		}
	}
	return false, nil
}

func fnHasUnrewritten(...any) (any, error) {
	return nil, errors.New("has() needs a field selection such as has(e.f) or has(e['f'])")
}

// ---- booleans (D14) ----

// fnRequireBool returns its first argument if it is a boolean and fails
// otherwise; the second argument names the operation for the message.
func fnRequireBool(args ...any) (any, error) {
	if b, ok := args[0].(bool); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s needs a boolean, got %s", args[1], kindName(args[0]))
}

// ---- member access (D14) ----

// fnObject guards `x.f` (args: x, "f", optional): it returns x when x is an
// object, and null for a null x under `?.`; a null x without `?.` or any
// other kind of x is an error.
func fnObject(args ...any) (any, error) {
	switch x := args[0].(type) {
	case map[string]any:
		return x, nil
	case nil:
		if args[2].(bool) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot read field %s of null (use ?., ?? or has())", args[1])
	}
	if reflect.ValueOf(args[0]).Kind() == reflect.Map {
		return args[0], nil
	}
	return nil, fmt.Errorf("cannot read field %s of %s", args[1], withArticle(kindName(args[0])))
}

func withArticle(kind string) string {
	switch kind {
	case "null", "bytes":
		return kind
	case "integer", "array", "object":
		return "an " + kind
	}
	return "a " + kind
}

// ---- indexes (D14) ----

func integral(v any) (int, bool, error) {
	switch x := v.(type) {
	case int:
		return x, true, nil
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || x >= 1<<63 || x < -(1<<63) {
			return 0, false, fmt.Errorf("index must be an integer, got %s", strconv.FormatFloat(x, 'g', -1, 64))
		}
		return int(x), true, nil
	}
	n, ok := toNumber(v)
	if !ok {
		return 0, false, nil
	}
	switch n.kind {
	case numInt:
		return int(n.i), true, nil
	case numFloat:
		return integral(n.f)
	}
	return 0, false, fmt.Errorf("index %d is out of range", n.u)
}

// fnIndex checks a computed subscript: an integral number (as int) or a
// string; anything else is an error.
func fnIndex(args ...any) (any, error) {
	v := args[0]
	if s, ok := v.(string); ok {
		return s, nil
	}
	i, ok, err := integral(v)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("index must be an integer or a string, got %s", kindName(v))
	}
	return i, nil
}

// fnSliceIndex checks a slice bound: an integral number.
func fnSliceIndex(args ...any) (any, error) {
	i, ok, err := integral(args[0])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("slice bound must be an integer, got %s", kindName(args[0]))
	}
	return i, nil
}

// ---- strings ----

func stringOp(name string, f func(string, string) bool) func(...any) (any, error) {
	return func(args ...any) (any, error) {
		a, aok := args[0].(string)
		b, bok := args[1].(string)
		if !aok || !bok {
			return nil, fmt.Errorf("%s needs two strings, got %s and %s", name, kindName(args[0]), kindName(args[1]))
		}
		return f(a, b), nil
	}
}

// ---- size() ----

func fnSizeOf(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("size() takes one argument, got %d", len(args))
	}
	switch x := args[0].(type) {
	case string:
		return utf8.RuneCountInString(x), nil
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	case []byte:
		return len(x), nil
	}
	rv := reflect.ValueOf(args[0])
	switch rv.Kind() {
	case reflect.String:
		return utf8.RuneCountInString(rv.String()), nil
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len(), nil
	}
	return nil, fmt.Errorf("size() needs a string, an array, an object or bytes, got %s", kindName(args[0]))
}

func validateSize(args []reflect.Type) (reflect.Type, error) {
	if len(args) != 1 {
		return tInt, fmt.Errorf("size() takes one argument, got %d", len(args))
	}
	t := args[0]
	if t == nil { // the checker passes nil for the null literal
		return tInt, errors.New("size() needs a string, an array, an object or bytes, got null")
	}
	switch t.Kind() {
	case reflect.Interface, reflect.String, reflect.Slice, reflect.Array, reflect.Map:
		return tInt, nil
	}
	return tInt, fmt.Errorf("size() needs a string, an array, an object or bytes, got %s", typeName(t))
}

// typeName names a static Go type in messages.
func typeName(t reflect.Type) string {
	switch t {
	case tTime:
		return "time"
	case tDuration:
		return "duration"
	case tBytes:
		return "bytes"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map:
		return "object"
	case reflect.Interface:
		return "any"
	}
	return t.String()
}
