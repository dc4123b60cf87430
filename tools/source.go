package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/nikahq/nika/spec"
)

// Def is one tool definition from a Source, in the form the agent universe takes (AGENT.md §2-3):
// Name is canonical ("mcp:<server>/<tool>"), Params the tool's input JSON Schema as raw JSON.
type Def struct {
	Name        string
	Description string
	Params      json.RawMessage
}

// Source is a run's seam to tools that live outside this process: the MCP servers of the
// engine's registry (LANGUAGE.md §5.3; package tools/mcp implements it). It sits here, not in
// tools/mcp, because the verbs import tools and tools may not import its own sub-packages or the
// provider layer. One Source serves one run and is safe for concurrent use.
// ProgressCaller is a Source that can pass a call's progress notifications on (the MCP client:
// notifications/progress for the progress token it sends with the call). progress is called in
// order, never concurrently and never after CallProgress returns; total is 0 when unknown.
type ProgressCaller interface {
	CallProgress(ctx context.Context, name string, args map[string]any, progress func(progress, total float64, message string)) (any, error)
}

type Source interface {
	// Servers returns the registered server names, sorted. It starts nothing: the checker and
	// the agent's arming use it to know which servers exist.
	Servers() []string
	// List returns the tools one server lists (tools/list, every page), with canonical names,
	// sorted by name. It may start the server. A server that is not registered is
	// NIKA-INVOKE-001; one that cannot start or dies is NIKA-MCP-001. Errors are *spec.Error.
	List(ctx context.Context, server string) ([]Def, error)
	// Call calls one tool by canonical name with resolved arguments in the nika value model and
	// returns its output under the rule of LANGUAGE.md §5.3. The arguments are checked against
	// the tool's input schema before the call (NIKA-INVOKE-002). Errors are *spec.Error:
	// NIKA-INVOKE-001 (unregistered server, unlisted tool), NIKA-INVOKE-002, NIKA-MCP-001,
	// NIKA-MCP-002 and NIKA-CANCEL-001. Permits are the caller's business.
	Call(ctx context.Context, name string, args map[string]any) (any, error)
}

// Broken is implemented by a Source that cannot tell which servers exist because its registry
// cannot be used (the file is missing or does not parse). Err says why, as a *spec.Error. An
// agent whose whitelist and permits.tools can reach some mcp: tool fails its arming with it
// (AGENT.md §3.1: the definition source failed) rather than run without those tools.
type Broken interface {
	Err() error
}

// CanAdmitMCP reports whether one of the positive globs of a tool-glob list can match some
// mcp: tool name (see CanAdmitServer).
func CanAdmitMCP(globs []string) bool {
	for _, g := range globs {
		if !strings.HasPrefix(g, "!") && globMatchesPrefix(g, "mcp:") {
			return true
		}
	}
	return false
}

// JSONValue converts a Go value that encodes as JSON (the nika value model, or what
// encoding/json decodes into `any`) to plain JSON values in the nika value model: integers
// become int, other numbers float64, bytes base64 text. A source uses it on what crosses the
// wire in either direction.
func JSONValue(v any) (any, error) { return jsonValue(v) }

// CancelError is the NIKA-CANCEL-001 of a done context, wrapping ctx.Err() and
// context.Cause(ctx) so a caller can tell a task deadline from a cancellation.
func CancelError(ctx context.Context) *spec.Error { return cancelError(ctx) }

// CanAdmitServer reports whether one of the positive globs of a tool-glob list (LANGUAGE.md
// §2.4.1) can match some tool of the MCP server, that is some name starting with
// "mcp:<server>/". The agent uses it to start and list only the servers its whitelist and
// permits.tools can reach; the exact per-tool decision stays with spec.ToolAllowed. A negated
// glob never widens the answer, so `mcp:**` followed by `!mcp:fs/**` still lists fs (whose
// tools ToolAllowed then drops).
func CanAdmitServer(globs []string, server string) bool {
	prefix := "mcp:" + server + "/"
	for _, g := range globs {
		if strings.HasPrefix(g, "!") {
			continue
		}
		if globMatchesPrefix(g, prefix) {
			return true
		}
	}
	return false
}

// globMatchesPrefix reports whether some string that starts with prefix matches the tool glob
// p: it runs p's automaton over prefix and asks whether any state survives, since whatever
// follows can always spell out the remaining literals (and let the wildcards match nothing).
func globMatchesPrefix(p, prefix string) bool {
	const (
		lit = iota
		star
		dstar
	)
	type tok struct {
		kind int
		b    byte
	}
	var toks []tok
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '*' && i+1 < len(p) && p[i+1] == '*':
			for i+1 < len(p) && p[i+1] == '*' {
				i++
			}
			toks = append(toks, tok{kind: dstar})
		case p[i] == '*':
			toks = append(toks, tok{kind: star})
		default:
			toks = append(toks, tok{kind: lit, b: p[i]})
		}
	}
	// live[i]: the first i tokens can match the input read so far.
	live := make([]bool, len(toks)+1)
	closure := func(s []bool) {
		for i := 0; i < len(toks); i++ {
			if s[i] && toks[i].kind != lit {
				s[i+1] = true // a wildcard may match nothing
			}
		}
	}
	live[0] = true
	closure(live)
	for j := 0; j < len(prefix); j++ {
		c := prefix[j]
		next := make([]bool, len(toks)+1)
		any := false
		for i := 0; i < len(toks); i++ {
			if !live[i] {
				continue
			}
			switch t := toks[i]; t.kind {
			case lit:
				if t.b == c {
					next[i+1] = true
				}
			case star:
				if c != '/' && c != ':' {
					next[i] = true
				}
			case dstar:
				next[i] = true
			}
		}
		closure(next)
		for _, ok := range next {
			any = any || ok
		}
		if !any {
			return false
		}
		live = next
	}
	return true
}
