// Package jq compiles and runs the pure jq subset that nika accepts (LANGUAGE.md §3.6, DECISIONS.md D15)
// for output: bindings, nika:jq and nika:fetch jq mode, on top of github.com/itchyny/gojq.
package jq

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"strings"

	"github.com/itchyny/gojq"
)

// Error is a compile-time refusal: a syntax error, an import/include, or an impure builtin (D15).
type Error struct {
	Message string
	// Offset is the byte offset into the source where the problem starts, or -1 when unknown.
	Offset int
}

func (e *Error) Error() string { return e.Message }

// RunError is a jq runtime error (for instance `error("x")` or `.a` on a number).
type RunError struct {
	Message string
}

func (e *RunError) Error() string { return e.Message }

// Program is a compiled jq program. It is immutable and safe for concurrent use.
type Program struct {
	src  string
	code *gojq.Code
}

// String returns the source text of the program.
func (p *Program) String() string { return p.src }

// refusedFuncs are the impure builtins of D15, plus strflocaltime (gojq's strftime in the process's
// local time zone, impure for the same reason as localtime). They are refused under any arity.
var refusedFuncs = map[string]bool{
	"now": true, "mktime": true, "gmtime": true, "localtime": true, "strftime": true,
	"strflocaltime": true, "strptime": true, "input": true, "inputs": true,
	"input_filename": true, "env": true, "halt": true, "halt_error": true, "debug": true,
	"stderr": true,
}

// refusedVars are the variables of D15. gojq gives $ENV the (here empty) environment and does not
// define $__loc__ at all; both are refused statically.
var refusedVars = map[string]bool{"$ENV": true, "$__loc__": true}

// compilerOptions give gojq an empty environment (no module loader, no input iterator, no variables).
var compilerOptions = []gojq.CompilerOption{gojq.WithEnvironLoader(func() []string { return nil })}

// Compile parses and compiles a jq program for an output binding, nika:jq or nika:fetch jq mode.
//
// Refused with an *Error: syntax errors; import and include; calls of the impure builtins of D15
// (now, mktime, gmtime, localtime, strftime, strptime, input, inputs, input_filename, env, halt,
// halt_error, debug, stderr), plus strflocaltime; and references to $ENV or $__loc__. The program gets
// no variables, and the environment loader returns nothing, so env/$ENV could not leak the process
// environment even if they were let through.
//
// The check walks the syntax tree, so `.now`, `."env"`, `{now: 1}` and `"now"` are accepted. A call
// that resolves to a user definition or a closure parameter of the same name and arity (`def now: 1;
// now`, `def f(env): env; f(.)`) is the user's own function and is accepted. Variables are checked by
// name only: `$ENV` is refused even where the program binds it itself (`1 as $ENV | $ENV`).
//
// Offset locates syntax errors and refusals in the source; it is -1 when unknown (for instance
// "missing query" for a program made only of definitions).
func Compile(src string) (*Program, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, parseError(src, err)
	}
	if r := check(q); r != nil {
		return nil, refusal(src, r)
	}
	code, err := gojq.Compile(q, compilerOptions...)
	if err != nil {
		return nil, &Error{Message: "jq: " + err.Error(), Offset: -1}
	}
	return &Program{src: src, code: code}, nil
}

func parseError(src string, err error) *Error {
	var pe *gojq.ParseError
	if !errors.As(err, &pe) {
		return &Error{Message: "jq syntax error: " + err.Error(), Offset: -1}
	}
	// ParseError.Offset is the number of bytes read when the error occurred, that is the end of the
	// offending token.
	off := pe.Offset - len(pe.Token)
	if off < 0 || off > len(src) || src[off:min(off+len(pe.Token), len(src))] != pe.Token {
		off = min(max(pe.Offset, 0), len(src))
	}
	return &Error{Message: "jq syntax error: " + err.Error(), Offset: off}
}

// Run runs the program over one input value and returns every value it emits, in order; zero or
// several values are returned as they are (the caller maps count errors).
//
// The input is in the nika value model (nil, bool, integers, float64, string, []any, map[string]any,
// []byte); bytes become standard base64 strings, other integer kinds and float32 are widened, and
// json.Number, []string and map[string]string are converted. Any other type is an error. The input is
// never modified.
//
// Outputs are normalized: an integral float64 within int64 becomes int, a *big.Int within int64
// becomes int and any other *big.Int becomes float64, at every depth. NaN and ±Inf stay float64.
//
// A jq runtime error is returned as *RunError (with the values emitted before it discarded). When
// ctx is cancelled or its deadline passes, Run stops and returns ctx.Err().
func (p *Program) Run(ctx context.Context, input any) ([]any, error) {
	in, _, err := toJQ(input)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	iter := p.code.RunWithContext(ctx, in)
	var out []any
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if e, isErr := v.(error); isErr {
			if cerr := ctx.Err(); cerr != nil && (errors.Is(e, context.Canceled) || errors.Is(e, context.DeadlineExceeded)) {
				return nil, cerr
			}
			return nil, runError(e)
		}
		v, _ = fromJQ(v)
		out = append(out, v)
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return out, nil
}

func runError(err error) *RunError {
	var ve gojq.ValueError
	if errors.As(err, &ve) {
		if s, ok := ve.Value().(string); ok {
			return &RunError{Message: oneLine(s)}
		}
	}
	return &RunError{Message: oneLine(err.Error())}
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// toJQ converts a nika value to the values gojq accepts. Containers are copied only when a
// descendant changes (changed reports that), so the caller's value is never modified.
func toJQ(v any) (out any, changed bool, err error) {
	switch x := v.(type) {
	case nil, bool, int, float64, string, *big.Int:
		return v, false, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), true, nil
	case []any:
		var cp []any
		for i, e := range x {
			c, ch, err := toJQ(e)
			if err != nil {
				return nil, false, err
			}
			if ch && cp == nil {
				cp = make([]any, len(x))
				copy(cp, x)
			}
			if cp != nil {
				cp[i] = c
			}
		}
		if cp == nil {
			return x, false, nil
		}
		return cp, true, nil
	case map[string]any:
		var cp map[string]any
		for k, e := range x {
			c, ch, err := toJQ(e)
			if err != nil {
				return nil, false, err
			}
			if ch && cp == nil {
				cp = maps.Clone(x)
			}
			if cp != nil {
				cp[k] = c
			}
		}
		if cp == nil {
			return x, false, nil
		}
		return cp, true, nil
	case int8:
		return int(x), true, nil
	case int16:
		return int(x), true, nil
	case int32:
		return int(x), true, nil
	case int64:
		return int(x), true, nil
	case uint8:
		return int(x), true, nil
	case uint16:
		return int(x), true, nil
	case uint32:
		return int(x), true, nil
	case uint:
		return fromUint(uint64(x)), true, nil
	case uint64:
		return fromUint(x), true, nil
	case float32:
		return float64(x), true, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i), true, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, false, fmt.Errorf("jq: invalid number %q in input", string(x))
		}
		return f, true, nil
	case []string:
		cp := make([]any, len(x))
		for i, s := range x {
			cp[i] = s
		}
		return cp, true, nil
	case map[string]string:
		cp := make(map[string]any, len(x))
		for k, s := range x {
			cp[k] = s
		}
		return cp, true, nil
	default:
		return nil, false, fmt.Errorf("jq: unsupported input type %T", v)
	}
}

func fromUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int(u)
	}
	return new(big.Int).SetUint64(u)
}

// fromJQ normalizes a gojq output value (see Run). Containers are copied only when a descendant
// changes, so values shared with the input are never modified.
func fromJQ(v any) (out any, changed bool) {
	switch x := v.(type) {
	case float64:
		if i, ok := integral(x); ok {
			return i, true
		}
		return x, false
	case json.Number:
		// fromjson yields json.Number: integral within int64 → int (§3.6).
		if i, err := x.Int64(); err == nil {
			return int(i), true
		}
		f, err := x.Float64()
		if err != nil {
			return x.String(), true
		}
		if i, ok := integral(f); ok {
			return i, true
		}
		return f, true
	case *big.Int:
		if x.IsInt64() {
			return int(x.Int64()), true
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	case []any:
		var cp []any
		for i, e := range x {
			c, ch := fromJQ(e)
			if ch && cp == nil {
				cp = make([]any, len(x))
				copy(cp, x)
			}
			if cp != nil {
				cp[i] = c
			}
		}
		if cp == nil {
			return x, false
		}
		return cp, true
	case map[string]any:
		var cp map[string]any
		for k, e := range x {
			c, ch := fromJQ(e)
			if ch && cp == nil {
				cp = maps.Clone(x)
			}
			if cp != nil {
				cp[k] = c
			}
		}
		if cp == nil {
			return x, false
		}
		return cp, true
	}
	return v, false
}

// integral converts an integral float64 within int64 to int.
func integral(f float64) (int, bool) {
	// -2^63 is exactly representable; 2^63 is not an int64.
	if f >= -9223372036854775808.0 && f < 9223372036854775808.0 && f == math.Trunc(f) {
		return int(f), true
	}
	return 0, false
}
