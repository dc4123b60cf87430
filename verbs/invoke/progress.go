package invoke

import (
	"context"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

// callMCP calls an mcp: tool; while someone watches the live stream and the source can, each
// progress notification of the call becomes a tool_call_progress note (D19).
func callMCP(ctx context.Context, src tools.Source, name string, args map[string]any, live func(workflow.LiveNote)) (any, error) {
	pc, ok := src.(tools.ProgressCaller)
	if !ok || live == nil {
		return src.Call(ctx, name, args)
	}
	return pc.CallProgress(ctx, name, args, func(progress, total float64, message string) {
		live(workflow.LiveNote{Kind: event.LiveToolCallProgress, Tool: name, Progress: progress, Total: total, Message: message})
	})
}
