package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/nikahq/nika/spec/internal/codes"
)

// CodeContract is the code of a literal argument that violates a builtin's contract
// (spec.CodeBuiltinArgs, which this package cannot import: spec imports it).
const CodeContract = codes.BuiltinArgs

// Arg is one argument value as the checker sees it.
type Arg struct {
	// Value is the literal value in the nika value model (nil, bool, int, float64, string,
	// []any, map[string]any); meaningful only when !Dynamic.
	Value any
	// Dynamic reports that the value is, or contains, an expression placeholder: its type is
	// unknown (but see StringTyped). A literal array or object holding a placeholder anywhere
	// is Dynamic as a whole.
	Dynamic bool
	// StringTyped reports a Dynamic value known to be a string: a mixed template such as
	// "a ${{ x }} b". It is checked for its type only.
	StringTyped bool
}

// NamedArg is one entry of an invoke's args mapping.
type NamedArg struct {
	Name string
	Arg
}

// Issue is one static violation found by CheckArgs.
type Issue struct {
	// Code is CodeContract or a builtin's own static code (NIKA-BUILTIN-GLOB-001, -GREP-001,
	// -JQ-001, -VALIDATE-001, -VALIDATE-002, -DATE-001).
	Code string
	// Arg is the argument concerned. It is "" for the args object as a whole: a missing
	// argument (required, or required by another argument) and exactly-one-of rules, which a
	// finding places at the parent mapping (LANGUAGE.md §9.1).
	Arg string
	// Message says what is wrong, in one line.
	Message string
	// Detail says how to fix it, with "did you mean" for unknown names and bad enum values.
	Detail string
}

// CheckArgs checks the args of one invoke of builtin b against its static contract
// (LANGUAGE.md §5.3, §7): unknown arguments, missing required ones, literal values against
// their property schema (type, enum, range, pattern, …), the cross-argument rules, and the
// builtin's own static codes.
//
// args is the args mapping in file order. Dynamic values skip every value check; StringTyped
// values are checked as "some string". When a name occurs twice, only the first occurrence is
// checked (the duplicate itself is NIKA-PARSE-017, reported by the YAML layer).
//
// Issues come in a deterministic order: per-argument issues in argument order, then missing
// required arguments in schema order, then cross-argument rules and own codes. An argument that
// drew an issue is not checked again by a later rule, so one mistake gives one issue.
//
// CheckArgs applies the closed contract to every builtin, including nika:done and
// nika:compose, whose AGENT.md parameter schemas do not say additionalProperties: false.
func CheckArgs(b *Builtin, args []NamedArg) []Issue {
	if b == nil {
		return nil
	}
	c := &call{b: b, comp: b.schemas(), args: args, first: map[string]int{}, bad: map[string]bool{}}
	for i, a := range args {
		if _, seen := c.first[a.Name]; !seen {
			c.first[a.Name] = i
		}
	}
	for i, a := range args {
		if c.first[a.Name] != i {
			continue
		}
		if b.special != nil && b.special(c, i) {
			continue
		}
		p, known := c.comp.props[a.Name]
		if !known {
			c.unknown(a.Name)
			continue
		}
		c.checkValue(a, p)
	}
	for _, r := range c.comp.required {
		if !c.has(r) {
			c.add(Issue{Message: fmt.Sprintf("missing required argument `%s` for `%s`", r, b.Name),
				Detail: fmt.Sprintf("Add `%s` to `args`%s.", r, describeSuffix(c.comp.props[r]))})
		}
	}
	if b.check != nil {
		b.check(c)
	}
	return c.issues
}

// call is the state of one CheckArgs run.
type call struct {
	b      *Builtin
	comp   *compiled
	args   []NamedArg
	first  map[string]int  // name → index of its first occurrence
	bad    map[string]bool // arguments that already drew an issue
	issues []Issue
}

func (c *call) add(is Issue) {
	if is.Code == "" {
		is.Code = CodeContract
	}
	if is.Arg != "" {
		c.bad[is.Arg] = true
	}
	c.issues = append(c.issues, is)
}

// fail adds a NIKA-BUILTIN-001 issue.
func (c *call) fail(arg, msg, detail string) {
	c.add(Issue{Arg: arg, Message: msg, Detail: detail})
}

// get returns the first occurrence of the argument, whatever its state.
func (c *call) get(name string) (Arg, bool) {
	i, ok := c.first[name]
	if !ok {
		return Arg{}, false
	}
	return c.args[i].Arg, true
}

func (c *call) has(name string) bool {
	_, ok := c.first[name]
	return ok
}

// literal returns the value of an argument that is present, literal and not yet reported.
func (c *call) literal(name string) (any, bool) {
	a, ok := c.get(name)
	if !ok || a.Dynamic || a.StringTyped || c.bad[name] {
		return nil, false
	}
	return a.Value, true
}

// str returns the value of a literal string argument not yet reported.
func (c *call) str(name string) (string, bool) {
	v, ok := c.literal(name)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// isString reports whether the argument is a string; known is false when it is absent,
// already reported, or dynamic without a known type.
func (c *call) isString(name string) (isStr, known bool) {
	a, ok := c.get(name)
	if !ok || c.bad[name] {
		return false, false
	}
	if a.StringTyped {
		return true, true
	}
	if a.Dynamic {
		return false, false
	}
	_, isStr = a.Value.(string)
	return isStr, true
}

func (c *call) unknown(name string) {
	msg := fmt.Sprintf("unknown argument `%s` for `%s`", name, c.b.Name)
	if s := suggest(name, c.comp.propNames); s != "" {
		c.fail(name, msg, fmt.Sprintf("Rename it to `%s` (did you mean `%s`?) or remove it.", s, s))
		return
	}
	if len(c.comp.propNames) == 0 {
		c.fail(name, msg, fmt.Sprintf("Remove it: `%s` takes no arguments.", c.b.Name))
		return
	}
	c.fail(name, msg, fmt.Sprintf("Remove it; `%s` takes %s.", c.b.Name, list(c.comp.propNames)))
}

// checkValue checks one known argument against its property schema.
func (c *call) checkValue(a NamedArg, p *propSchema) {
	switch {
	case a.StringTyped:
		if !p.allowsString() {
			c.fail(a.Name, fmt.Sprintf("argument `%s` must be %s, but a text template always renders to a string", a.Name, typeList(p.types)),
				fmt.Sprintf("Make `%s` exactly one placeholder `${{ … }}` with nothing around it, so the value keeps its type.", a.Name))
		}
	case a.Dynamic:
	case p.schema != nil:
		if err := p.schema.Validate(a.Value); err != nil {
			c.add(schemaIssue(a.Name, p, err))
		}
	}
}

// ---- schema errors as issues ----

func schemaIssue(name string, p *propSchema, err error) Issue {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Issue{Code: CodeContract, Arg: name, Message: fmt.Sprintf("argument `%s` is invalid: %s", name, oneLine(err.Error()))}
	}
	leaves := leafErrors(ve, nil)
	sort.SliceStable(leaves, func(i, j int) bool {
		return strings.Join(leaves[i].InstanceLocation, "/") < strings.Join(leaves[j].InstanceLocation, "/")
	})
	if len(leaves) == 0 {
		leaves = []*jsonschema.ValidationError{ve}
	}
	leaf := leaves[0]
	subject := fmt.Sprintf("argument `%s`", name)
	nested := len(leaf.InstanceLocation) > 0
	if nested {
		subject = fmt.Sprintf("argument `%s` at `%s`", name, pointer(leaf.InstanceLocation))
	}
	is := Issue{Code: CodeContract, Arg: name}
	switch k := leaf.ErrorKind.(type) {
	case *kind.Type:
		want := typeList(k.Want)
		is.Message = fmt.Sprintf("%s must be %s, got %s", subject, want, article(k.Got))
		if nested {
			is.Detail = fmt.Sprintf("Make `%s` at `%s` %s.", name, pointer(leaf.InstanceLocation), want)
		} else {
			is.Detail = fmt.Sprintf("Give `%s` %s value%s.", name, want, describeSuffix(p))
		}
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		is.Message = fmt.Sprintf("%s has a bad value %s", subject, render(k.Got))
		is.Detail = fmt.Sprintf("Use one of %s", quotedList(want))
		if s, ok := k.Got.(string); ok {
			if sug := suggest(s, want); sug != "" {
				is.Detail += fmt.Sprintf(" (did you mean `%s`?)", sug)
			}
		}
		is.Detail += "."
	case *kind.Const:
		is.Message = fmt.Sprintf("%s must be %s, got %s", subject, render(k.Want), render(k.Got))
		is.Detail = fmt.Sprintf("Use %s.", render(k.Want))
	case *kind.Minimum:
		is.Message = fmt.Sprintf("%s is %s, below the minimum %s", subject, rat(k.Got), rat(k.Want))
		is.Detail = fmt.Sprintf("Use a value of at least %s.", rat(k.Want))
	case *kind.ExclusiveMinimum:
		is.Message = fmt.Sprintf("%s is %s; it must be greater than %s", subject, rat(k.Got), rat(k.Want))
		is.Detail = fmt.Sprintf("Use a value greater than %s.", rat(k.Want))
	case *kind.Maximum:
		is.Message = fmt.Sprintf("%s is %s, above the maximum %s", subject, rat(k.Got), rat(k.Want))
		is.Detail = fmt.Sprintf("Use a value of at most %s.", rat(k.Want))
	case *kind.ExclusiveMaximum:
		is.Message = fmt.Sprintf("%s is %s; it must be less than %s", subject, rat(k.Got), rat(k.Want))
		is.Detail = fmt.Sprintf("Use a value less than %s.", rat(k.Want))
	case *kind.MinLength:
		if k.Want == 1 {
			is.Message = fmt.Sprintf("%s must not be empty", subject)
		} else {
			is.Message = fmt.Sprintf("%s must be at least %d characters long, got %d", subject, k.Want, k.Got)
		}
		is.Detail = fmt.Sprintf("Give `%s` a non-empty value.", name)
	case *kind.Pattern:
		is.Message = fmt.Sprintf("%s %s does not match `%s`", subject, render(k.Got), k.Want)
		is.Detail = fmt.Sprintf("Use a value matching `%s`%s.", k.Want, describeSuffix(p))
	case *kind.MinItems:
		is.Message = fmt.Sprintf("%s must have at least %d element(s), got %d", subject, k.Want, k.Got)
		is.Detail = fmt.Sprintf("Add elements to `%s`.", name)
	default:
		// Generic: the library's own wording for this one error.
		is.Message = fmt.Sprintf("%s is invalid: %s", subject, kindText(leaf))
		is.Detail = fmt.Sprintf("Fix `%s`%s.", name, describeSuffix(p))
	}
	return is
}

// leafErrors collects the innermost validation errors.
func leafErrors(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = leafErrors(c, out)
	}
	return out
}

// ---- wording helpers ----

func describeSuffix(p *propSchema) string {
	if p == nil || p.desc == "" {
		return ""
	}
	return ": " + strings.TrimSuffix(lowerFirst(p.desc), ".")
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || n == 0 {
		return s
	}
	// Keep acronyms and code (`...`) as they are.
	if len(s) > n {
		r2, _ := utf8.DecodeRuneInString(s[n:])
		if r2 >= 'A' && r2 <= 'Z' {
			return s
		}
	}
	if r >= 'A' && r <= 'Z' {
		return string(r+('a'-'A')) + s[n:]
	}
	return s
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func typeList(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = article(t)
	}
	switch len(parts) {
	case 0:
		return "a value"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func list(names []string) string { return strings.Join(names, ", ") }

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}

// render shows a value in a message: canonical JSON between backticks, cut to 64 bytes.
func render(v any) string {
	s := string(canonicalOrString(v))
	if len(s) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return "`" + s + "`"
}

func canonicalOrString(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(fmt.Sprint(v))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
