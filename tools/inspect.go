package tools

import (
	"context"
	"fmt"

	"github.com/nikahq/nika/spec"
)

// runInspect asks the planner about the running workflow (LANGUAGE.md §7.2). The views are
// built by the planner, which owns the run's state; the builtin only forwards the question.
func runInspect(ctx context.Context, in *invocation) (any, error) {
	view, err := in.str("view", "")
	if err != nil {
		return nil, err
	}
	if in.call.Inspect == nil {
		return nil, spec.NewError(codeFailed, "nika:inspect has no running workflow to inspect here",
			map[string]any{"tool": "nika:inspect", "view": view})
	}
	out, err := in.call.Inspect(ctx, view)
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelError(ctx)
		}
		return nil, spec.NewError(codeFailed, fmt.Sprintf("nika:inspect %s: %v", view, err), map[string]any{"view": view}).Wrap(err)
	}
	return out, nil
}
