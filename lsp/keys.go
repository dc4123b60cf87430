package lsp

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/nikahq/nika/spec"
)

// Key completion and key hover come from the JSON Schema that `nika schema`
// prints (spec.WorkflowSchema), so the editor offers exactly the keys the
// schema describes, with the schema's own descriptions. A path is a list of
// keys from the document root, "-" standing for the items of a sequence.

type schemaDoc = map[string]any

var workflowSchema = sync.OnceValue(func() schemaDoc {
	var doc schemaDoc
	if err := json.Unmarshal(spec.WorkflowSchema(), &doc); err != nil {
		panic("lsp: the embedded workflow schema is not JSON: " + err.Error()) // a build defect
	}
	return doc
})

// flatten resolves $ref and gathers the branches of allOf, anyOf, oneOf and
// if/then/else, so each schema a value may be checked against is listed
// (boolean schemas and `not` are left out: they add no keys).
func flatten(root, s schemaDoc, out []schemaDoc, depth int) []schemaDoc {
	if s == nil || depth > 16 {
		return out
	}
	out = append(out, s)
	if ref, ok := s["$ref"].(string); ok {
		out = flatten(root, lookupRef(root, ref), out, depth+1)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := s[k].([]any)
		for _, b := range list {
			sub, _ := b.(schemaDoc)
			out = flatten(root, sub, out, depth+1)
		}
	}
	for _, k := range []string{"then", "else"} {
		sub, _ := s[k].(schemaDoc)
		out = flatten(root, sub, out, depth+1)
	}
	return out
}

func lookupRef(root schemaDoc, ref string) schemaDoc {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(ref[2:], "/") {
		m, _ := cur.(schemaDoc)
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(schemaDoc)
	return m
}

// schemasAt returns the schemas that apply at a path (flattened).
func schemasAt(path []string) []schemaDoc {
	root := workflowSchema()
	cur := flatten(root, root, nil, 0)
	for _, step := range path {
		var next []schemaDoc
		for _, s := range cur {
			for _, sub := range childSchemas(s, step) {
				next = flatten(root, sub, next, 0)
			}
		}
		if len(next) == 0 {
			return nil
		}
		cur = next
	}
	return cur
}

// childSchemas are the schemas of one step below s: a named property (or
// additionalProperties, for maps such as vars), or "-", the items.
func childSchemas(s schemaDoc, step string) []schemaDoc {
	var out []schemaDoc
	if step == "-" {
		if it, ok := s["items"].(schemaDoc); ok {
			out = append(out, it)
		}
		return out
	}
	if props, ok := s["properties"].(schemaDoc); ok {
		if p, ok := props[step].(schemaDoc); ok {
			return append(out, p)
		}
	}
	if ap, ok := s["additionalProperties"].(schemaDoc); ok {
		out = append(out, ap)
	}
	return out
}

// keyInfo is one key the schema allows at a path, with its description.
type keyInfo struct {
	name, description string
}

// keysAt lists the keys allowed in the mapping at path, sorted.
func keysAt(path []string) []keyInfo {
	seen := map[string]string{}
	for _, s := range schemasAt(path) {
		props, _ := s["properties"].(schemaDoc)
		for name, p := range props {
			desc := describe(p)
			if old, ok := seen[name]; !ok || old == "" {
				seen[name] = desc
			}
		}
	}
	out := make([]keyInfo, 0, len(seen))
	for name, desc := range seen {
		out = append(out, keyInfo{name, desc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// describe is a schema's description, looking through one $ref.
func describe(p any) string {
	m, _ := p.(schemaDoc)
	if d, ok := m["description"].(string); ok {
		return d
	}
	if ref, ok := m["$ref"].(string); ok {
		if d, ok := lookupRef(workflowSchema(), ref)["description"].(string); ok {
			return d
		}
	}
	return ""
}

// keyDescription is the description of the key at the end of path.
func keyDescription(path []string) string {
	if len(path) == 0 {
		return ""
	}
	for _, s := range schemasAt(path[:len(path)-1]) {
		if props, ok := s["properties"].(schemaDoc); ok {
			if d := describe(props[path[len(path)-1]]); d != "" {
				return d
			}
		}
	}
	return ""
}

// enumsAt lists the literal values (enum, const) the schema allows at path.
func enumsAt(path []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range schemasAt(path) {
		if list, ok := s["enum"].([]any); ok {
			for _, v := range list {
				add(v)
			}
		}
		if v, ok := s["const"]; ok {
			add(v)
		}
	}
	sort.Strings(out)
	return out
}
