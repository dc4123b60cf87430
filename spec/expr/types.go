package expr

import (
	"reflect"
	"time"

	"github.com/expr-lang/expr/checker/nature"
)

// Type is a static type of the value model (DECISIONS.md D13).
type Type uint8

// The static types. Int and Float are both numbers (see IsNumber).
const (
	// Any is an unknown type: anything may arrive at run time.
	Any Type = iota
	// Null is the type of `null`. In an Env it is treated as Any (D13: a
	// var with a null default is untyped).
	Null
	Bool
	Int
	Float
	String
	Array
	Object
)

var typeNames = [...]string{
	Any:    "any",
	Null:   "null",
	Bool:   "boolean",
	Int:    "integer",
	Float:  "number",
	String: "string",
	Array:  "array",
	Object: "object",
}

// String returns the name used in messages ("integer", "object", …).
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "any"
}

// IsNumber reports whether t is Int or Float.
func (t Type) IsNumber() bool { return t == Int || t == Float }

// Env is the static environment of an expression.
//
// vars, env and secrets map each declared name to its static type; tasks,
// with and item are Any, index is Int. Whether a root is in scope at a given
// position is the caller's decision from Program.Refs: Compile accepts every
// root and never fails on an undeclared vars.X, env.X, secrets.X, with.X or
// tasks.X (an undeclared name has type Any; secrets are always String).
type Env struct {
	// Vars maps declared vars to their static type (Any when unknown).
	Vars map[string]Type
	// Env maps declared env constants to their static type.
	Env map[string]Type
	// Secrets lists the declared secrets; every secret is a String, so the
	// list does not influence compilation. It is kept for callers that share
	// one Env between compilation and their own scope checks.
	Secrets []string
}

// The namespace roots.
const (
	RootVars    = "vars"
	RootEnv     = "env"
	RootSecrets = "secrets"
	RootTasks   = "tasks"
	RootWith    = "with"
	RootItem    = "item"
	RootIndex   = "index"
)

// roots lists the namespace roots, in alphabetical order.
var roots = [...]string{RootEnv, RootIndex, RootItem, RootSecrets, RootTasks, RootVars, RootWith}

func isRoot(name string) bool {
	switch name {
	case RootVars, RootEnv, RootSecrets, RootTasks, RootWith, RootItem, RootIndex:
		return true
	}
	return false
}

var (
	tBool     = reflect.TypeOf(false)
	tInt      = reflect.TypeOf(0)
	tFloat    = reflect.TypeOf(0.0)
	tString   = reflect.TypeOf("")
	tArray    = reflect.TypeOf([]any(nil))
	tObject   = reflect.TypeOf(map[string]any(nil))
	tBytes    = reflect.TypeOf([]byte(nil))
	tTime     = reflect.TypeOf(time.Time{})
	tDuration = reflect.TypeOf(time.Duration(0))
)

// natureOf returns the checker nature of a static type. Each call builds
// fresh TypeData: the checker caches lazily inside natures, so natures are
// never shared between compilations.
func natureOf(t Type) nature.Nature {
	switch t {
	case Bool:
		return nature.FromType(tBool)
	case Int:
		return nature.FromType(tInt)
	case Float:
		return nature.FromType(tFloat)
	case String:
		return nature.FromType(tString)
	case Array:
		return nature.FromType(tArray)
	case Object:
		return openMap(nil, nature.Nature{})
	}
	return nature.Nature{} // Any, and Null (D13: a null default is any)
}

// openMap is the nature of a map[string]any with the given known fields whose
// other keys have the nature def.
func openMap(fields map[string]nature.Nature, def nature.Nature) nature.Nature {
	n := nature.FromType(tObject)
	n.TypeData = &nature.TypeData{Fields: fields, DefaultMapValue: &def}
	return n
}

// typeOfNature maps the checker's result nature to the static type of the
// normalized result (LANGUAGE.md §4.3): times and durations become strings.
func typeOfNature(n *nature.Nature) Type {
	if n == nil {
		return Any
	}
	if n.Nil {
		return Null
	}
	if n.Type == nil {
		return Any
	}
	switch {
	case n.Type == tTime || n.Type == tDuration:
		return String
	case n.IsInteger:
		return Int
	case n.IsFloat:
		return Float
	}
	switch n.Kind {
	case reflect.Bool:
		return Bool
	case reflect.String:
		return String
	case reflect.Slice, reflect.Array:
		if n.Type == tBytes {
			return Any
		}
		return Array
	case reflect.Map:
		return Object
	}
	return Any
}
