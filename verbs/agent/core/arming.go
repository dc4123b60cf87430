package core

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
)

// Codes raised by the loop (AGENT.md §12).
const (
	CodeMaxTurns  = spec.CodeAgentMaxTurns
	CodeMaxTokens = spec.CodeAgentMaxTokens
	CodeStalled   = guard.CodeStalled
	CodeWhitelist = spec.CodeSecWhitelist
	CodeSchema    = spec.CodeInferSchema
)

// Stages of NIKA-INFER-002 raised by the loop.
const (
	StageCompile  = "compile"
	StageDone     = "done"
	StageFinalize = "finalize"
)

// Limits of AGENT.md §1.1, §5 and §6.3.
const (
	SchemaRetryBudget = 2
	maxNameBytes      = 256
	digestPart        = 512
	digestMax         = 2048
	reaskSchemaChars  = 4096
)

// Blame of the turn budget (AGENT.md §3 step 6).
const (
	BlameCaller   = "caller"   // max_turns was written on the task
	BlameContract = "contract" // the default applied
)

// ReaskText is the exact re-ask text of AGENT.md §5.4 (detail, then schema).
const ReaskText = "Your previous reply does not match the required output schema. Validation error: %s. Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n%s"

// Arming is what the loop needs from AGENT.md §3, already validated and resolved by the driver:
// plain data, so a journal can hold it and a replay rebuild the same Loop from it.
type Arming struct {
	Model       string
	Prompt      string
	System      string   // "" → no system prompt
	Temperature *float64 // nil → the provider's default
	MaxTurns    int      // 1..1000
	Blame       string   // BlameCaller or BlameContract
	MaxTokens   int      // max_tokens_total; 0 → no token budget
	Tools       []string // the task's whitelist globs
	// Permits is the workflow's permits.tools (D29); nil when the workflow has no permits.
	Permits *Permits
	// Schema is the decoded `schema:` of the final output; nil → free text.
	Schema any
	// Native is true when the provider takes Schema natively for this model (re-asks send it).
	Native bool
	// Universe is the frozen tool universe (§3.1), in the order it is offered.
	Universe []provider.ToolDef
	Guard    guard.Config
	Router   router.Config
}

// Permits is the part of a workflow's permits the loop reads.
type Permits struct {
	Tools []string
}

// Admits is D29: the whitelist and, when the workflow has permits, permits.tools.
func (a *Arming) Admits(name string) bool {
	if !spec.ToolAllowed(a.Tools, name) {
		return false
	}
	return a.Permits == nil || spec.ToolAllowed(a.Permits.Tools, name)
}

// Rank is the author rank of §1.2: the index of the first positive rule matching name.
func (a *Arming) Rank(name string) int {
	for i, g := range a.Tools {
		if strings.HasPrefix(g, "!") {
			continue
		}
		if spec.ToolAllowed([]string{g}, name) {
			return i
		}
	}
	return len(a.Tools)
}

// Clean reports whether a tool name passes §3.1 step 3 / §5.2 b.
func Clean(name string) bool {
	if name == "" || len(name) > maxNameBytes {
		return false
	}
	for _, c := range name {
		if unicode.IsControl(c) {
			return false
		}
	}
	first, last := []rune(name)[0], []rune(name)[len([]rune(name))-1]
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// Redact removes control characters and cuts to 64 characters (§5.2 b).
func Redact(name string) string {
	s := strings.Map(func(c rune) rune {
		if c < 0x20 || (c >= 0x7f && c < 0xa0) {
			return -1
		}
		return c
	}, name)
	return router.CutChars(s, 64)
}

// CompileSchema compiles a `schema:` field (§3 step 2); the error is NIKA-INFER-002 stage compile.
func CompileSchema(doc any) (*schema.Schema, *spec.Error) {
	sch, err := schema.Compile(doc)
	if err != nil {
		return nil, spec.NewError(CodeSchema, fmt.Sprintf("`schema` does not compile: %v", err),
			map[string]any{"stage": StageCompile, "detail": err.Error()})
	}
	return sch, nil
}
