// Package canon writes canonical JSON (LANGUAGE.md §0): compact, object keys sorted by byte order at
// every depth, no HTML escaping, valid UTF-8; it is used wherever nika renders, compares or hashes values.
package canon

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects. Deeper values (and cyclic maps or slices, which
// would otherwise recurse forever) are an error.
const MaxDepth = 10000

// Marshal returns the canonical JSON encoding of v.
//
// Encoding rules:
//   - nil → null; bool → true/false.
//   - int, int8…int64, uint, uint8…uint64, uintptr → decimal.
//   - float64 and float32 → the encoding/json format (shortest representation that round-trips, 'e'
//     notation below 1e-6 and from 1e21 on, so 1.0 → 1, 1e21 → 1e+21). NaN and ±Inf are an error.
//   - string → a JSON string: `"` and `\` are escaped, \b \f \n \r \t use their short escapes, other
//     control characters below U+0020 are \u00XX (lowercase hex); everything else, including `<>&`,
//     U+007F and U+2028/U+2029 (which JSON allows unescaped), is written as raw UTF-8. Invalid UTF-8
//     bytes are replaced by U+FFFD (written raw).
//   - []byte → standard base64 (with padding) string; a nil []byte is "".
//   - []any, []string → array; map[string]any, map[string]string → object with keys sorted by byte
//     order (after UTF-8 repair; two keys that collide after repair are an error).
//   - json.Number → its text verbatim (it must be a valid JSON number).
//   - json.RawMessage → parsed and re-emitted canonically; numbers keep their text verbatim and, for a
//     duplicated key, the last value wins (encoding/json semantics). A nil RawMessage is null.
//   - any other type → encoding/json.Marshal (so MarshalJSON, struct tags, time.Time… are honored),
//     then re-canonicalized like a json.RawMessage. Marshal errors are returned.
func Marshal(v any) ([]byte, error) {
	return Append(make([]byte, 0, 64), v)
}

// Append appends the canonical JSON encoding of v to dst and returns the extended buffer. On error,
// the returned slice is dst with unspecified bytes appended (its length is not restored); callers
// should discard it.
func Append(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

// Error reports a value that has no canonical JSON encoding.
type Error struct {
	Message string
}

func (e *Error) Error() string { return "canon: " + e.Message }

func errorf(format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

var errDepth = &Error{Message: "value nested deeper than " + strconv.Itoa(MaxDepth) + " levels (cyclic?)"}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return appendString(dst, x), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		return appendFloat(dst, x, 64)
	case map[string]any:
		return appendMap(dst, x, depth)
	case []any:
		if depth >= MaxDepth {
			return dst, errDepth
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case uintptr:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case float32:
		return appendFloat(dst, float64(x), 32)
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), nil
	case json.Number:
		if !isJSONNumber(string(x)) {
			return dst, errorf("invalid json.Number %q", string(x))
		}
		return append(dst, x...), nil
	case json.RawMessage:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendRaw(dst, x, depth)
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, e)
		}
		return append(dst, ']'), nil
	case map[string]string:
		return appendStringMap(dst, x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return dst, fmt.Errorf("canon: %T: %w", v, err)
		}
		return appendRaw(dst, b, depth)
	}
}

// appendFloat follows encoding/json's float encoder (ES6 number-to-string cutoffs).
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, errorf("unsupported number %s", strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// safe[b] is true for ASCII bytes written verbatim inside a string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// keyBufLen is the number of keys sorted without a heap allocation for the key slice.
const keyBufLen = 16

func appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if depth >= MaxDepth {
		return dst, errDepth
	}
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	var buf [keyBufLen]string
	keys, err := sortedKeys(buf[:0], m)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		if dst, err = appendValue(dst, m[k], depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendStringMap(dst []byte, m map[string]string) ([]byte, error) {
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	var buf [keyBufLen]string
	keys, err := sortedKeys(buf[:0], m)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, m[k])
	}
	return append(dst, '}'), nil
}

// sortedKeys returns the keys of m sorted by byte order. Keys with invalid UTF-8 are sorted by their
// repaired form (the form that is written); two keys equal after repair are an error.
func sortedKeys[V any](keys []string, m map[string]V) ([]string, error) {
	valid := true
	for k := range m {
		keys = append(keys, k)
		if valid && !utf8.ValidString(k) {
			valid = false
		}
	}
	if valid {
		slices.Sort(keys)
		return keys, nil
	}
	// appendString writes one U+FFFD per invalid byte; sort by exactly that form.
	repaired := func(k string) string {
		if utf8.ValidString(k) {
			return k
		}
		b := make([]byte, 0, len(k)+8)
		for i := 0; i < len(k); {
			r, size := utf8.DecodeRuneInString(k[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, k[i:i+size]...)
			}
			i += size
		}
		return string(b)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ra, rb := repaired(a), repaired(b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	for i := 1; i < len(keys); i++ {
		if repaired(keys[i-1]) == repaired(keys[i]) {
			return nil, errorf("object keys %q and %q are equal after UTF-8 repair", keys[i-1], keys[i])
		}
	}
	return keys, nil
}

// appendRaw re-canonicalizes JSON text.
func appendRaw(dst []byte, raw []byte, depth int) ([]byte, error) {
	if !json.Valid(raw) {
		return dst, &Error{Message: "invalid JSON text"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return dst, fmt.Errorf("canon: invalid JSON: %w", err)
	}
	return appendValue(dst, v, depth)
}

// isJSONNumber reports whether s matches the JSON number grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(s)
}

// Finite returns v with every NaN and ±Inf, which JSON cannot carry, replaced by nil, copying
// only the slices and maps it walks; the run report uses it to write such a value as null.
func Finite(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Finite(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Finite(e)
		}
		return out
	}
	return v
}
