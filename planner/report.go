package planner

import "sort"

// Report is the run report of D22 as a value of the value model, ready for
// canonical JSON (after masking, D24): run_id, workflow, workflow_state,
// seed, every task's status/output/error (and usage when it called a
// model), outputs, usage per model, and a workflow-level error if any.
func (r Result) Report(runID, workflow string, seed uint64) map[string]any {
	tasks := make(map[string]any, len(r.Tasks))
	for _, t := range r.Tasks {
		entry := map[string]any{"status": string(t.Status), "output": t.Output, "error": nil}
		if t.Error != nil {
			entry["error"] = errorValue(t.Error)
		}
		if len(t.Usage) > 0 {
			entry["usage"] = usageValue(t.Usage)
		}
		tasks[t.ID] = entry
	}
	outputs := r.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	rep := map[string]any{
		"run_id": runID, "workflow": workflow, "workflow_state": string(r.State), "seed": seed,
		"tasks": tasks, "outputs": outputs, "usage": usageValue(r.Usage),
	}
	if r.Error != nil {
		rep["error"] = errorValue(r.Error)
	}
	return rep
}

func usageValue(u map[string]*ModelUsage) map[string]any {
	out := make(map[string]any, len(u))
	models := make([]string, 0, len(u))
	for m := range u {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		x := u[m]
		out[m] = map[string]any{"requests": x.Requests, "input_tokens": x.InputTokens, "output_tokens": x.OutputTokens, "unreported": x.Unreported}
	}
	return out
}
