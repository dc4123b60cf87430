package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

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
