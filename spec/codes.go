package spec

import (
	"regexp"
	"sort"
	"strings"

	"github.com/nikahq/nika/spec/internal/codes"
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

// One constant per registry row: CodeX = codes.X, the ID written once in
// spec/internal/codes (a leaf, so spec/expr and spec/catalog can use it too).
//
// They are untyped string constants, not a named ErrorCode type, on purpose:
// Error.Code, Finding.Code, catalog and expr issues, on_error code lists and
// the details maps all hold plain strings, and the packages outside spec
// compare, list and pass codes as strings; a named type would put a
// conversion at each of those places without catching a mistake the guard
// test (codes_guard_test.go) does not already catch: a code that is not a
// registry row.
const (
	CodeParseSyntax       = codes.ParseSyntax
	CodeParseMissing      = codes.ParseMissing
	CodeParseVersion      = codes.ParseVersion
	CodeParseWorkflowID   = codes.ParseWorkflowID
	CodeParseUnknownField = codes.ParseUnknownField
	CodeParseTaskID       = codes.ParseTaskID
	CodeParseDuplicateID  = codes.ParseDuplicateID
	CodeParseNoVerb       = codes.ParseNoVerb
	CodeParseManyVerbs    = codes.ParseManyVerbs
	CodeParseTimeout      = codes.ParseTimeout
	CodeParseRetry        = codes.ParseRetry
	CodeParseOnError      = codes.ParseOnError
	CodeParseReserved     = codes.ParseReserved
	CodeParseInlineSecret = codes.ParseInlineSecret
	CodeParseTypedVar     = codes.ParseTypedVar
	CodeParseRetired016   = codes.ParseRetired016
	CodeParseDuplicateKey = codes.ParseDuplicateKey
	CodeParseRequired     = codes.ParseRequired
	CodeParseShape        = codes.ParseShape
	CodeParseEngineKey    = codes.ParseEngineKey

	CodeDAGCycle       = codes.DAGCycle
	CodeDAGUnknown     = codes.DAGUnknown
	CodeDAGMissingEdge = codes.DAGMissingEdge
	CodeDAGDeadlock    = codes.DAGDeadlock

	CodeVarUnresolved   = codes.VarUnresolved
	CodeVarBindingCount = codes.VarBindingCount
	CodeVarBadPath      = codes.VarBadPath
	CodeVarBindingJQ    = codes.VarBindingJQ
	CodeVarStatic       = codes.VarStatic
	CodeVarRuntime      = codes.VarRuntime
	CodeVarBytes        = codes.VarBytes
	CodeVarUnclosed     = codes.VarUnclosed
	CodeVarOutputType   = codes.VarOutputType

	CodeInferProvider = codes.InferProvider
	CodeInferSchema   = codes.InferSchema

	CodeExecExit  = codes.ExecExit
	CodeExecSpawn = codes.ExecSpawn

	CodeInvokeUnknown = codes.InvokeUnknown
	CodeInvokeArgs    = codes.InvokeArgs
	CodeInvokeFailed  = codes.InvokeFailed

	CodeAgentMaxTurns  = codes.AgentMaxTurns
	CodeAgentMaxTokens = codes.AgentMaxTokens
	CodeAgentStalled   = codes.AgentStalled
	CodeAgentParam     = codes.AgentParam
	CodeAgentNoUsage   = codes.AgentNoUsage
	CodeAgentToolDefs  = codes.AgentToolDefs
	CodeAgentPanic     = codes.AgentPanic

	CodeMCPUnavailable = codes.MCPUnavailable
	CodeMCPToolError   = codes.MCPToolError

	CodeSecBlocklist = codes.SecBlocklist
	CodeSecWhitelist = codes.SecWhitelist
	CodeSecRecursion = codes.SecRecursion
	CodeSecPermits   = codes.SecPermits
	CodeSecSSRF      = codes.SecSSRF

	CodeTimeout = codes.Timeout
	CodeCancel  = codes.Cancel

	CodeBuiltinArgs           = codes.BuiltinArgs
	CodeBuiltinDone           = codes.BuiltinDone
	CodeBuiltinCompose        = codes.BuiltinCompose
	CodeBuiltinAssert         = codes.BuiltinAssert
	CodeBuiltinPrompt         = codes.BuiltinPrompt
	CodeBuiltinWait           = codes.BuiltinWait
	CodeBuiltinReadFile       = codes.BuiltinReadFile
	CodeBuiltinReadEncoding   = codes.BuiltinReadEncoding
	CodeBuiltinWriteExists    = codes.BuiltinWriteExists
	CodeBuiltinWriteParent    = codes.BuiltinWriteParent
	CodeBuiltinWriteIO        = codes.BuiltinWriteIO
	CodeBuiltinEditNotFound   = codes.BuiltinEditNotFound
	CodeBuiltinEditCount      = codes.BuiltinEditCount
	CodeBuiltinEditFile       = codes.BuiltinEditFile
	CodeBuiltinGlob           = codes.BuiltinGlob
	CodeBuiltinGrepRegexp     = codes.BuiltinGrepRegexp
	CodeBuiltinGrepPath       = codes.BuiltinGrepPath
	CodeBuiltinJQCompile      = codes.BuiltinJQCompile
	CodeBuiltinJQRun          = codes.BuiltinJQRun
	CodeBuiltinValidateSchema = codes.BuiltinValidateSchema
	CodeBuiltinValidateData   = codes.BuiltinValidateData
	CodeBuiltinConvertParse   = codes.BuiltinConvertParse
	CodeBuiltinConvertRepr    = codes.BuiltinConvertRepr
	CodeBuiltinDate           = codes.BuiltinDate
	CodeBuiltinFetchStatus    = codes.BuiltinFetchStatus
	CodeBuiltinFetchTransport = codes.BuiltinFetchTransport
	CodeBuiltinFetchBody      = codes.BuiltinFetchBody
	CodeBuiltinNotify         = codes.BuiltinNotify
)

var codeTable = []Code{
	{CodeParseSyntax, "parse_error", "no", "S", "YAML syntax error, or profile violation (second document, `<<`, non-core tag, alias bomb)", false},
	{CodeParseMissing, "validation_error", "no", "S", "missing `nika`, `workflow` or `tasks`, or an empty `tasks`", false},
	{CodeParseVersion, "validation_error", "no", "S", "`nika:` is not exactly `v1`", false},
	{CodeParseWorkflowID, "validation_error", "no", "S", "bad workflow id", false},
	{CodeParseUnknownField, "validation_error", "no", "S", "unknown field", false},
	{CodeParseTaskID, "validation_error", "no", "S", "bad task id", false},
	{CodeParseDuplicateID, "validation_error", "no", "S", "duplicate task id", false},
	{CodeParseNoVerb, "validation_error", "no", "S", "no verb (in a task or an `on_finally` item)", false},
	{CodeParseManyVerbs, "validation_error", "no", "S", "several verbs", false},
	{CodeParseTimeout, "validation_error", "no", "S", "bad `timeout`", false},
	{CodeParseRetry, "validation_error", "no", "S", "bad `retry`", false},
	{CodeParseOnError, "validation_error", "no", "S", "bad `on_error`", false},
	{CodeParseReserved, "validation_error", "no", "S", "reserved binding name", false},
	{CodeParseInlineSecret, "validation_error", "no", "S", "inline secret", false},
	{CodeParseTypedVar, "validation_error", "no", "S", "bad typed var or typed output", false},
	{CodeParseRetired016, "", "", "", "retired; never emitted", true},
	{CodeParseDuplicateKey, "parse_error", "no", "S", "duplicate mapping key", false},
	{CodeParseRequired, "validation_error", "no", "S", "missing required verb field, or no resolvable model", false},
	{CodeParseShape, "validation_error", "no", "S", "generic shape: wrong YAML type, bad enum, out of range, malformed tool name or glob namespace, unknown provider, field not allowed here, unsupported secret source", false},
	{CodeParseEngineKey, "validation_error", "no", "S", "engine-configuration key in YAML", false},
	{CodeDAGCycle, "validation_error", "no", "S", "dependency cycle, including a self-dependency", false},
	{CodeDAGUnknown, "validation_error", "no", "S", "unknown id in `depends_on`", false},
	{CodeDAGMissingEdge, "validation_error", "no", "S", "`tasks.X` read without X in `depends_on`", false},
	{CodeDAGDeadlock, "validation_error", "no", "S", "`recover` references its own task or one of its dependents (deadlock)", false},
	{CodeVarUnresolved, "variable_error", "no", "S/R", "unresolved name: unknown root, undeclared name, unknown task or field; undeclared `--var`, missing required var, unresolvable secret", false},
	{CodeVarBindingCount, "variable_error", "no", "R", "a binding produced zero or several values", false},
	{CodeVarBadPath, "variable_error", "no", "S", "provably invalid output path", false},
	{CodeVarBindingJQ, "variable_error", "no", "R", "jq runtime error in a binding", false},
	{CodeVarStatic, "variable_error", "no", "S", "static expression violation, or jq compile error", false},
	{CodeVarRuntime, "variable_error", "no", "R", "runtime evaluation or type error; bad `--var` text", false},
	{CodeVarBytes, "variable_error", "no", "R", "bytes rendered into a string", false},
	{CodeVarUnclosed, "variable_error", "no", "S", "unclosed `${{`", false},
	{CodeVarOutputType, "variable_error", "no", "R", "typed output mismatch", false},
	{CodeInferProvider, "provider_error", "per provider", "R", "provider call failed", false},
	{CodeInferSchema, "validation_error", "no", "R", "output fails `schema` after the re-asks", false},
	{CodeExecExit, "process_error", "no", "R", "non-zero exit", false},
	{CodeExecSpawn, "process_error", "no", "R", "spawn failure", false},
	{CodeInvokeUnknown, "tool_error", "no", "S/R", "unknown tool, or unregistered MCP server", false},
	{CodeInvokeArgs, "validation_error", "no", "R", "arguments fail the tool's input schema", false},
	{CodeInvokeFailed, "tool_error", "no", "R", "a tool call failed without a more specific code (or panicked)", false},
	{CodeAgentMaxTurns, "budget_error", "no", "R", "`max_turns` exhausted", false},
	{CodeAgentMaxTokens, "budget_error", "no", "R", "`max_tokens_total` exhausted", false},
	{CodeAgentStalled, "budget_error", "no", "R", "the agent stalled (the guard saw the same turns repeat)", false},
	{CodeAgentParam, "validation_error", "no", "R", "invalid agent parameter at arming (misuse of the Go API)", false},
	{CodeAgentNoUsage, "budget_error", "no", "R", "usage not reported for a priced model (not emitted in v1)", false},
	{CodeAgentToolDefs, "tool_error", "from the source", "R", "the tool-definition source failed", false},
	{CodeAgentPanic, "internal_error", "no", "R", "engine panic inside one agent job", false},
	{CodeMCPUnavailable, "tool_error", "yes, unless not configured", "R", "MCP server not configured, unreachable, or crashed", false},
	{CodeMCPToolError, "tool_error", "no", "R", "MCP tool call returned an error", false},
	{CodeSecBlocklist, "security_error", "no", "S/R", "shell command matches the blocklist", false},
	{CodeSecWhitelist, "security_error", "no", "R", "agent tool call outside the whitelist", false},
	{CodeSecRecursion, "security_error", "no", "R", "run recursion: nesting depth ≥ 8", false},
	{CodeSecPermits, "security_error", "no", "S/R", "subject outside `permits`", false},
	{CodeSecSSRF, "security_error", "no", "R", "SSRF floor: private, loopback or link-local destination", false},
	{CodeTimeout, "timeout_error", "no", "R", "task `timeout` expired; never retried", false},
	{CodeCancel, "cancelled", "no", "R", "user cancellation (signal or API)", false},
	{CodeBuiltinArgs, "validation_error", "no", "S", "literal arguments violate a builtin's contract", false},
	{CodeBuiltinDone, "validation_error", "no", "S", "`nika:done` outside an agent", false},
	{CodeBuiltinCompose, "validation_error", "no", "S", "`nika:compose` outside an agent", false},
	{CodeBuiltinAssert, "validation_error", "no", "R", "assertion false", false},
	{CodeBuiltinPrompt, "tool_error", "no", "R", "no TTY and no `default`", false},
	{CodeBuiltinWait, "tool_error", "no", "R", "wait exceeds `timeout`", false},
	{CodeBuiltinReadFile, "tool_error", "no", "R", "file not found, not a regular file, or unreadable", false},
	{CodeBuiltinReadEncoding, "tool_error", "no", "R", "content invalid for `encoding`", false},
	{CodeBuiltinWriteExists, "tool_error", "no", "R", "the file exists and `overwrite` is false", false},
	{CodeBuiltinWriteParent, "tool_error", "no", "R", "the parent directory is missing and `create_dirs` is false", false},
	{CodeBuiltinWriteIO, "tool_error", "no", "R", "I/O error while writing", false},
	{CodeBuiltinEditNotFound, "tool_error", "no", "R", "`find` text not found", false},
	{CodeBuiltinEditCount, "tool_error", "no", "R", "occurrence count mismatch", false},
	{CodeBuiltinEditFile, "tool_error", "no", "R", "file missing or unreadable", false},
	{CodeBuiltinGlob, "tool_error", "no", "S/R", "invalid glob pattern", false},
	{CodeBuiltinGrepRegexp, "tool_error", "no", "S/R", "invalid regular expression", false},
	{CodeBuiltinGrepPath, "tool_error", "no", "S/R", "path not found", false},
	{CodeBuiltinJQCompile, "tool_error", "no", "S/R", "jq compile error", false},
	{CodeBuiltinJQRun, "tool_error", "no", "S/R", "jq runtime error, or not exactly one value", false},
	{CodeBuiltinValidateSchema, "tool_error", "no", "S/R", "the schema does not compile", false},
	{CodeBuiltinValidateData, "tool_error", "no", "S/R", "`data` does not parse", false},
	{CodeBuiltinConvertParse, "tool_error", "no", "R", "parse failure", false},
	{CodeBuiltinConvertRepr, "tool_error", "no", "R", "value not representable in the target format", false},
	{CodeBuiltinDate, "tool_error", "no", "S/R", "bad date, format, duration or timezone", false},
	{CodeBuiltinFetchStatus, "network_error", "5xx/408/429", "R", "non-2xx HTTP status", false},
	{CodeBuiltinFetchTransport, "network_error", "yes", "R", "transport failure", false},
	{CodeBuiltinFetchBody, "tool_error", "no", "R", "unusable body", false},
	{CodeBuiltinNotify, "network_error", "5xx/408/429/transport", "R", "delivery failed", false},
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
