package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// lazySchemas holds the compiled Params of one catalog builtin, built on first use and
// immutable afterwards.
type lazySchemas struct {
	once sync.Once
	v    *compiled
}

type compiled struct {
	props     map[string]*propSchema
	propNames []string // sorted
	required  []string // schema order
}

type propSchema struct {
	name   string
	schema *jsonschema.Schema // nil when the subschema failed to compile
	types  []string           // the "type" keyword; nil means any type
	desc   string
}

func (p *propSchema) allowsString() bool {
	if p.types == nil {
		return true
	}
	for _, t := range p.types {
		if t == "string" {
			return true
		}
	}
	return false
}

// schemas returns the compiled Params of b. A Builtin that does not come from the catalog
// (a test double, say) is compiled on every call.
func (b *Builtin) schemas() *compiled {
	l := b.lazy
	if l == nil {
		return compileParams(b.Name, b.Params)
	}
	l.once.Do(func() { l.v = compileParams(b.Name, b.Params) })
	return l.v
}

// noLoader refuses every URL: schemas here never reach the network or the file system.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("no loader: only fragments of the same schema can be referenced")
}

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	return c
}

// compileSchema compiles one JSON Schema document given as raw JSON.
func compileSchema(loc string, raw []byte) (*jsonschema.Compiler, any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	c := newCompiler()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, nil, err
	}
	if _, err := c.Compile(loc); err != nil {
		return nil, nil, err
	}
	return c, doc, nil
}

func compileParams(name string, raw json.RawMessage) *compiled {
	out := &compiled{props: map[string]*propSchema{}}
	loc := "mem:///catalog/" + strings.NewReplacer(":", "_", "/", "_").Replace(name) + ".json"
	c, doc, err := compileSchema(loc, raw)
	if err != nil {
		// Params did not compile (a foreign Builtin: the catalog's own are tested). Still read
		// the property names, so the unknown and missing checks keep working; values go
		// unchecked.
		if err := json.Unmarshal(raw, &doc); err != nil {
			return out
		}
	}
	root, _ := doc.(map[string]any)
	props, _ := root["properties"].(map[string]any)
	for pname, ps := range props {
		p := &propSchema{name: pname}
		if m, ok := ps.(map[string]any); ok {
			switch t := m["type"].(type) {
			case string:
				p.types = []string{t}
			case []any:
				p.types = []string{}
				for _, e := range t {
					if s, ok := e.(string); ok {
						p.types = append(p.types, s)
					}
				}
			}
			p.desc, _ = m["description"].(string)
		}
		if c != nil {
			p.schema, _ = c.Compile(loc + "#/properties/" + escapePointer(pname))
		}
		out.props[pname] = p
		out.propNames = append(out.propNames, pname)
	}
	sort.Strings(out.propNames)
	if rs, ok := root["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				out.required = append(out.required, s)
			}
		}
	}
	return out
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// ---- literal schemas given to nika:validate ----

// checkSchemaLiteral reports why a literal JSON Schema given to nika:validate cannot be used:
// it does not compile under draft 2020-12, or it has a $ref that is not a fragment of itself
// (there is no loader, D16).
func checkSchemaLiteral(v any) error {
	if ref := externalRef(v); ref != "" {
		return errors.New("`$ref` `" + ref + "` points outside the schema; only fragments such as `#/$defs/item` are resolved")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return errors.New("the schema is not JSON: " + err.Error())
	}
	if _, _, err := compileSchema("mem:///validate/schema.json", raw); err != nil {
		return errors.New("the schema does not compile: " + schemaErrorText(err))
	}
	return nil
}

// schemaErrorText is the most specific reason a schema failed to compile, in one line.
func schemaErrorText(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		leaves := leafErrors(ve, nil)
		sort.SliceStable(leaves, func(i, j int) bool {
			return len(leaves[i].InstanceLocation) > len(leaves[j].InstanceLocation)
		})
		if len(leaves) > 0 {
			return fmt.Sprintf("at `%s`: %s", pointer(leaves[0].InstanceLocation), kindText(leaves[0]))
		}
	}
	return oneLine(err.Error())
}

// kindText is the library's wording of one validation error, without its location.
func kindText(e *jsonschema.ValidationError) string {
	text := (&jsonschema.ValidationError{ErrorKind: e.ErrorKind}).Error()
	return strings.TrimPrefix(oneLine(text), "at '': ")
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + escapePointer(t))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Keywords whose value is a schema, a map of schemas or a list of schemas.
var (
	schemaKeywords = []string{"additionalProperties", "items", "contains", "not", "if", "then", "else",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	refKeywords        = []string{"$ref", "$dynamicRef", "$recursiveRef"}
)

// externalRef returns the first reference in schema s that is not a same-document fragment.
// It walks schema positions only, so a "$ref" key inside const, enum or default is data.
func externalRef(s any) string {
	m, ok := s.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range refKeywords {
		if r, ok := m[k].(string); ok && !strings.HasPrefix(r, "#") {
			return r
		}
	}
	for _, k := range schemaKeywords {
		if r := externalRef(m[k]); r != "" {
			return r
		}
	}
	for _, k := range schemaMapKeywords {
		sub, _ := m[k].(map[string]any)
		keys := make([]string, 0, len(sub))
		for name := range sub {
			keys = append(keys, name)
		}
		sort.Strings(keys)
		for _, name := range keys {
			if r := externalRef(sub[name]); r != "" {
				return r
			}
		}
	}
	for _, k := range schemaListKeywords {
		list, _ := m[k].([]any)
		for _, e := range list {
			if r := externalRef(e); r != "" {
				return r
			}
		}
	}
	return ""
}

// oneLine folds a multi-line library message into one line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	return strings.Join(lines, "; ")
}
