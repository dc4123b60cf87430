package schema

import (
	"maps"
	"slices"
	"strings"
)

// Known output shapes of producers that are not JSON Schemas (LANGUAGE.md §4.5, §5.5). They are
// shared values: do not modify them.
var (
	// StringShape is the output of infer/agent without schema and of exec with a text capture.
	StringShape any = map[string]any{"type": "string"}
	// StructuredExecShape is the output of exec with capture: structured.
	StructuredExecShape any = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"stdout":    map[string]any{"type": "string"},
			"stderr":    map[string]any{"type": "string"},
			"exit_code": map[string]any{"type": "integer"},
		},
		"additionalProperties": false,
	}
)

// ArrayOf returns the shape of a for_each producer whose iterations have shape doc:
// {"type": "array", "items": doc}.
func ArrayOf(doc any) any {
	return map[string]any{"type": "array", "items": doc}
}

// JSON types as a bit set.
const (
	tString = 1 << iota
	tNumber
	tInteger
	tBoolean
	tNull
	tArray
	tObject
	tOther // an unknown type name: accept everything
)

// openingKeywords make a schema level open: Walk accepts any path below it. They are the applicators
// and references other than properties, items and additionalProperties.
func opening(k string) bool {
	switch k {
	case "$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
		"dependentSchemas", "dependencies", "patternProperties", "prefixItems", "additionalItems",
		"unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames":
		return true
	}
	return false
}

// Walk reports whether a static path into a value described by the schema document doc is provably
// invalid (LANGUAGE.md §4.5, NIKA-VAR-003). Path steps are field names or decimal indexes, as
// strings; a step of ASCII digits (optionally after a '-') is an index.
//
// The walk follows only type, properties, items and additionalProperties. Any other applicator or
// reference ($ref, anyOf, allOf, oneOf, not, if/then/else, patternProperties, prefixItems,
// dependentSchemas, unevaluated*, contains, propertyNames…), a boolean schema, a missing schema, or
// an items that is not a single schema opens the level: everything below it is accepted. Annotations
// and plain assertions (title, enum, required, minLength…) do not open it.
//
// A step is rejected only when provably wrong: a field or an index on a string, number, integer or
// boolean; a field on an array; an index on an object (unless properties declares that very key); a
// key absent from properties under additionalProperties: false. A null accepts every step. When type
// is a list, the step is rejected only if every listed type rejects it. Without a type, nothing is
// rejected at that level, but a field step still follows properties/additionalProperties and an
// index step follows items when the level has no properties and no additionalProperties.
//
// Walk returns -1 and "" when the path is not provably invalid; otherwise the index of the rejected
// step and a one-line reason such as "'a.b' is a string; it has no field 'c'". It does not allocate
// unless it rejects.
func Walk(doc any, path []string) (bad int, reason string) {
	cur := doc
	for i, step := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return -1, ""
		}
		for k := range obj {
			if opening(k) {
				return -1, ""
			}
		}
		if k, present := obj["items"]; present {
			if _, isSchema := k.(map[string]any); !isSchema {
				if _, isBool := k.(bool); !isBool {
					return -1, "" // draft-07 tuple form
				}
			}
		}
		types, typed := typeSet(obj["type"])
		index := isIndex(step)
		props, _ := obj["properties"].(map[string]any)
		ap, hasAP := obj["additionalProperties"]

		if !typed {
			if !index {
				if next, ok := props[step]; ok {
					cur = next
				} else if hasAP {
					cur = ap
				} else {
					return -1, ""
				}
				continue
			}
			if props == nil && !hasAP {
				if next, ok := obj["items"]; ok {
					cur = next
					continue
				}
			}
			return -1, ""
		}

		var (
			accepting int // number of types that accept the step
			next      any
			follow    bool // the single accepting type leads to next
			apReject  bool // the object branch rejected a key under additionalProperties: false
		)
		if types&(tNull|tOther) != 0 {
			accepting++
		}
		if types&tArray != 0 && index {
			accepting++
			next, follow = obj["items"], true
		}
		if types&tObject != 0 {
			if p, ok := props[step]; ok {
				accepting++
				next, follow = p, true
			} else if !index {
				if b, isBool := ap.(bool); isBool && !b {
					apReject = true
				} else {
					accepting++
					next, follow = ap, hasAP
				}
			}
		}
		switch {
		case accepting == 0:
			return i, rejectReason(path, i, types, index, apReject, props)
		case accepting == 1 && follow:
			if next == nil {
				return -1, ""
			}
			cur = next
		default:
			return -1, ""
		}
	}
	return -1, ""
}

// typeSet parses the type keyword. typed is false when it is absent or malformed.
func typeSet(t any) (types int, typed bool) {
	switch x := t.(type) {
	case string:
		return typeBit(x), true
	case []any:
		if len(x) == 0 {
			return 0, false
		}
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return 0, false
			}
			types |= typeBit(s)
		}
		return types, true
	}
	return 0, false
}

func typeBit(s string) int {
	switch s {
	case "string":
		return tString
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "boolean":
		return tBoolean
	case "null":
		return tNull
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return tOther
}

func isIndex(step string) bool {
	step = strings.TrimPrefix(step, "-")
	if step == "" {
		return false
	}
	for i := 0; i < len(step); i++ {
		if step[i] < '0' || step[i] > '9' {
			return false
		}
	}
	return true
}

func rejectReason(path []string, i, types int, index, apReject bool, props map[string]any) string {
	subject := "the value"
	if i > 0 {
		subject = "'" + renderPath(path[:i]) + "'"
	}
	if apReject && types == tObject {
		known := slices.Sorted(maps.Keys(props))
		msg := subject + " has no field '" + path[i] + "' (additionalProperties is false"
		if len(known) > 0 {
			msg += "; known: " + strings.Join(known, ", ")
		} else {
			msg += " and no properties are declared"
		}
		return msg + ")"
	}
	var names []string
	for _, t := range []struct {
		bit  int
		name string
	}{
		{tString, "a string"}, {tNumber, "a number"}, {tInteger, "an integer"}, {tBoolean, "a boolean"},
		{tArray, "an array"}, {tObject, "an object"},
	} {
		if types&t.bit != 0 {
			names = append(names, t.name)
		}
	}
	msg := subject + " is " + strings.Join(names, " or ")
	if index {
		msg += "; it cannot be indexed with [" + path[i] + "]"
	} else {
		msg += "; it has no field '" + path[i] + "'"
	}
	if apReject {
		msg += " (as an object: additionalProperties is false)"
	}
	return msg
}

// renderPath writes steps as a.b[0].c.
func renderPath(steps []string) string {
	var sb strings.Builder
	for j, s := range steps {
		switch {
		case isIndex(s):
			sb.WriteString("[" + s + "]")
		case j > 0:
			sb.WriteString("." + s)
		default:
			sb.WriteString(s)
		}
	}
	return sb.String()
}
