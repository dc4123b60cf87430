package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
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

// ---- fromJSON (D14) ----

// fnFromJSON decodes exactly one JSON value with UseNumber; numbers without
// fraction or exponent within int64 become int, the others float64
// (LANGUAGE.md §4.3).
func fnFromJSON(args ...any) (any, error) {
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("fromJSON needs a string, got %s", kindName(args[0]))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("fromJSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("fromJSON: unexpected data after the JSON value")
	}
	return jsonNumbers(v)
}

func jsonNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return jsonNumber(string(x))
	case []any:
		for i, e := range x {
			n, err := jsonNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case map[string]any:
		for k, e := range x {
			n, err := jsonNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	}
	return v, nil
}

// jsonNumber converts the text of a JSON number to the value model
// (LANGUAGE.md §4.3): a number without fraction or exponent within int64 is
// an int, any other number a float64.
func jsonNumber(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("invalid number %q", s)
	}
	return f, nil
}

// fnToJSON renders a value as canonical JSON (compact, object keys sorted,
// no HTML escaping, bytes as standard base64), like every rendering in nika,
// instead of expr's indented, HTML-escaped output.
func fnToJSON(args ...any) (any, error) {
	v, err := Normalize(args[0])
	if err != nil {
		return nil, fmt.Errorf("toJSON: %v", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("toJSON: %v", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// ---- deterministic keys(), values(), toPairs() ----

// sortedKeys returns the keys of a map in a deterministic order: strings by
// byte order, other keys by their formatted value.
func sortedKeys(rv reflect.Value) []reflect.Value {
	ks := rv.MapKeys()
	str := func(k reflect.Value) string {
		if k.Kind() == reflect.Interface {
			k = k.Elem()
		}
		if k.Kind() == reflect.String {
			return k.String()
		}
		return fmt.Sprint(k.Interface())
	}
	sort.Slice(ks, func(i, j int) bool { return str(ks[i]) < str(ks[j]) })
	return ks
}

func sortedMapFunc(orig func(...any) (any, error)) func(...any) (any, error) {
	return func(args ...any) (any, error) {
		if len(args) == 1 {
			if m, ok := args[0].(map[string]any); ok {
				out := make([]string, 0, len(m))
				for k := range m {
					out = append(out, k)
				}
				sort.Strings(out)
				res := make([]any, len(out))
				for i, k := range out {
					res[i] = k
				}
				return res, nil
			}
			if rv := reflect.ValueOf(args[0]); rv.Kind() == reflect.Map {
				ks := sortedKeys(rv)
				res := make([]any, len(ks))
				for i, k := range ks {
					res[i] = k.Interface()
				}
				return res, nil
			}
		}
		return orig(args...)
	}
}

func fnSortedValues(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
	}
	rv := reflect.ValueOf(args[0])
	if rv.Kind() != reflect.Map {
		return nil, fmt.Errorf("cannot get values from %s", kindName(args[0]))
	}
	ks := sortedKeys(rv)
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = rv.MapIndex(k).Interface()
	}
	return out, nil
}

func fnSortedPairs(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
	}
	rv := reflect.ValueOf(args[0])
	if rv.Kind() != reflect.Map {
		return nil, fmt.Errorf("cannot transform %s to pairs", kindName(args[0]))
	}
	ks := sortedKeys(rv)
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = []any{k.Interface(), rv.MapIndex(k).Interface()}
	}
	return out, nil
}
