package planner

import (
	"context"
	"sort"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// The views of nika:inspect (LANGUAGE.md §7.2). They describe the run at the
// moment the driver answers, so records and threads depend on timing: a
// workflow that wants a deterministic answer reads them only after the tasks
// it cares about (depends_on).
const (
	ViewCost    = "cost"
	ViewRecords = "records"
	ViewDAG     = "dag_info"
	ViewThreads = "threads"
)

// inspectReq is one nika:inspect question, answered on the driver goroutine,
// which owns the core.
type inspectReq struct {
	view  string
	reply chan any // buffered: the driver never blocks on it
}

// inspector returns the Job.Inspect of one job: it hands the question to the
// driver loop and waits for the answer, or for ctx.
func (d *driver) inspector() func(ctx context.Context, view string) (any, error) {
	return func(ctx context.Context, view string) (any, error) {
		q := inspectReq{view: view, reply: make(chan any, 1)}
		select {
		case d.asks <- q:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// A question taken by the loop is always answered.
		return <-q.reply, nil
	}
}

// answer builds a view on the driver goroutine: the core's, or the
// threads, which only the driver knows (the jobs running now).
func (d *driver) answer(view string) any {
	if view == ViewThreads {
		return d.inspectThreads()
	}
	return d.core.View(view)
}

// View answers nika:inspect's cost, records and dag_info views from the
// core's state (between two inputs, on the goroutine that feeds it); nil
// for any other view (threads belongs to the driver).
func (c *Core) View(view string) any {
	switch view {
	case ViewCost:
		return c.inspectCost()
	case ViewRecords:
		return c.inspectRecords()
	case ViewDAG:
		return c.inspectDAG()
	}
	return nil // the builtin validated view against its enum first
}

// inspectCost sums the token usage the run has accounted so far (settled
// attempts). usd is null: this engine prices nothing (D25).
func (c *Core) inspectCost() map[string]any {
	in, out := 0, 0
	for _, tr := range c.tasks {
		for _, u := range tr.usage {
			in += u.InputTokens
			out += u.OutputTokens
		}
	}
	return map[string]any{"tokens_in": in, "tokens_out": out, "usd": nil}
}

// inspectRecords maps the id of every terminal task to its record (§3.13),
// with the run's secrets masked.
func (c *Core) inspectRecords() map[string]any {
	out := map[string]any{}
	for _, tr := range c.tasks {
		if tr.terminal() {
			out[tr.t.ID] = tr.recordValue()
		}
	}
	mask := event.Masker(workflow.NewMasker(c.in.Secrets))
	return event.MaskRecords(out, mask)
}

// inspectDAG is the task graph: tasks in declaration order, the waves, and
// the edges as [dependency, dependent] pairs, as `nika graph --format json`
// draws them.
func (c *Core) inspectDAG() map[string]any {
	tasks := make([]any, len(c.w.Tasks))
	for i, t := range c.w.Tasks {
		tasks[i] = t.ID
	}
	waves := make([]any, len(c.w.Waves))
	for i, wave := range c.w.Waves {
		ids := make([]any, len(wave))
		for j, t := range wave {
			ids[j] = t.ID
		}
		waves[i] = ids
	}
	var edges []any
	for _, e := range c.w.Graph.Edges() { // e[0] depends on e[1]
		edges = append(edges, []any{e[1], e[0]})
	}
	if edges == nil {
		edges = []any{}
	}
	return map[string]any{"workflow": c.w.Name, "tasks": tasks, "waves": waves, "edges": edges}
}

// inspectThreads lists the attempts running now, on_finally steps and
// recovers left out, sorted by task id, then iteration (then attempt).
func (d *driver) inspectThreads() []any {
	ids := make([]JobID, 0, len(d.running))
	for id := range d.running {
		if id.Kind == JobAttempt {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Iteration != b.Iteration {
			return a.Iteration < b.Iteration
		}
		return a.Attempt < b.Attempt
	})
	out := make([]any, len(ids))
	for i, id := range ids {
		var it any
		if id.Iteration >= 0 {
			it = id.Iteration
		}
		out[i] = map[string]any{"task_id": id.Task, "iteration": it, "attempt": id.Attempt,
			"started_at": d.running[id].at.UTC().Format(timeLayout)}
	}
	return out
}
