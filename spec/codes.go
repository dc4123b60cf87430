package spec

import (
	"regexp"
	"sort"
	"strings"
)

// Code is one allocated NIKA error code (LANGUAGE.md §8.3, AGENT.md §12).
type Code struct {
	ID        string
	Category  string
	Transient string // "no", "yes", or the condition under which it is ("5xx/408/429", "per provider", …)
	Stage     string // "S" static, "R" runtime, "S/R" static when literal; "" for retired codes
	Summary   string // one line: what it means
	Retired   bool
}

// Namespace is the code's namespace: PARSE, DAG, VAR, …
func (c Code) Namespace() string {
	parts := strings.Split(c.ID, "-")
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// Codes the checker emits, named for readability at the call sites.
const (
	CodeParseSyntax       = "NIKA-PARSE-001"
	CodeParseMissing      = "NIKA-PARSE-002"
	CodeParseVersion      = "NIKA-PARSE-003"
	CodeParseWorkflowID   = "NIKA-PARSE-004"
	CodeParseUnknownField = "NIKA-PARSE-005"
	CodeParseTaskID       = "NIKA-PARSE-006"
	CodeParseDuplicateID  = "NIKA-PARSE-007"
	CodeParseNoVerb       = "NIKA-PARSE-008"
	CodeParseManyVerbs    = "NIKA-PARSE-009"
	CodeParseTimeout      = "NIKA-PARSE-010"
	CodeParseRetry        = "NIKA-PARSE-011"
	CodeParseOnError      = "NIKA-PARSE-012"
	CodeParseReserved     = "NIKA-PARSE-013"
	CodeParseInlineSecret = "NIKA-PARSE-014"
	CodeParseTypedVar     = "NIKA-PARSE-015"
	CodeParseDuplicateKey = "NIKA-PARSE-017"
	CodeParseRequired     = "NIKA-PARSE-018"
	CodeParseShape        = "NIKA-PARSE-019"
	CodeParseEngineKey    = "NIKA-PARSE-020"

	CodeDAGCycle       = "NIKA-DAG-001"
	CodeDAGUnknown     = "NIKA-DAG-002"
	CodeDAGMissingEdge = "NIKA-DAG-003"
	CodeDAGDeadlock    = "NIKA-DAG-004"

	CodeVarUnresolved = "NIKA-VAR-001"
	CodeVarBadPath    = "NIKA-VAR-003"
	CodeVarStatic     = "NIKA-VAR-005"
	CodeVarRuntime    = "NIKA-VAR-006"
	CodeVarUnclosed   = "NIKA-VAR-008"

	CodeInvokeUnknown  = "NIKA-INVOKE-001"
	CodeSecBlocklist   = "NIKA-SEC-001"
	CodeSecPermits     = "NIKA-SEC-004"
	CodeBuiltinArgs    = "NIKA-BUILTIN-001"
	CodeBuiltinDone    = "NIKA-BUILTIN-DONE-001"
	CodeBuiltinCompose = "NIKA-BUILTIN-COMPOSE-001"
)

var codeTable = []Code{
	{"NIKA-PARSE-001", "parse_error", "no", "S", "YAML syntax error, or profile violation (second document, `<<`, non-core tag, alias bomb)", false},
	{"NIKA-PARSE-002", "validation_error", "no", "S", "missing `nika`, `workflow` or `tasks`, or an empty `tasks`", false},
	{"NIKA-PARSE-003", "validation_error", "no", "S", "`nika:` is not exactly `v1`", false},
	{"NIKA-PARSE-004", "validation_error", "no", "S", "bad workflow id", false},
	{"NIKA-PARSE-005", "validation_error", "no", "S", "unknown field", false},
	{"NIKA-PARSE-006", "validation_error", "no", "S", "bad task id", false},
	{"NIKA-PARSE-007", "validation_error", "no", "S", "duplicate task id", false},
	{"NIKA-PARSE-008", "validation_error", "no", "S", "no verb (in a task or an `on_finally` item)", false},
	{"NIKA-PARSE-009", "validation_error", "no", "S", "several verbs", false},
	{"NIKA-PARSE-010", "validation_error", "no", "S", "bad `timeout`", false},
	{"NIKA-PARSE-011", "validation_error", "no", "S", "bad `retry`", false},
	{"NIKA-PARSE-012", "validation_error", "no", "S", "bad `on_error`", false},
	{"NIKA-PARSE-013", "validation_error", "no", "S", "reserved binding name", false},
	{"NIKA-PARSE-014", "validation_error", "no", "S", "inline secret", false},
	{"NIKA-PARSE-015", "validation_error", "no", "S", "bad typed var or typed output", false},
	{"NIKA-PARSE-016", "", "", "", "retired; never emitted", true},
	{"NIKA-PARSE-017", "parse_error", "no", "S", "duplicate mapping key", false},
	{"NIKA-PARSE-018", "validation_error", "no", "S", "missing required verb field, or no resolvable model", false},
	{"NIKA-PARSE-019", "validation_error", "no", "S", "generic shape: wrong YAML type, bad enum, out of range, malformed tool name or glob namespace, unknown provider, field not allowed here, unsupported secret source", false},
	{"NIKA-PARSE-020", "validation_error", "no", "S", "engine-configuration key in YAML", false},
	{"NIKA-DAG-001", "validation_error", "no", "S", "dependency cycle, including a self-dependency", false},
	{"NIKA-DAG-002", "validation_error", "no", "S", "unknown id in `depends_on`", false},
	{"NIKA-DAG-003", "validation_error", "no", "S", "`tasks.X` read without X in `depends_on`", false},
	{"NIKA-DAG-004", "validation_error", "no", "S", "`recover` references its own task or one of its dependents (deadlock)", false},
	{"NIKA-VAR-001", "variable_error", "no", "S/R", "unresolved name: unknown root, undeclared name, unknown task or field; undeclared `--var`, missing required var, unresolvable secret", false},
	{"NIKA-VAR-002", "variable_error", "no", "R", "a binding produced zero or several values", false},
	{"NIKA-VAR-003", "variable_error", "no", "S", "provably invalid output path", false},
	{"NIKA-VAR-004", "variable_error", "no", "R", "jq runtime error in a binding", false},
	{"NIKA-VAR-005", "variable_error", "no", "S", "static expression violation, or jq compile error", false},
	{"NIKA-VAR-006", "variable_error", "no", "R", "runtime evaluation or type error; bad `--var` text", false},
	{"NIKA-VAR-007", "variable_error", "no", "R", "bytes rendered into a string", false},
	{"NIKA-VAR-008", "variable_error", "no", "S", "unclosed `${{`", false},
	{"NIKA-VAR-009", "variable_error", "no", "R", "typed output mismatch", false},
	{"NIKA-INFER-001", "provider_error", "per provider", "R", "provider call failed", false},
	{"NIKA-INFER-002", "validation_error", "no", "R", "output fails `schema` after the re-asks", false},
	{"NIKA-EXEC-001", "process_error", "no", "R", "non-zero exit", false},
	{"NIKA-EXEC-002", "process_error", "no", "R", "spawn failure", false},
	{"NIKA-INVOKE-001", "tool_error", "no", "S/R", "unknown tool, or unregistered MCP server", false},
	{"NIKA-INVOKE-002", "validation_error", "no", "R", "arguments fail the tool's input schema", false},
	{"NIKA-INVOKE-003", "tool_error", "no", "R", "a tool call failed without a more specific code (or panicked)", false},
	{"NIKA-AGENT-001", "budget_error", "no", "R", "`max_turns` exhausted", false},
	{"NIKA-AGENT-002", "budget_error", "no", "R", "`max_tokens_total` exhausted", false},
	{"NIKA-AGENT-003", "budget_error", "no", "R", "the agent stalled (the guard saw the same turns repeat)", false},
	{"NIKA-AGENT-004", "validation_error", "no", "R", "invalid agent parameter at arming (misuse of the Go API)", false},
	{"NIKA-AGENT-005", "budget_error", "no", "R", "usage not reported for a priced model (not emitted in v1)", false},
	{"NIKA-AGENT-006", "tool_error", "from the source", "R", "the tool-definition source failed", false},
	{"NIKA-AGENT-007", "internal_error", "no", "R", "engine panic inside one agent job", false},
	{"NIKA-MCP-001", "tool_error", "yes, unless not configured", "R", "MCP server not configured, unreachable, or crashed", false},
	{"NIKA-MCP-002", "tool_error", "no", "R", "MCP tool call returned an error", false},
	{"NIKA-SEC-001", "security_error", "no", "S/R", "shell command matches the blocklist", false},
	{"NIKA-SEC-002", "security_error", "no", "R", "agent tool call outside the whitelist", false},
	{"NIKA-SEC-003", "security_error", "no", "R", "run recursion: nesting depth ≥ 8", false},
	{"NIKA-SEC-004", "security_error", "no", "S/R", "subject outside `permits`", false},
	{"NIKA-SEC-005", "security_error", "no", "R", "SSRF floor: private, loopback or link-local destination", false},
	{"NIKA-TIMEOUT-001", "timeout_error", "no", "R", "task `timeout` expired; never retried", false},
	{"NIKA-CANCEL-001", "cancelled", "no", "R", "user cancellation (signal or API)", false},
	{"NIKA-BUILTIN-001", "validation_error", "no", "S", "literal arguments violate a builtin's contract", false},
	{"NIKA-BUILTIN-DONE-001", "validation_error", "no", "S", "`nika:done` outside an agent", false},
	{"NIKA-BUILTIN-COMPOSE-001", "validation_error", "no", "S", "`nika:compose` outside an agent", false},
	{"NIKA-BUILTIN-ASSERT-001", "validation_error", "no", "R", "assertion false", false},
	{"NIKA-BUILTIN-PROMPT-001", "tool_error", "no", "R", "no TTY and no `default`", false},
	{"NIKA-BUILTIN-WAIT-001", "tool_error", "no", "R", "wait exceeds `timeout`", false},
	{"NIKA-BUILTIN-READ-001", "tool_error", "no", "R", "file not found, not a regular file, or unreadable", false},
	{"NIKA-BUILTIN-READ-002", "tool_error", "no", "R", "content invalid for `encoding`", false},
	{"NIKA-BUILTIN-WRITE-001", "tool_error", "no", "R", "the file exists and `overwrite` is false", false},
	{"NIKA-BUILTIN-WRITE-002", "tool_error", "no", "R", "the parent directory is missing and `create_dirs` is false", false},
	{"NIKA-BUILTIN-WRITE-003", "tool_error", "no", "R", "I/O error while writing", false},
	{"NIKA-BUILTIN-EDIT-001", "tool_error", "no", "R", "`find` text not found", false},
	{"NIKA-BUILTIN-EDIT-002", "tool_error", "no", "R", "occurrence count mismatch", false},
	{"NIKA-BUILTIN-EDIT-003", "tool_error", "no", "R", "file missing or unreadable", false},
	{"NIKA-BUILTIN-GLOB-001", "tool_error", "no", "S/R", "invalid glob pattern", false},
	{"NIKA-BUILTIN-GREP-001", "tool_error", "no", "S/R", "invalid regular expression", false},
	{"NIKA-BUILTIN-GREP-002", "tool_error", "no", "S/R", "path not found", false},
	{"NIKA-BUILTIN-JQ-001", "tool_error", "no", "S/R", "jq compile error", false},
	{"NIKA-BUILTIN-JQ-002", "tool_error", "no", "S/R", "jq runtime error, or not exactly one value", false},
	{"NIKA-BUILTIN-VALIDATE-001", "tool_error", "no", "S/R", "the schema does not compile", false},
	{"NIKA-BUILTIN-VALIDATE-002", "tool_error", "no", "S/R", "`data` does not parse", false},
	{"NIKA-BUILTIN-CONVERT-001", "tool_error", "no", "R", "parse failure", false},
	{"NIKA-BUILTIN-CONVERT-002", "tool_error", "no", "R", "value not representable in the target format", false},
	{"NIKA-BUILTIN-DATE-001", "tool_error", "no", "S/R", "bad date, format, duration or timezone", false},
	{"NIKA-BUILTIN-FETCH-001", "network_error", "5xx/408/429", "R", "non-2xx HTTP status", false},
	{"NIKA-BUILTIN-FETCH-002", "network_error", "yes", "R", "transport failure", false},
	{"NIKA-BUILTIN-FETCH-003", "tool_error", "no", "R", "unusable body", false},
	{"NIKA-BUILTIN-NOTIFY-001", "network_error", "5xx/408/429/transport", "R", "delivery failed", false},
}

var codeIndex = func() map[string]Code {
	m := make(map[string]Code, len(codeTable))
	for _, c := range codeTable {
		m[c.ID] = c
	}
	return m
}()

// LookupCode returns the registry entry of an allocated code.
func LookupCode(id string) (Code, bool) {
	c, ok := codeIndex[id]
	return c, ok
}

// Codes returns every allocated code, sorted.
func Codes() []Code {
	out := append([]Code(nil), codeTable...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

var codeFormat = regexp.MustCompile(`^NIKA-[A-Z]{2,9}(-[A-Z][A-Z0-9_]{1,15})?-[0-9]{3}$`)

// WellFormedCode reports whether s has the shape of a NIKA code (§8.2),
// allocated or not.
func WellFormedCode(s string) bool { return codeFormat.MatchString(s) }

// SuggestCode returns the allocated code nearest to a mistyped one (edit
// distance ≤ 2, ties alphabetical), or "".
func SuggestCode(id string) string {
	ids := make([]string, len(codeTable))
	for i, c := range codeTable {
		ids[i] = c.ID
	}
	return suggest(strings.ToUpper(id), ids)
}
