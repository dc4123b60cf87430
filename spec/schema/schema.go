// Package schema compiles and applies the JSON Schemas of nika workflows (DECISIONS.md D16) and walks
// static output paths against a known shape to find provably invalid ones (LANGUAGE.md §4.5, VAR-003).
package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Error is a schema that cannot be compiled. The caller reports it as NIKA-PARSE-019.
type Error struct {
	Message string
	// Pointer is a JSON Pointer into the schema document where the problem is, when known ("" is
	// also the root).
	Pointer string
}

func (e *Error) Error() string { return e.Message }

// Violation is one reason an instance does not conform to a schema.
type Violation struct {
	Path    string // JSON Pointer into the instance ("" is the instance itself)
	Message string // one line
}

// Schema is a compiled JSON Schema. It is immutable and safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// baseURL names the document inside the compiler. It is opaque, so messages that mention it are
// rewritten to plain fragments ("#/…").
const baseURL = "urn:nika:schema"

var printer = message.NewPrinter(language.English)

// refusingLoader replaces the library's default loader, which reads file:// URLs.
type refusingLoader struct{}

func (refusingLoader) Load(u string) (any, error) {
	return nil, errors.New("no external schema documents are loaded")
}

// formatNames are the formats the library asserts by default for drafts before 2019-09. Registering
// them as no-ops keeps `format` an annotation in every draft.
var formatNames = []string{
	"json-pointer", "relative-json-pointer", "uuid", "duration", "period", "ipv4", "ipv6", "hostname",
	"email", "date", "time", "date-time", "uri", "iri", "uri-reference", "iri-reference",
	"uri-template", "semver",
}

func noFormat(any) error { return nil }

// Compile compiles a JSON Schema document (draft 2020-12 unless the document's $schema names another
// standard draft) that is already decoded: map[string]any, []any, bool, string, nil and numbers as
// int, int64, float64 or json.Number (any integer kind and float32 work too).
//
// There is no loader: a $ref, $dynamicRef or $recursiveRef that is not a fragment of the document
// ("#…") is an error, and so is a $schema that is not one of the standard drafts. The check is
// conservative: a string "$ref" member anywhere except inside const, enum, default and examples
// values counts, even under an unknown keyword. `format` is an annotation and is never asserted
// (except that draft-04/06/07 documents still check format "regex", which the library cannot turn
// off). Content keywords are not asserted either. Regular expressions are Go RE2.
func Compile(doc any) (*Schema, error) {
	var refs []refUse
	if err := checkRefs(doc, "", false, &refs); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	for _, name := range formatNames {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: noFormat})
	}
	if err := c.AddResource(baseURL, doc); err != nil {
		return nil, compileError(err, refs)
	}
	s, err := c.Compile(baseURL)
	if err != nil {
		return nil, compileError(err, refs)
	}
	return &Schema{s: s}, nil
}

// refUse is a local reference found in the document.
type refUse struct {
	pointer string // of the $ref member
	ref     string
}

var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// dataKeywords hold instance values, not schemas.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// nameMaps are the keywords whose value maps names to schemas.
var nameMaps = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependencies": true,
}

// checkRefs refuses non-fragment references and records the others with their location.
//
// names is true for the maps whose keys are names rather than keywords (the value of properties,
// $defs, …): there, "const" or "default" is a property name and its value a schema.
func checkRefs(v any, ptr string, names bool, refs *[]refUse) error {
	switch x := v.(type) {
	case map[string]any:
		for _, kw := range refKeywords {
			if names {
				break
			}
			r, ok := x[kw].(string)
			if !ok {
				continue
			}
			p := ptr + "/" + escapeToken(kw)
			if !strings.HasPrefix(r, "#") {
				return &Error{
					Message: fmt.Sprintf("%s %q at %s is not a fragment of this schema (\"#…\"); external schemas are not loaded", kw, r, displayPointer(p)),
					Pointer: p,
				}
			}
			*refs = append(*refs, refUse{pointer: p, ref: r})
		}
		keys := slices.Sorted(maps.Keys(x)) // deterministic: report the first offender in key order
		for _, k := range keys {
			if !names && dataKeywords[k] {
				continue
			}
			if err := checkRefs(x[k], ptr+"/"+escapeToken(k), !names && nameMaps[k], refs); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkRefs(e, ptr+"/"+strconv.Itoa(i), false, refs); err != nil {
				return err
			}
		}
	}
	return nil
}

func compileError(err error, refs []refUse) *Error {
	var (
		sve    *jsonschema.SchemaValidationError
		notPtr *jsonschema.JSONPointerNotFoundError
		notAnc *jsonschema.AnchorNotFoundError
		badRe  *jsonschema.InvalidRegexError
		dupID  *jsonschema.DuplicateIDError
		dupAnc *jsonschema.DuplicateAnchorError
		badID  *jsonschema.ParseIDError
		badAnc *jsonschema.ParseAnchorError
		load   *jsonschema.LoadURLError
	)
	switch {
	case errors.As(err, &sve):
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			if vs := violations(ve); len(vs) > 0 {
				v := vs[0]
				msg := "invalid schema at " + displayPointer(v.Path) + ": " + v.Message
				if len(vs) > 1 {
					msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
				}
				return &Error{Message: msg, Pointer: v.Path}
			}
		}
	case errors.As(err, &notPtr):
		frag := fragmentOf(notPtr.URL)
		return &Error{Message: fmt.Sprintf("$ref target #%s does not exist", frag), Pointer: refPointer(refs, frag)}
	case errors.As(err, &notAnc):
		frag := fragmentOf(notAnc.Reference)
		return &Error{Message: fmt.Sprintf("$ref anchor #%s does not exist", frag), Pointer: refPointer(refs, frag)}
	case errors.As(err, &badRe):
		p := fragmentOf(badRe.URL)
		return &Error{Message: fmt.Sprintf("invalid regular expression %q at %s: %v", badRe.Regex, displayPointer(p), badRe.Err), Pointer: p}
	case errors.As(err, &dupID):
		return &Error{Message: fmt.Sprintf("duplicate $id %q at %s and %s", dupID.ID, displayPointer(dupID.Ptr1), displayPointer(dupID.Ptr2)), Pointer: dupID.Ptr2}
	case errors.As(err, &dupAnc):
		return &Error{Message: fmt.Sprintf("duplicate anchor %q at %s and %s", dupAnc.Anchor, displayPointer(dupAnc.Ptr1), displayPointer(dupAnc.Ptr2)), Pointer: dupAnc.Ptr2}
	case errors.As(err, &badID):
		p := fragmentOf(badID.URL)
		return &Error{Message: "invalid $id at " + displayPointer(p), Pointer: p}
	case errors.As(err, &badAnc):
		p := fragmentOf(badAnc.URL)
		return &Error{Message: "invalid anchor at " + displayPointer(p), Pointer: p}
	case errors.As(err, &load):
		return &Error{Message: fmt.Sprintf("cannot load %q: only the standard $schema drafts are known and external schemas are not loaded", load.URL)}
	}
	return &Error{Message: oneLine(strings.ReplaceAll(err.Error(), baseURL, ""))}
}

// fragmentOf returns the decoded fragment of a URL (a JSON Pointer or an anchor name).
func fragmentOf(u string) string {
	_, frag, ok := strings.Cut(u, "#")
	if !ok {
		return ""
	}
	if dec, err := url.PathUnescape(frag); err == nil {
		return dec
	}
	return frag
}

// refPointer finds where a reference with the given fragment was written.
func refPointer(refs []refUse, frag string) string {
	for _, r := range refs {
		if fragmentOf(r.ref) == frag {
			return r.pointer
		}
	}
	return ""
}

// Validate returns the reasons v does not conform to the schema, sorted by Path then Message, or nil
// when it conforms. v is in the nika value model; bytes are validated as their base64 string, as
// they are written in JSON. A failed anyOf/oneOf is one violation whose message lists the failures
// of its branches.
//
// A value of a Go type outside the JSON model (a struct, a channel…) is reported as a violation at
// its location; validation of the rest is then skipped.
func (s *Schema) Validate(v any) []Violation {
	j, _, ok := convert(v)
	if !ok {
		p, t := findUnsupported(v, "")
		return []Violation{{Path: p, Message: fmt.Sprintf("value of Go type %s is not a JSON value", t)}}
	}
	err := s.s.Validate(j)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Path: "", Message: oneLine(err.Error())}}
	}
	return violations(ve)
}

func violations(ve *jsonschema.ValidationError) []Violation {
	var out []Violation
	collect(ve, &out)
	slices.SortFunc(out, func(a, b Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

func collect(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) == 0 {
		*out = append(*out, Violation{Path: pointer(e.InstanceLocation), Message: oneLine(e.ErrorKind.LocalizedString(printer))})
		return
	}
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames:
		// The library reports the causes of an invalid property name at an empty location.
		var branch []Violation
		for _, c := range e.Causes {
			collect(c, &branch)
		}
		msg := oneLine(e.ErrorKind.LocalizedString(printer))
		for i, b := range branch {
			if i == 0 {
				msg += ": "
			} else {
				msg += "; "
			}
			msg += b.Message
		}
		*out = append(*out, Violation{Path: pointer(e.InstanceLocation), Message: msg})
		return
	case *kind.AnyOf, *kind.OneOf:
		here := pointer(e.InstanceLocation)
		var branch []Violation
		for _, c := range e.Causes {
			collect(c, &branch)
		}
		var sb strings.Builder
		sb.WriteString(oneLine(e.ErrorKind.LocalizedString(printer)))
		sb.WriteString(": ")
		for i, b := range branch {
			if i > 0 {
				sb.WriteString("; ")
			}
			if b.Path != here {
				sb.WriteString("at " + displayPointer(b.Path) + ": ")
			}
			sb.WriteString(b.Message)
		}
		*out = append(*out, Violation{Path: here, Message: sb.String()})
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}

// pointer renders instance location tokens as a JSON Pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapeToken(t))
	}
	return sb.String()
}

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}

func displayPointer(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// convert converts nika values the validator does not know ([]byte, []string, map[string]string) to
// JSON values, copying containers only when a descendant changes. ok is false when v holds a type
// outside the JSON model.
func convert(v any) (out any, changed, ok bool) {
	switch x := v.(type) {
	case nil, bool, string, float64, float32, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v, false, true
	case []byte:
		return base64.StdEncoding.EncodeToString(x), true, true
	case []string:
		cp := make([]any, len(x))
		for i, s := range x {
			cp[i] = s
		}
		return cp, true, true
	case map[string]string:
		cp := make(map[string]any, len(x))
		for k, s := range x {
			cp[k] = s
		}
		return cp, true, true
	case []any:
		var cp []any
		for i, e := range x {
			c, ch, ok := convert(e)
			if !ok {
				return nil, false, false
			}
			if ch && cp == nil {
				cp = slices.Clone(x)
			}
			if cp != nil {
				cp[i] = c
			}
		}
		if cp == nil {
			return x, false, true
		}
		return cp, true, true
	case map[string]any:
		var cp map[string]any
		for k, e := range x {
			c, ch, ok := convert(e)
			if !ok {
				return nil, false, false
			}
			if ch && cp == nil {
				cp = maps.Clone(x)
			}
			if cp != nil {
				cp[k] = c
			}
		}
		if cp == nil {
			return x, false, true
		}
		return cp, true, true
	}
	return nil, false, false
}

// findUnsupported returns the location and Go type of the first (in key order) value convert
// refuses.
func findUnsupported(v any, ptr string) (string, string) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if _, _, ok := convert(e); !ok {
				return findUnsupported(e, ptr+"/"+strconv.Itoa(i))
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if _, _, ok := convert(x[k]); !ok {
				return findUnsupported(x[k], ptr+"/"+escapeToken(k))
			}
		}
	}
	return ptr, fmt.Sprintf("%T", v)
}
