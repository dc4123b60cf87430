package tools

import (
	"bytes"
	"context"
	"math"
	"strconv"
)

// Data builtins json_diff and json_merge_patch (LANGUAGE.md §7.4), over the nika value model.
//
// Kinds: null, boolean, number (int and float64 are one kind and compare by value, so 1 and
// 1.0 are equal), string, bytes, array, object. Bytes are their own kind: they equal only
// bytes with the same content, never a string (a kind change is a `replace`).

// runJSONDiff returns the deterministic RFC 6902 patch turning `before` into `after`: a list of
// {op, path, value?} objects, [] when the two are equal.
func runJSONDiff(_ context.Context, in *invocation) (any, error) {
	ops := []any{}
	diffValues(in.args["before"], in.args["after"], "", &ops)
	return ops, nil
}

// diffValues appends the operations turning a into b at the JSON Pointer path.
//
// The rules (§7.4): equal values give nothing; a change of kind, or of a scalar, gives one
// `replace`; objects are visited in sorted key order (only in a: `remove`, only in b: `add`,
// in both: recurse); arrays recurse over the common prefix, then `add` b's extra elements in
// ascending index order or `remove` a's extra elements from the highest index down, so every
// operation's path is valid when the patch is applied in order.
func diffValues(a, b any, path string, ops *[]any) {
	if valueKind(a) != valueKind(b) {
		*ops = append(*ops, patchOp("replace", path, b))
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y := b.(map[string]any)
		keys := make(map[string]bool, len(x)+len(y))
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			p := path + "/" + escapePointer(k)
			av, inA := x[k]
			bv, inB := y[k]
			switch {
			case inA && !inB:
				*ops = append(*ops, map[string]any{"op": "remove", "path": p})
			case !inA && inB:
				*ops = append(*ops, patchOp("add", p, bv))
			default:
				diffValues(av, bv, p, ops)
			}
		}
	case []any:
		y := b.([]any)
		common := min(len(x), len(y))
		for i := range common {
			diffValues(x[i], y[i], path+"/"+strconv.Itoa(i), ops)
		}
		for i := common; i < len(y); i++ {
			*ops = append(*ops, patchOp("add", path+"/"+strconv.Itoa(i), y[i]))
		}
		for i := len(x) - 1; i >= common; i-- {
			*ops = append(*ops, map[string]any{"op": "remove", "path": path + "/" + strconv.Itoa(i)})
		}
	default:
		if !scalarEqual(a, b) {
			*ops = append(*ops, patchOp("replace", path, b))
		}
	}
}

func patchOp(op, path string, value any) map[string]any {
	return map[string]any{"op": op, "path": path, "value": value}
}

// valueKind names the kind of a value-model value; int and float64 are both "number".
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, float64:
		return "number"
	case string:
		return "string"
	case []byte:
		return "bytes"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// scalarEqual compares two scalars of the same kind.
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case int, float64:
		return numberEqual(a, b)
	case []byte:
		return bytes.Equal(x, b.([]byte))
	}
	return a == b
}

// numberEqual compares two numbers by value, exactly: an int equals a float64 only when the
// float is integral and converts to that very int (float64(int) would round large ints).
func numberEqual(a, b any) bool {
	switch x := a.(type) {
	case int:
		switch y := b.(type) {
		case int:
			return x == y
		case float64:
			return floatIsInt(y, x)
		}
	case float64:
		switch y := b.(type) {
		case int:
			return floatIsInt(x, y)
		case float64:
			return x == y
		}
	}
	return false
}

func floatIsInt(f float64, i int) bool {
	// 2^63 itself is out of range: float64(math.MaxInt64) rounds up to it.
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return false
	}
	return int(f) == i
}

// runJSONMergePatch applies an RFC 7396 merge patch to `target` and returns the result. The
// arguments are not modified: every object on the patched path is copied.
func runJSONMergePatch(_ context.Context, in *invocation) (any, error) {
	return mergePatch(in.args["target"], in.args["patch"]), nil
}

// mergePatch is the algorithm of RFC 7396 §2: an object patch merges member by member (a null
// member deletes, any other recurses), and any other patch replaces the target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
	if ok {
		for k, v := range t {
			out[k] = v
		}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}
