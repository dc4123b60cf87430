package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/workflow"
)

// Codes raised by the verb (AGENT.md §12).
const (
	CodeMaxTurns  = core.CodeMaxTurns
	CodeMaxTokens = core.CodeMaxTokens
	CodeStalled   = core.CodeStalled
	CodeParam     = spec.CodeAgentParam
	CodeWhitelist = core.CodeWhitelist
	CodeSchema    = core.CodeSchema
	CodeUnknown   = spec.CodeInvokeUnknown
	CodeArgs      = spec.CodeInvokeArgs
	CodeDefs      = spec.CodeAgentToolDefs // the tool-definition source (an MCP server's tools/list) failed
	CodeCancel    = spec.CodeCancel
)

// Stages of NIKA-INFER-002 raised by the loop.
const (
	StageCompile  = core.StageCompile
	StageDone     = core.StageDone
	StageFinalize = core.StageFinalize
)

// Defaults and limits of AGENT.md §1.1.
const (
	DefaultMaxTurns   = 10
	MaxMaxTurns       = 1000
	SchemaRetryBudget = core.SchemaRetryBudget
)

// ReaskText is the exact re-ask text of AGENT.md §5.4 (detail, then schema).
const ReaskText = core.ReaskText

// Config is the engine-internal configuration of AGENT.md §1.3 (never YAML).
type Config struct {
	MaxParallelTools int           // 0 → 8; accepted 0..1024
	SpillThreshold   int           // bytes; 0 → 16 KiB (only with Verb.Blobs)
	SpillHead        int           // bytes; 0 → 2 KiB
	ToolTimeout      time.Duration // per call; 0 = none
	Guard            guard.Config
	Router           router.Config
}

// Verb runs agent jobs. It holds no per-run state and is safe for concurrent use.
type Verb struct {
	// Providers serves every model of the run (one instance per provider, shared).
	Providers *provider.Registry
	// Builtins runs the nika: tools; nil means none are in this build.
	Builtins *tools.Builtins
	// Tools is the run's source of mcp: tools (its MCP client): their definitions join the
	// universe of every agent whose whitelist and permits.tools admit them, and their calls go
	// to it. nil means no MCP tools.
	Tools  tools.Source
	Config Config
	// Blobs, when set, stores tool results over Config.SpillThreshold, and the model gets their
	// head and the blob's hash instead (AGENT.md §4.4). Nil: results are fed back whole.
	Blobs BlobStore

	// exec, when set (tests only), replaces Builtins.Execute for admitted nika: tools; it is the
	// tool seam of AGENT.md §10.3 that tests replace with byte-stable doubles.
	exec func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error)

	// Observe, when non-nil, is called once per run (per job, per attempt), on the goroutine that
	// runs that job, before its first loop event; the Observer it returns receives that run's loop
	// events (AGENT.md §2, §10.1). It must return a fresh Observer on every call: an Observer is
	// never shared between concurrent runs (RunBatch runs jobs concurrently). Returning nil, or a
	// nil Observe, means no observer. It does not change what goes to the job's Emit.
	Observe func(job workflow.Job) Observer
}

// Run runs one agent job (planner.Verb). The output is the final answer: the last assistant text,
// nika:done's result, or with `schema:` the validated JSON value. Outcome.Usage holds one entry per
// provider request, re-asks included.
func (v *Verb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	r, err := v.arm(ctx, job)
	if err != nil {
		return workflow.Failed(err)
	}
	if v.Observe != nil {
		r.obs = v.Observe(job)
	}
	fin := r.drive(ctx)
	note := workflow.LiveNote{Kind: event.LiveAgentFinished, Outcome: "ok", Turns: fin.Turns}
	if fin.Err != nil {
		note.Outcome, note.Code, note.IsError = fin.Err.Code, fin.Err.Code, true
	}
	r.live(note)
	if fin.Err != nil {
		return workflow.Outcome{Err: fin.Err, Usage: fin.Usage}
	}
	return workflow.Outcome{Output: fin.Output, Usage: fin.Usage}
}

// paramErr is a field of the task invalid only after evaluation: NIKA-VAR-006
// for every verb (D27).
func paramErr(param, format string, args ...any) *spec.Error {
	detail := fmt.Sprintf(format, args...)
	return spec.NewError(spec.CodeVarRuntime, "invalid agent field `"+param+"`: "+detail, map[string]any{"field": param, "detail": detail})
}

// apiErr is a misuse of the Go API by an embedding program (bad Config, no
// providers): NIKA-AGENT-004 (D27).
func apiErr(param, format string, args ...any) *spec.Error {
	detail := fmt.Sprintf(format, args...)
	return spec.NewError(CodeParam, "invalid agent configuration `"+param+"`: "+detail, map[string]any{"param": param, "detail": detail})
}
