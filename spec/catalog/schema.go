package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/nikahq/nika/spec/schema"
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

// checkSchemaLiteral reports why a literal JSON Schema given to nika:validate
// cannot be used, through the same compiler as every schema of nika
// (spec/schema: draft 2020-12, no loader, D16).
func checkSchemaLiteral(v any) error {
	if _, err := schema.Compile(v); err != nil {
		return errors.New("the schema does not compile: " + oneLine(err.Error()))
	}
	return nil
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

// oneLine folds a multi-line library message into one line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	return strings.Join(lines, "; ")
}
