// Package catalog is the catalog of nika: builtins (LANGUAGE.md §7): for each one its name,
// description, parameter JSON Schema, output shape and static contract.
//
// It is the one source for `nika check` (CheckArgs), the runtime tools (argument schemas and
// the shared validators CheckGlob, ParseDateDuration and CheckDateFormat), the mock provider
// (which derives arguments from Params) and the agent router (which ranks Descriptions). What
// models and mocks see is pinned by testdata/catalog.golden.json, so every change to it is a
// reviewed diff.
//
// The catalog is built once at package initialisation and never changes afterwards; every
// function here is safe for concurrent use.
package catalog

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Builtin describes one nika: builtin.
//
// Values returned by All and Lookup are shared: callers must not mutate them (nor the slices
// and raw messages they hold).
type Builtin struct {
	// Name is the canonical tool name, e.g. "nika:read".
	Name string
	// Description is what a model reads to choose the tool: imperative, one or two sentences,
	// saying what the tool returns.
	Description string
	// Params is the JSON Schema 2020-12 of the args object:
	// {"type":"object","properties":{...},"required":[...],"additionalProperties":false} in
	// canonical JSON (sorted keys, compact). "required" is omitted when nothing is required.
	// Exception: nika:done and nika:compose carry the exact bytes of AGENT.md §3.2, which are
	// neither key-sorted nor closed.
	//
	// Params is flat on purpose: no top-level oneOf/anyOf/allOf/if (several providers refuse
	// them in tool definitions). Cross-argument rules (exactly one of, per-mode and per-op
	// arguments) are enforced by CheckArgs statically and by the tool at run time.
	Params json.RawMessage
	// Output is the JSON Schema of the output value in canonical JSON; `{}` when it can be any
	// value.
	Output json.RawMessage
	// Floor reports whether the builtin belongs to the v1 floor (✓ in LANGUAGE.md §7.1).
	Floor bool
	// AgentOnly reports builtins that exist only inside an agent loop (done, compose).
	AgentOnly bool
	// Effects lists the permits consulted, sorted: "fs.read", "fs.write", "net".
	Effects []string
	// Codes lists the builtin-specific codes it can raise, statically or at run time, sorted.
	// Generic codes (NIKA-BUILTIN-001, NIKA-INVOKE-002, NIKA-SEC-004/005) are not listed.
	Codes []string

	check   func(*call)           // cross-argument rules and own static codes
	special func(*call, int) bool // per-argument override of the generic checks
	lazy    *lazySchemas          // compiled Params, built on first CheckArgs
}

// registry is built once at init and never mutated afterwards.
var registry = newRegistry(definitions())

type reg struct {
	all    []*Builtin
	byName map[string]*Builtin
	names  []string
}

func newRegistry(defs []*Builtin) *reg {
	r := &reg{byName: make(map[string]*Builtin, len(defs))}
	for _, b := range defs {
		if _, dup := r.byName[b.Name]; dup {
			panic("catalog: duplicate builtin " + b.Name)
		}
		sort.Strings(b.Effects)
		sort.Strings(b.Codes)
		b.lazy = &lazySchemas{}
		r.byName[b.Name] = b
		r.all = append(r.all, b)
	}
	sort.Slice(r.all, func(i, j int) bool { return r.all[i].Name < r.all[j].Name })
	for _, b := range r.all {
		r.names = append(r.names, b.Name)
	}
	return r
}

// All returns every builtin, sorted by Name. The slice is fresh; the *Builtin values are
// shared and must not be mutated.
func All() []*Builtin {
	return append([]*Builtin(nil), registry.all...)
}

// Lookup returns the builtin with the canonical name (e.g. "nika:read").
func Lookup(name string) (*Builtin, bool) {
	b, ok := registry.byName[name]
	return b, ok
}

// Names returns the canonical names of every builtin, sorted. The slice is fresh.
func Names() []string {
	return append([]string(nil), registry.names...)
}

// PropertyNames returns the argument names of b, sorted.
func (b *Builtin) PropertyNames() []string {
	ps := b.schemas().propNames
	return append([]string(nil), ps...)
}

// Required returns the required argument names of b, in schema order.
func (b *Builtin) Required() []string {
	return append([]string(nil), b.schemas().required...)
}

// ---- canonical JSON construction ----

// obj is a JSON Schema (or any JSON object) under construction.
type obj = map[string]any

// canonical encodes v as canonical JSON: compact, keys sorted at every depth (encoding/json
// sorts map keys), no HTML escaping.
func canonical(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("catalog: " + err.Error())
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

type prop struct {
	name   string
	req    bool
	schema obj
}

func req(name string, s obj) prop { return prop{name: name, req: true, schema: s} }
func opt(name string, s obj) prop { return prop{name: name, schema: s} }

// params builds a closed object schema from properties, keeping "required" in argument order.
func params(ps ...prop) json.RawMessage {
	props := obj{}
	var required []any
	for _, p := range ps {
		props[p.name] = p.schema
		if p.req {
			required = append(required, p.name)
		}
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return canonical(s)
}

// object builds a closed object schema for an output shape; every listed property is required
// unless its name ends in "?".
func object(fields ...any) obj {
	props := obj{}
	var required []any
	for i := 0; i+1 < len(fields); i += 2 {
		name := fields[i].(string)
		if strings.HasSuffix(name, "?") {
			name = strings.TrimSuffix(name, "?")
		} else {
			required = append(required, name)
		}
		props[name] = fields[i+1]
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func typed(t, desc string) obj {
	s := obj{"type": t}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func str(desc string) obj     { return typed("string", desc) }
func boolean(desc string) obj { return typed("boolean", desc) }
func integer(desc string) obj { return typed("integer", desc) }

// anyValue is a property that accepts any JSON value.
func anyValue(desc string) obj { return obj{"description": desc} }

func enum(desc string, values ...string) obj {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	s := obj{"type": "string", "enum": vs}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// with returns s extended by the key/value pairs kv.
func with(s obj, kv ...any) obj {
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}
