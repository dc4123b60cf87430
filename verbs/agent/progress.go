package agent

import (
	"context"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/workflow"
)

// callMCP calls an mcp: tool from the call's worker. While someone watches the live stream and
// the source can, each progress notification of the call becomes a tool_call_progress note with
// the call's turn and index (D19), sent from the MCP session's goroutine: live stream only,
// like the dispatch progress hook, so nothing of the loop is touched.
func (r *run) callMCP(ctx context.Context, c dispatch.Call, turn int, args map[string]any) (any, error) {
	pc, ok := r.v.Tools.(tools.ProgressCaller)
	live := r.job.Live
	if !ok || live == nil {
		return r.v.Tools.Call(ctx, c.Name, args)
	}
	return pc.CallProgress(ctx, c.Name, args, func(progress, total float64, message string) {
		live(workflow.LiveNote{Kind: event.LiveToolCallProgress, Tool: c.Name, Turn: turn, Index: c.Index,
			Progress: progress, Total: total, Message: message})
	})
}
