package event

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/nikahq/nika/spec/canon"
)

// Masker replaces secrets in a string. JSON artefacts are masked per string value (D24): a masker is
// applied to every string value and every map key of Fields before encoding (a secret can be a key,
// LANGUAGE.md §2.3), never to the envelope (task ids and run ids are not secrets).
type Masker func(string) string

// MaskValue returns a copy of v in which every string value and every map key, at any depth, has gone
// through m; v is not modified. A nil m returns v itself.
//
// Two distinct keys of one map that mask to the same text are both kept: taking the original keys in
// sorted order, the first keeps the masked text and each later one gets "#2", "#3", … appended (a
// suffix that another key of the map masks to is skipped). The result therefore depends only on the
// map's content, never on iteration order, and no entry is silently dropped.
//
// The JSON shapes (map[string]any, []any, []string, map[string]string, scalars, json.Number) keep their
// types. Any other type (a struct, a typed slice, json.RawMessage, time.Time…) is first turned into
// its canonical JSON value — exactly what the encoder would write — so no string escapes the mask; such a
// value that cannot be encoded is returned as is (encoding it fails anyway). []byte is copied unmasked:
// it is written as base64, in which a secret would not be recognised anyway.
func MaskValue(v any, m Masker) any {
	if m == nil {
		return v
	}
	return maskValue(v, m, 0)
}

func maskValue(v any, m Masker, depth int) any {
	if depth >= canon.MaxDepth {
		return v // a cycle or absurd depth: left for the encoder to refuse
	}
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
		float32, float64, json.Number:
		return x
	case string:
		return m(x)
	case map[string]any:
		if x == nil {
			return x
		}
		return maskMap(x, m, func(e any) any { return maskValue(e, m, depth+1) })
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e, m, depth+1)
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = m(e)
		}
		return out
	case map[string]string:
		if x == nil {
			return x
		}
		return maskMap(x, m, func(e string) string { return m(e) })
	case []byte:
		if x == nil {
			return x
		}
		return bytes.Clone(x)
	default:
		b, err := canon.Marshal(x)
		if err != nil {
			return x
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var g any
		if err := dec.Decode(&g); err != nil {
			return x
		}
		return maskValue(g, m, depth)
	}
}

// maskMap masks x's keys with m and its values with val (see MaskValue for colliding keys).
func maskMap[V any](x map[string]V, m Masker, val func(V) V) map[string]V {
	out := make(map[string]V, len(x))
	for k, e := range x {
		mk := m(k)
		if _, dup := out[mk]; dup {
			return maskMapColliding(x, m, val) // rare: redo in sorted key order
		}
		out[mk] = val(e)
	}
	return out
}

// maskMapColliding is maskMap for a map in which two keys mask to the same text: keys are taken in
// sorted order, and a masked key already used gets the first free "#n" suffix (n ≥ 2) that is neither
// used nor the masked text of another key.
func maskMapColliding[V any](x map[string]V, m Masker, val func(V) V) map[string]V {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	masked := make([]string, len(keys))
	natural := make(map[string]bool, len(keys))
	for i, k := range keys {
		masked[i] = m(k)
		natural[masked[i]] = true
	}
	out := make(map[string]V, len(x))
	for i, k := range keys {
		mk := masked[i]
		if _, used := out[mk]; used {
			for n := 2; ; n++ {
				c := mk + "#" + strconv.Itoa(n)
				if _, taken := out[c]; !taken && !natural[c] {
					mk = c
					break
				}
			}
		}
		out[mk] = val(x[k])
	}
	return out
}

// maskFields masks an event's payload; nil in, nil out.
func maskFields(f map[string]any, m Masker) map[string]any {
	if m == nil || f == nil {
		return f
	}
	return maskValue(f, m, 0).(map[string]any)
}
