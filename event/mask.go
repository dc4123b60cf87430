package event

import (
	"bytes"
	"encoding/json"

	"github.com/nikahq/nika/spec/canon"
)

// Masker replaces secrets in a string. JSON artefacts are masked per string value (D24): a masker is
// applied to every string value of Fields before encoding, never to keys, nor to the envelope (task ids
// and run ids are not secrets).
type Masker func(string) string

// MaskValue returns a copy of v in which every string value, at any depth, has gone through m; map keys
// are untouched and v is not modified. A nil m returns v itself.
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
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[m(k)] = maskValue(e, m, depth+1) // keys can carry a secret too (§2.3)
		}
		return out
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
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[m(k)] = m(e)
		}
		return out
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

// maskFields masks an event's payload; nil in, nil out.
func maskFields(f map[string]any, m Masker) map[string]any {
	if m == nil || f == nil {
		return f
	}
	return maskValue(f, m, 0).(map[string]any)
}
