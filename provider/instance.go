package provider

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds that keep S(s) finite on recursive or hostile schemas (tool parameters may come from MCP
// servers). Beyond them the instance is cut short: a deeper schema yields null, an array stops
// growing, a string stops being padded.
const (
	instanceMaxDepth = 128     // schema nesting followed, $ref hops included
	instanceMaxNodes = 100_000 // schemas visited plus array elements built
	instanceMaxBytes = 1 << 20 // bytes of padding
)

// MinimalInstance returns S(schema), the minimal instance of LANGUAGE.md §6.3, which the mock provider
// answers with and uses as tool-call arguments. schema is a decoded JSON Schema (bool or
// map[string]any, as from encoding/json or YAML), or a json.RawMessage / []byte to decode. The
// instance is best effort: callers validate it like any model output.
//
// Keywords are tried in this order, the first that applies decides:
//
//	not an object (true, false), or {}               null
//	const                                             the constant (a copy)
//	enum                                              its first element (a copy)
//	$ref (local: "#", "#/json/pointer", "#anchor")    S(target); a $ref that does not resolve is ignored
//	anyOf, oneOf, allOf                               S(first element)
//	type list                                         the first type that is not "null" (all "null": null)
//	no type                                           properties or required → object; items → array; else null
//	object     the required keys only, each S(properties[k]), else S(additionalProperties) (null if absent)
//	array      minItems elements (default 0), each S(prefixItems[i]), else S(items)
//	string     by format (see formatInstance), then padded with "x" to minLength code points
//	integer, number   0, raised to the lower bound if it is > 0, else lowered to the upper bound if it is < 0
//	boolean, null     false, null
//
// Numeric bounds: the lower bound is minimum, or exclusiveMinimum + 1, the larger of the two when both
// are present; the upper bound is maximum, or exclusiveMaximum − 1, the smaller of the two. For an
// integer a fractional bound is first rounded inward (minimum 2.5 → 3, exclusiveMinimum 2.5 → 3) so
// the instance stays an integer. Integral results are int, others float64.
func MinimalInstance(schema any) any {
	switch s := schema.(type) {
	case json.RawMessage:
		schema = decodeSchema(s)
	case []byte:
		schema = decodeSchema(s)
	}
	b := &instanceBuilder{nodes: instanceMaxNodes, bytes: instanceMaxBytes}
	return b.instance(schema, schema, 0)
}

func decodeSchema(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}

type instanceBuilder struct {
	nodes int // budget of schemas visited and array elements built
	bytes int // budget of padding bytes
}

// instance returns S(s); root is the document (or embedded resource) local $refs resolve against.
func (b *instanceBuilder) instance(s, root any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > instanceMaxDepth || b.nodes <= 0 {
		return nil
	}
	b.nodes--
	if id, ok := m["$id"].(string); ok && depth > 0 && id != "" && !strings.HasPrefix(id, "#") {
		root = m // an embedded resource: "#…" now means this schema
	}
	if c, ok := m["const"]; ok {
		return clone(c)
	}
	if e := list(m["enum"]); len(e) > 0 {
		return clone(e[0])
	}
	if ref, ok := m["$ref"].(string); ok {
		if t, ok := resolveRef(root, ref); ok {
			return b.instance(t, root, depth+1)
		}
	}
	for _, k := range [...]string{"anyOf", "oneOf", "allOf"} {
		if l := list(m[k]); len(l) > 0 {
			return b.instance(l[0], root, depth+1)
		}
	}
	typ, typed := schemaType(m["type"])
	if !typed {
		_, props := m["properties"]
		_, req := m["required"]
		_, items := m["items"]
		switch {
		case props || req:
			typ = "object"
		case items:
			typ = "array"
		default:
			return nil
		}
	}
	switch typ {
	case "object":
		return b.object(m, root, depth)
	case "array":
		return b.array(m, root, depth)
	case "string":
		return b.str(m)
	case "integer":
		return numberInstance(m, true)
	case "number":
		return numberInstance(m, false)
	case "boolean":
		return false
	}
	return nil // "null" and unknown types
}

func (b *instanceBuilder) object(m map[string]any, root any, depth int) any {
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	for _, k := range list(m["required"]) {
		key, ok := k.(string)
		if !ok {
			continue
		}
		if _, done := out[key]; done {
			continue
		}
		if ps, ok := props[key]; ok {
			out[key] = b.instance(ps, root, depth+1)
		} else {
			out[key] = b.instance(m["additionalProperties"], root, depth+1)
		}
	}
	return out
}

func (b *instanceBuilder) array(m map[string]any, root any, depth int) any {
	n, _ := count(m["minItems"])
	prefix := list(m["prefixItems"])
	items := m["items"]
	if l, ok := items.([]any); ok { // draft 2019-09 tuple form
		prefix, items = l, nil
	}
	out := make([]any, 0, min(n, 64))
	for i := 0; i < n && b.nodes > 0; i++ {
		b.nodes--
		if i < len(prefix) {
			out = append(out, b.instance(prefix[i], root, depth+1))
		} else {
			out = append(out, b.instance(items, root, depth+1))
		}
	}
	return out
}

func (b *instanceBuilder) str(m map[string]any) any {
	f, _ := m["format"].(string)
	s := formatInstance(f)
	n, _ := count(m["minLength"])
	if pad := min(n-utf8.RuneCountInString(s), b.bytes); pad > 0 {
		b.bytes -= pad
		s += strings.Repeat("x", pad)
	}
	return s
}

// formatInstance is the string instance for a `format` value (LANGUAGE.md §6.3).
func formatInstance(format string) string {
	switch format {
	case "date-time":
		return "1970-01-01T00:00:00Z"
	case "date":
		return "1970-01-01"
	case "time":
		return "00:00:00Z"
	case "email":
		return "user@example.com"
	case "uri", "url":
		return "https://example.com"
	case "uuid":
		return "00000000-0000-0000-0000-000000000000"
	case "hostname":
		return "example.com"
	case "ipv4":
		return "0.0.0.0"
	case "ipv6":
		return "::"
	}
	return ""
}

// schemaType reads `type`: a string, or the first non-"null" entry of a list ("null" when every entry
// is). typed is false when `type` is absent or unusable.
func schemaType(t any) (typ string, typed bool) {
	if s, ok := t.(string); ok {
		return s, true
	}
	l := list(t)
	if len(l) == 0 {
		return "", false
	}
	for _, e := range l {
		if s, ok := e.(string); ok && s != "null" {
			return s, true
		}
	}
	return "null", true
}

// list reads a JSON array given as []any or []string.
func list(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return nil
}

// clone deep-copies arrays and objects so an instance never aliases the schema.
func clone(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	}
	return v
}

// resolveRef resolves a local $ref ("#", "#/pointer", "#anchor") against root.
func resolveRef(root any, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return findAnchor(root, frag, 0)
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// findAnchor finds the schema whose $anchor (or $dynamicAnchor) is name, searching keys in sorted
// order so the answer never depends on map order.
func findAnchor(v any, name string, depth int) (any, bool) {
	if depth > instanceMaxDepth {
		return nil, false
	}
	switch x := v.(type) {
	case map[string]any:
		if a, _ := x["$anchor"].(string); a == name {
			return x, true
		}
		if a, _ := x["$dynamicAnchor"].(string); a == name {
			return x, true
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if t, ok := findAnchor(x[k], name, depth+1); ok {
				return t, true
			}
		}
	case []any:
		for _, e := range x {
			if t, ok := findAnchor(e, name, depth+1); ok {
				return t, true
			}
		}
	}
	return nil, false
}

// bound is a numeric keyword value: exact when i holds it exactly, f always holds it (maybe rounded).
type bound struct {
	f     float64
	i     int64
	exact bool
}

func floatBound(f float64) bound {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return bound{f: f, i: int64(f), exact: true}
	}
	return bound{f: f}
}

func readBound(v any) (bound, bool) {
	switch x := v.(type) {
	case int:
		return bound{f: float64(x), i: int64(x), exact: true}, true
	case int8:
		return readBound(int(x))
	case int16:
		return readBound(int(x))
	case int32:
		return readBound(int(x))
	case int64:
		return bound{f: float64(x), i: x, exact: true}, true
	case uint:
		return readBound(uint64(x))
	case uint8:
		return readBound(int(x))
	case uint16:
		return readBound(int(x))
	case uint32:
		return readBound(int64(x))
	case uint64:
		if x <= math.MaxInt64 {
			return readBound(int64(x))
		}
		return bound{f: float64(x)}, true
	case float32:
		return readBound(float64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return bound{}, false
		}
		return floatBound(x), true
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return bound{f: float64(i), i: i, exact: true}, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return bound{}, false
		}
		return floatBound(f), true
	}
	return bound{}, false
}

// add returns b + d (d is ±1), exactly when possible.
func (b bound) add(d int64) bound {
	if b.exact && !(d > 0 && b.i == math.MaxInt64) && !(d < 0 && b.i == math.MinInt64) {
		return bound{f: float64(b.i + d), i: b.i + d, exact: true}
	}
	return floatBound(b.f + float64(d))
}

func (b bound) less(c bound) bool {
	if b.exact && c.exact {
		return b.i < c.i
	}
	return b.f < c.f
}

func (b bound) sign() int {
	switch {
	case b.exact && b.i > 0, !b.exact && b.f > 0:
		return 1
	case b.exact && b.i < 0, !b.exact && b.f < 0:
		return -1
	}
	return 0
}

func (b bound) value() any {
	if b.exact {
		return int(b.i)
	}
	return b.f
}

// numberInstance is S(s) for "integer" (integer true) and "number".
func numberInstance(m map[string]any, integer bool) any {
	var lo, hi bound
	var hasLo, hasHi bool
	tighten := func(c bound, lower bool) {
		switch {
		case lower && (!hasLo || lo.less(c)):
			lo, hasLo = c, true
		case !lower && (!hasHi || c.less(hi)):
			hi, hasHi = c, true
		}
	}
	if v, ok := readBound(m["minimum"]); ok {
		if integer {
			v = floatBound(math.Ceil(v.f)).or(v)
		}
		tighten(v, true)
	}
	if v, ok := readBound(m["exclusiveMinimum"]); ok {
		if integer && !v.exact {
			v = floatBound(math.Floor(v.f))
		}
		tighten(v.add(1), true)
	}
	if v, ok := readBound(m["maximum"]); ok {
		if integer {
			v = floatBound(math.Floor(v.f)).or(v)
		}
		tighten(v, false)
	}
	if v, ok := readBound(m["exclusiveMaximum"]); ok {
		if integer && !v.exact {
			v = floatBound(math.Ceil(v.f))
		}
		tighten(v.add(-1), false)
	}
	out := bound{exact: true}
	if hasLo && lo.sign() > 0 {
		out = lo
	}
	if hasHi && hi.sign() < 0 {
		out = hi
	}
	return out.value()
}

// or keeps an exact original when rounding did not change it (ceil/floor of a large int64 goes
// through float64 and may round).
func (b bound) or(orig bound) bound {
	if orig.exact {
		return orig
	}
	return b
}

// count reads a non-negative integer keyword (minItems, minLength), rounding a fraction up and capping
// at instanceMaxBytes (the builder's budgets cut it further).
func count(v any) (int, bool) {
	b, ok := readBound(v)
	if !ok || b.sign() <= 0 {
		return 0, ok
	}
	if b.exact {
		return int(min(b.i, instanceMaxBytes)), true
	}
	return int(min(math.Ceil(b.f), instanceMaxBytes)), true
}
