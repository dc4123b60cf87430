// Package codes holds the ID of every allocated NIKA error code, one constant
// per row of the registry (spec/codes.go), and is the only place in the module
// where a code is written as a string literal (spec/codes_guard_test.go fails
// on any other).
//
// It is a leaf so that the packages spec itself imports (spec/expr,
// spec/catalog) can name codes without an import cycle. Everything outside
// spec uses the re-exported spec.Code… constants instead; the names here are
// those without the "Code" prefix.
package codes

// The constants are untyped strings, like spec.Error.Code: see spec/codes.go.
const (
	ParseSyntax       = "NIKA-PARSE-001"
	ParseMissing      = "NIKA-PARSE-002"
	ParseVersion      = "NIKA-PARSE-003"
	ParseWorkflowID   = "NIKA-PARSE-004"
	ParseUnknownField = "NIKA-PARSE-005"
	ParseTaskID       = "NIKA-PARSE-006"
	ParseDuplicateID  = "NIKA-PARSE-007"
	ParseNoVerb       = "NIKA-PARSE-008"
	ParseManyVerbs    = "NIKA-PARSE-009"
	ParseTimeout      = "NIKA-PARSE-010"
	ParseRetry        = "NIKA-PARSE-011"
	ParseOnError      = "NIKA-PARSE-012"
	ParseReserved     = "NIKA-PARSE-013"
	ParseInlineSecret = "NIKA-PARSE-014"
	ParseTypedVar     = "NIKA-PARSE-015"
	ParseRetired016   = "NIKA-PARSE-016" // retired: never emitted, kept so it is never reused
	ParseDuplicateKey = "NIKA-PARSE-017"
	ParseRequired     = "NIKA-PARSE-018"
	ParseShape        = "NIKA-PARSE-019"
	ParseEngineKey    = "NIKA-PARSE-020"

	DAGCycle       = "NIKA-DAG-001"
	DAGUnknown     = "NIKA-DAG-002"
	DAGMissingEdge = "NIKA-DAG-003"
	DAGDeadlock    = "NIKA-DAG-004"

	VarUnresolved   = "NIKA-VAR-001"
	VarBindingCount = "NIKA-VAR-002"
	VarBadPath      = "NIKA-VAR-003"
	VarBindingJQ    = "NIKA-VAR-004"
	VarStatic       = "NIKA-VAR-005"
	VarRuntime      = "NIKA-VAR-006"
	VarBytes        = "NIKA-VAR-007"
	VarUnclosed     = "NIKA-VAR-008"
	VarOutputType   = "NIKA-VAR-009"

	InferProvider = "NIKA-INFER-001"
	InferSchema   = "NIKA-INFER-002"

	ExecExit  = "NIKA-EXEC-001"
	ExecSpawn = "NIKA-EXEC-002"

	InvokeUnknown = "NIKA-INVOKE-001"
	InvokeArgs    = "NIKA-INVOKE-002"
	InvokeFailed  = "NIKA-INVOKE-003"

	AgentMaxTurns  = "NIKA-AGENT-001"
	AgentMaxTokens = "NIKA-AGENT-002"
	AgentStalled   = "NIKA-AGENT-003"
	AgentParam     = "NIKA-AGENT-004"
	AgentNoUsage   = "NIKA-AGENT-005"
	AgentToolDefs  = "NIKA-AGENT-006"
	AgentPanic     = "NIKA-AGENT-007"

	MCPUnavailable = "NIKA-MCP-001"
	MCPToolError   = "NIKA-MCP-002"

	SecBlocklist = "NIKA-SEC-001"
	SecWhitelist = "NIKA-SEC-002"
	SecRecursion = "NIKA-SEC-003"
	SecPermits   = "NIKA-SEC-004"
	SecSSRF      = "NIKA-SEC-005"

	Timeout = "NIKA-TIMEOUT-001"
	Cancel  = "NIKA-CANCEL-001"

	BuiltinArgs           = "NIKA-BUILTIN-001"
	BuiltinDone           = "NIKA-BUILTIN-DONE-001"
	BuiltinCompose        = "NIKA-BUILTIN-COMPOSE-001"
	BuiltinAssert         = "NIKA-BUILTIN-ASSERT-001"
	BuiltinPrompt         = "NIKA-BUILTIN-PROMPT-001"
	BuiltinWait           = "NIKA-BUILTIN-WAIT-001"
	BuiltinReadFile       = "NIKA-BUILTIN-READ-001"
	BuiltinReadEncoding   = "NIKA-BUILTIN-READ-002"
	BuiltinWriteExists    = "NIKA-BUILTIN-WRITE-001"
	BuiltinWriteParent    = "NIKA-BUILTIN-WRITE-002"
	BuiltinWriteIO        = "NIKA-BUILTIN-WRITE-003"
	BuiltinEditNotFound   = "NIKA-BUILTIN-EDIT-001"
	BuiltinEditCount      = "NIKA-BUILTIN-EDIT-002"
	BuiltinEditFile       = "NIKA-BUILTIN-EDIT-003"
	BuiltinGlob           = "NIKA-BUILTIN-GLOB-001"
	BuiltinGrepRegexp     = "NIKA-BUILTIN-GREP-001"
	BuiltinGrepPath       = "NIKA-BUILTIN-GREP-002"
	BuiltinJQCompile      = "NIKA-BUILTIN-JQ-001"
	BuiltinJQRun          = "NIKA-BUILTIN-JQ-002"
	BuiltinValidateSchema = "NIKA-BUILTIN-VALIDATE-001"
	BuiltinValidateData   = "NIKA-BUILTIN-VALIDATE-002"
	BuiltinConvertParse   = "NIKA-BUILTIN-CONVERT-001"
	BuiltinConvertRepr    = "NIKA-BUILTIN-CONVERT-002"
	BuiltinDate           = "NIKA-BUILTIN-DATE-001"
	BuiltinFetchStatus    = "NIKA-BUILTIN-FETCH-001"
	BuiltinFetchTransport = "NIKA-BUILTIN-FETCH-002"
	BuiltinFetchBody      = "NIKA-BUILTIN-FETCH-003"
	BuiltinNotify         = "NIKA-BUILTIN-NOTIFY-001"
)
