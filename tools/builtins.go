package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools/netfloor"
)

// Codes used by this package.
const (
	codeUnknown   = spec.CodeInvokeUnknown
	codeArgs      = spec.CodeInvokeArgs
	codeFailed    = spec.CodeInvokeFailed
	codePermits   = spec.CodeSecPermits
	codeCancelled = spec.CodeCancel
)

// Call is one builtin invocation with resolved arguments.
type Call struct {
	// Name is the canonical tool name, e.g. "nika:read".
	Name string
	// Args are the resolved argument values in the nika value model (LANGUAGE.md §4.3): nil,
	// bool, int, float64, string, []byte, []any, map[string]any. Other integer kinds, float32,
	// json.Number, []string and map[string]string are accepted and normalized.
	Args map[string]any
	// Permits is the workflow's permits block; nil when it has none (only the floors apply).
	Permits *spec.Permits
	// RunDir is the run directory: relative paths and relative permits.fs globs resolve against
	// it. "" means the process's working directory.
	RunDir string
	// Emit receives the events a builtin produces: nika:log emits ("log", {level, message,
	// data?}) and nika:emit emits ("user_event", {event_type, payload}). Masking is the
	// receiver's job. nil drops them.
	Emit func(kind string, fields map[string]any)
	// Now is the engine clock read by nika:date op now and nika:wait until; nil means time.Now.
	Now func() time.Time
	// Workflow and Task name the running workflow and task (nika:notify puts them in its body;
	// nika:inspect reports them). Empty when unknown.
	Workflow, Task string
	// Inspect answers nika:inspect's views about the running workflow (the planner's
	// Job.Inspect); nil outside a run, where nika:inspect fails with NIKA-INVOKE-003.
	Inspect func(ctx context.Context, view string) (any, error)
	// CanPause: the caller can pause its run on a question (the invoke verb of a durable run,
	// D49). nika:prompt with nobody to ask and no default then returns a *Pause instead of
	// failing with NIKA-BUILTIN-PROMPT-001.
	CanPause bool
}

// Builtins runs the builtins of this build. It holds no global state; its zero value is not
// usable: construct it with NewBuiltins. It is safe for concurrent use.
type Builtins struct {
	impls map[string]*impl
	// Resolver resolves host names for nika:fetch and nika:notify, whose SSRF floor checks
	// every address it returns (tools/netfloor, D36); nil means net.DefaultResolver. Set it
	// before the first Execute.
	Resolver Resolver
	// Terminal is where nika:prompt asks its questions; nil means there is no TTY (prompts
	// then return their default). Set it before the first Execute.
	Terminal *Terminal
}

// Resolver resolves host names for the network builtins (netfloor.Resolver). *net.Resolver
// satisfies it; tests inject one that maps names to loopback without a DNS server.
type Resolver = netfloor.Resolver

// impl is one builtin of this build, with its catalog entry and its compiled Params.
type impl struct {
	run  func(ctx context.Context, in *invocation) (any, error)
	cat  *catalog.Builtin
	once sync.Once
	sch  *schema.Schema
	err  error
}

// NewBuiltins returns the builtins of this build: log, emit, assert, wait, read, write, jq,
// hash, uuid, date, validate and convert; edit, glob, grep, json_diff, json_merge_patch and
// prompt (which asks Builtins.Terminal); fetch and notify (their SSRF floor resolves through
// Builtins.Resolver).
func NewBuiltins() *Builtins {
	runs := map[string]func(context.Context, *invocation) (any, error){
		"nika:log":      runLog,
		"nika:emit":     runEmit,
		"nika:assert":   runAssert,
		"nika:wait":     runWait,
		"nika:read":     runRead,
		"nika:write":    runWrite,
		"nika:jq":       runJQ,
		"nika:hash":     runHash,
		"nika:uuid":     runUUID,
		"nika:date":     runDate,
		"nika:validate": runValidate,
		"nika:convert":  runConvert,
		"nika:inspect":  runInspect,

		"nika:edit":             runEdit,
		"nika:glob":             runGlob,
		"nika:grep":             runGrep,
		"nika:json_diff":        runJSONDiff,
		"nika:json_merge_patch": runJSONMergePatch,
		"nika:prompt":           runPrompt,
		"nika:fetch":            runFetch,
		"nika:notify":           runNotify,
	}
	b := &Builtins{impls: make(map[string]*impl, len(runs))}
	for name, run := range runs {
		cat, ok := catalog.Lookup(name)
		if !ok {
			continue // not in the catalog: never reachable through Execute
		}
		b.impls[name] = &impl{run: run, cat: cat}
	}
	return b
}

// Has reports whether name is a builtin of this build.
func (b *Builtins) Has(name string) bool {
	_, ok := b.impls[name]
	return ok
}

// Names returns the canonical names of the builtins of this build, sorted.
func (b *Builtins) Names() []string {
	out := make([]string, 0, len(b.impls))
	for n := range b.impls {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Execute checks and runs one builtin call. Every error is a *spec.Error:
//
//   - NIKA-INVOKE-001: an unknown name, or a catalog builtin that is not in this build (D10).
//   - NIKA-SEC-004: Permits is set and permits.tools does not admit the name; or an effectful
//     builtin's subject is outside permits.fs.
//   - NIKA-INVOKE-002: the arguments fail the catalog's Params schema, or its cross-argument
//     rules (catalog.CheckArgs on the resolved values; its NIKA-BUILTIN-001 becomes INVOKE-002,
//     its builtin-specific codes such as NIKA-BUILTIN-DATE-001 are kept). details.violations
//     lists [{path, message}], path a JSON Pointer into the args object.
//   - NIKA-CANCEL-001: ctx was done before the builtin started or while it waited (wait, jq).
//     The error wraps ctx.Err() and context.Cause(ctx), so a caller whose context carries a
//     task-deadline cause finds it with errors.Is and reports NIKA-TIMEOUT-001 instead.
//   - NIKA-INVOKE-003: the builtin panicked, or failed without a more specific code.
//   - the builtins' own codes (LANGUAGE.md §7.2-7.4).
func (b *Builtins) Execute(ctx context.Context, call Call) (out any, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	im, ok := b.impls[call.Name]
	if !ok {
		if _, inCatalog := catalog.Lookup(call.Name); inCatalog {
			return nil, spec.NewError(codeUnknown, fmt.Sprintf("builtin %s is not in this build", call.Name),
				map[string]any{"tool": call.Name})
		}
		return nil, spec.NewError(codeUnknown, fmt.Sprintf("unknown tool %q", call.Name), map[string]any{"tool": call.Name})
	}
	if call.Permits != nil && !spec.ToolAllowed(call.Permits.Tools, call.Name) {
		return nil, spec.NewError(codePermits, fmt.Sprintf("`permits.tools` does not admit %s", call.Name),
			map[string]any{"tool": call.Name, "gate": "tools"})
	}
	defer func() {
		if r := recover(); r != nil {
			out = nil
			err = spec.NewError(codeFailed, fmt.Sprintf("%s panicked: %v", call.Name, r), map[string]any{"tool": call.Name})
		}
	}()
	args, err := im.checkArgs(call.Name, call.Args)
	if err != nil {
		return nil, err
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	return im.run(ctx, &invocation{call: call, args: args, resolver: b.Resolver, terminal: b.Terminal})
}

// checkArgs normalizes the arguments and checks them against the static contract.
func (im *impl) checkArgs(name string, raw map[string]any) (map[string]any, error) {
	args := make(map[string]any, len(raw))
	for _, k := range sortedKeys(raw) {
		v, err := normalize(raw[k], 0)
		if err != nil {
			return nil, argsError(name, []violation{{Path: "/" + escapePointer(k), Message: fmt.Sprintf("argument `%s`: %s", k, err.Error())}})
		}
		args[k] = v
	}
	im.once.Do(func() {
		var doc any
		if err := json.Unmarshal(im.cat.Params, &doc); err != nil {
			im.err = err
			return
		}
		im.sch, im.err = schema.Compile(doc)
	})
	if im.err != nil {
		return nil, spec.NewError("", fmt.Sprintf("the parameter schema of %s does not compile: %v", name, im.err), nil)
	}
	if vs := im.sch.Validate(args); len(vs) > 0 {
		out := make([]violation, len(vs))
		for i, v := range vs {
			out[i] = violation{Path: v.Path, Message: v.Message}
		}
		return nil, argsError(name, out)
	}
	named := make([]catalog.NamedArg, 0, len(args))
	for _, k := range sortedKeys(args) {
		a := catalog.Arg{Value: args[k]}
		if containsBytes(args[k]) {
			// Bytes are a runtime-only kind the static contract cannot type; the builtin
			// checks them itself.
			a = catalog.Arg{Dynamic: true}
		}
		named = append(named, catalog.NamedArg{Name: k, Arg: a})
	}
	issues := catalog.CheckArgs(im.cat, named)
	var contract []violation
	for _, is := range issues {
		if is.Code == catalog.CodeContract {
			contract = append(contract, issueViolation(is))
		}
	}
	if len(contract) > 0 {
		return nil, argsError(name, contract)
	}
	if len(issues) > 0 {
		is := issues[0]
		return nil, spec.NewError(is.Code, is.Message, map[string]any{"tool": name, "arg": is.Arg, "hint": is.Detail})
	}
	return args, nil
}

type violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func issueViolation(is catalog.Issue) violation {
	p := ""
	if is.Arg != "" {
		p = "/" + escapePointer(is.Arg)
	}
	msg := is.Message
	if is.Detail != "" {
		msg += " — " + is.Detail
	}
	return violation{Path: p, Message: msg}
}

// argsError is the NIKA-INVOKE-002 of a call whose arguments break the contract.
func argsError(name string, vs []violation) *spec.Error {
	list := make([]any, len(vs))
	for i, v := range vs {
		list[i] = map[string]any{"path": v.Path, "message": v.Message}
	}
	first := vs[0].Message
	if vs[0].Path != "" && !strings.HasPrefix(first, "argument") {
		first = "at " + vs[0].Path + ": " + first
	}
	msg := fmt.Sprintf("invalid arguments for %s: %s", name, first)
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return spec.NewError(codeArgs, msg, map[string]any{"tool": name, "violations": list})
}

// cancelled returns the NIKA-CANCEL-001 error of a done context, or nil.
func cancelled(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return cancelError(ctx)
}

func cancelError(ctx context.Context) *spec.Error {
	cause := context.Cause(ctx)
	wrapped := ctx.Err()
	if cause != nil && !errors.Is(cause, wrapped) {
		wrapped = fmt.Errorf("%w: %w", ctx.Err(), cause)
	}
	msg := "cancelled"
	if cause != nil {
		msg = "cancelled: " + cause.Error()
	}
	return spec.NewError(codeCancelled, msg, nil).Wrap(wrapped)
}

// ---- one invocation ----

// invocation is one call being run, with its normalized arguments.
type invocation struct {
	call     Call
	args     map[string]any
	resolver Resolver  // Builtins.Resolver, for the network floor
	terminal *Terminal // Builtins.Terminal, for nika:prompt
}

func (in *invocation) now() time.Time {
	if in.call.Now != nil {
		return in.call.Now()
	}
	return time.Now()
}

func (in *invocation) emit(kind string, fields map[string]any) {
	if in.call.Emit != nil {
		in.call.Emit(kind, fields)
	}
}

func (in *invocation) has(name string) bool {
	_, ok := in.args[name]
	return ok
}

// str returns a string argument, def when it is absent. The schema has already checked the
// type, except for bytes, which it sees as base64 strings.
func (in *invocation) str(name, def string) (string, error) {
	v, ok := in.args[name]
	if !ok {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", in.typeError(name, "a string", v)
	}
	return s, nil
}

func (in *invocation) boolean(name string, def bool) (bool, error) {
	v, ok := in.args[name]
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, in.typeError(name, "a boolean", v)
	}
	return b, nil
}

func (in *invocation) typeError(name, want string, got any) *spec.Error {
	return argsError(in.call.Name, []violation{{Path: "/" + escapePointer(name),
		Message: fmt.Sprintf("argument `%s` must be %s, got %s", name, want, kindOf(got))}})
}

// badValue is the NIKA-INVOKE-002 of a string argument of the right type but a wrong value.
func (in *invocation) badValue(name, value, want string) *spec.Error {
	return argsError(in.call.Name, []violation{{Path: "/" + escapePointer(name),
		Message: fmt.Sprintf("argument `%s` %q is not %s", name, value, want)}})
}

// fail builds one of the builtin's own errors.
func (in *invocation) fail(code, format string, args ...any) *spec.Error {
	return spec.NewError(code, fmt.Sprintf(format, args...), nil)
}

// ---- the value model ----

const maxDepth = 10000

// normalize converts a resolved value to the nika value model, or says why it is not one.
func normalize(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("the value is nested too deeply (cyclic?)")
	}
	switch x := v.(type) {
	case nil, bool, string, int, float64, []byte:
		return v, nil
	case int8:
		return int(x), nil
	case int16:
		return int(x), nil
	case int32:
		return int(x), nil
	case int64:
		return int(x), nil
	case uint:
		return fromUint(uint64(x)), nil
	case uint8:
		return int(x), nil
	case uint16:
		return int(x), nil
	case uint32:
		return int(x), nil
	case uint64:
		return fromUint(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return numberValue(string(x))
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of Go type %T is not a nika value", v)
}

func fromUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int(u)
	}
	return float64(u)
}

// numberValue converts JSON number text: an integer within int64 becomes int, anything else
// float64 (LANGUAGE.md §4.3).
func numberValue(s string) (any, error) {
	var n json.Number = json.Number(s)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := n.Int64(); err == nil {
			return int(i), nil
		}
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("the number %s is out of range", s)
	}
	return f, nil
}

func containsBytes(v any) bool {
	switch x := v.(type) {
	case []byte:
		return true
	case []any:
		for _, e := range x {
			if containsBytes(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsBytes(e) {
				return true
			}
		}
	}
	return false
}

// kindOf names the value-model kind of v, for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int:
		return "an integer"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []byte:
		return "bytes"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
