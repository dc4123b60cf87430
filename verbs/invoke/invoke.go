// Package invoke is the `invoke` verb (LANGUAGE.md §5.3): one tool call, a `nika:` builtin or an
// MCP tool (through the run's tools.Source), gated by permits.tools and recorded as one
// `tool_invoked` event.
package invoke

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// Verb runs invoke jobs. A Verb holds no state of its own and is safe for concurrent use.
type Verb struct {
	// Builtins runs the nika: tools; nil means none are in this build.
	Builtins *tools.Builtins
	// Now is the engine clock for nika:date and nika:wait; nil means time.Now.
	Now func() time.Time
	// Tools runs the mcp: tools (the run's MCP client); nil means this engine has no MCP
	// registry, and every mcp: tool is NIKA-INVOKE-001.
	Tools tools.Source
}

// Run runs one invoke job (planner.Verb): Fields["tool"] is the canonical tool name and
// Fields["args"] its resolved arguments (default {}). The output is the tool's result. Errors:
//
//   - NIKA-SEC-004: job.Permits is set and permits.tools does not admit the tool.
//   - NIKA-INVOKE-001: an unknown tool, a catalog builtin not in this build (D10), an `mcp:`
//     tool without an MCP registry (Tools nil), on an unregistered server, or not listed by it.
//   - for `mcp:` tools, Tools.Call's NIKA-INVOKE-002, NIKA-MCP-001 and NIKA-MCP-002.
//   - NIKA-INVOKE-002: args is not an object, or fails the tool's contract.
//   - the builtin's own codes, NIKA-CANCEL-001 (wrapping context.Cause(ctx)) and NIKA-INVOKE-003.
//
// Exactly one `tool_invoked` event {tool, is_error, code?} goes to job.Emit once the call is
// settled, whatever its outcome; builtins emit their own events (nika:log, nika:emit) through
// job.Emit before it.
func (v *Verb) Run(ctx context.Context, job workflow.Job) (out workflow.Outcome) {
	name, ok := job.Fields["tool"].(string)
	if !ok || name == "" {
		return workflow.Failed(fields.Invalid("tool", "`tool` must be a tool name, not %s", fields.KindOf(job.Fields["tool"])))
	}
	start := time.Now()
	if job.Live != nil {
		job.Live(workflow.LiveNote{Kind: "tool_call_started", Tool: name})
	}
	defer func() {
		if r := recover(); r != nil {
			out = workflow.Failed(spec.NewError(spec.CodeInvokeFailed, fmt.Sprintf("%s panicked: %v", name, r), map[string]any{"tool": name}))
		}
		if job.Live != nil {
			n := workflow.LiveNote{Kind: "tool_call_finished", Tool: name, Outcome: "ok", IsError: out.Err != nil, Elapsed: time.Since(start)}
			if out.Err != nil {
				n.Code, n.Outcome = out.Err.Code, out.Err.Code
			}
			job.Live(n)
		}
		f := map[string]any{"tool": name, "is_error": out.Err != nil}
		if out.Err != nil && out.Err.Code != "" {
			f["code"] = out.Err.Code
		}
		if job.Emit != nil {
			job.Emit(event.ToolInvoked, f)
		}
	}()
	return v.call(ctx, job, name)
}

func (v *Verb) call(ctx context.Context, job workflow.Job, name string) workflow.Outcome {
	args := map[string]any{}
	switch a := job.Fields["args"].(type) {
	case nil:
	case map[string]any:
		args = a
	case map[string]string:
		for k, s := range a {
			args[k] = s
		}
	default:
		return workflow.Failed(spec.NewError(spec.CodeInvokeArgs, fmt.Sprintf("the arguments of %s must be an object, not %s", name, fields.KindOf(a)),
			map[string]any{"tool": name, "violations": []any{map[string]any{"path": "", "message": "args must be an object"}}}))
	}
	if job.Permits != nil && !spec.ToolAllowed(job.Permits.Tools, name) {
		return workflow.Failed(spec.NewError(spec.CodeSecPermits, fmt.Sprintf("`permits.tools` does not admit %s", name),
			map[string]any{"tool": name, "gate": "tools"}))
	}
	if ctx.Err() != nil {
		return workflow.Failed(fields.Cancelled(ctx, nil))
	}
	switch {
	case strings.HasPrefix(name, "nika:"):
		if v.Builtins == nil {
			return workflow.Failed(spec.NewError(spec.CodeInvokeUnknown, fmt.Sprintf("builtin %s is not in this build", name), map[string]any{"tool": name}))
		}
		emit := job.Emit
		if emit == nil {
			emit = func(string, map[string]any) {}
		}
		res, err := v.Builtins.Execute(ctx, tools.Call{Name: name, Args: args, Permits: job.Permits,
			RunDir: job.RunDir, Emit: emit, Now: v.Now, Workflow: job.Workflow, Task: taskID(job), Inspect: job.Inspect,
			CanPause: job.Memo != nil}) // a journaled run can wait for an answer and be resumed
		var pause *tools.Pause
		if errors.As(err, &pause) { // the run waits for the answer (D49)
			return workflow.Outcome{Pause: &workflow.Question{Mode: pause.Mode, Message: pause.Message, Choices: pause.Choices}}
		}
		if err != nil {
			return workflow.Failed(toError(name, err))
		}
		return workflow.Outcome{Output: res}
	case strings.HasPrefix(name, "mcp:"):
		if v.Tools == nil {
			return workflow.Failed(spec.NewError(spec.CodeInvokeUnknown, fmt.Sprintf("%s needs an MCP server, and this engine has no MCP registry — create .nika/mcp_servers.json in the run directory (or point NIKA_MCP_CONFIG at one) that registers the server", name),
				map[string]any{"tool": name}))
		}
		res, err := callMCP(ctx, v.Tools, name, args, job.Live)
		if err != nil {
			return workflow.Failed(toError(name, err))
		}
		return workflow.Outcome{Output: res}
	}
	return workflow.Failed(spec.NewError(spec.CodeInvokeUnknown, fmt.Sprintf("unknown tool %q", name), map[string]any{"tool": name}))
}

// toError maps a tool's error to the outcome's: a *spec.Error as it is, anything else
// NIKA-INVOKE-003 wrapping it.
func toError(name string, err error) *spec.Error {
	var se *spec.Error
	if errors.As(err, &se) {
		return se
	}
	return spec.NewError(spec.CodeInvokeFailed, fmt.Sprintf("%s failed: %v", name, err), map[string]any{"tool": name}).Wrap(err)
}

// taskID is the id of the job's task, "" when the job carries none.
func taskID(job workflow.Job) string {
	if job.Task == nil {
		return ""
	}
	return job.Task.ID
}
