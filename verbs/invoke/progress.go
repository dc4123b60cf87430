package invoke

import (
	"context"

	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

// progressCaller is a tools.Source that passes a call's progress notifications on (the MCP
// client's CallProgress).
type progressCaller interface {
	CallProgress(ctx context.Context, name string, args map[string]any, progress func(progress, total float64, message string)) (any, error)
}

// callMCP calls an mcp: tool; while someone watches the live stream and the source can, each
// progress notification of the call becomes a tool_call_progress note (D19).
func callMCP(ctx context.Context, src tools.Source, name string, args map[string]any, live func(workflow.LiveNote)) (any, error) {
	pc, ok := src.(progressCaller)
	if !ok || live == nil {
		return src.Call(ctx, name, args)
	}
	return pc.CallProgress(ctx, name, args, func(float64, float64, string) {
		live(workflow.LiveNote{Kind: "tool_call_progress", Tool: name})
	})
}
