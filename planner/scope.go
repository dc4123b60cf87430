package planner

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

type scopeKind uint8

const (
	scopeGate    scopeKind = iota // when, for_each: dependencies
	scopeWith                     // with: dependencies, item/index
	scopeBody                     // verb body: dependencies, with, item/index
	scopeRecover                  // recover: every terminal task, with, item/index
	scopeFinally                  // on_finally: the task and its dependencies
	scopeOutputs                  // envelope outputs: every task
)

// scope builds what an expression at one position may see (LANGUAGE.md
// §4.2). The checker already proved every reference visible; the scope
// still carries only the records the position may read.
func (c *Core) scope(tr *taskRun, kind scopeKind, it *iterRun) workflow.Scope {
	s := workflow.Scope{Vars: c.in.Vars, Env: c.in.Env, Secrets: c.in.Secrets}
	if (kind == scopeWith || kind == scopeBody) && !tr.templated {
		return s // nothing of the attempt reads an expression: no records needed
	}
	switch kind {
	case scopeGate, scopeWith, scopeBody:
		// The dependencies are terminal before the gate, and their records
		// never change: every attempt and iteration shares one map
		// (readers never modify it).
		if tr.depRecords == nil {
			tr.depRecords = make(map[string]any, len(tr.t.DependsOn))
			for _, d := range tr.t.DependsOn {
				tr.depRecords[d] = c.byID[d].recordValue()
			}
		}
		s.Tasks = tr.depRecords
		return c.scopeIter(s, kind, it)
	}
	s.Tasks = map[string]any{}
	switch kind {
	case scopeFinally:
		for _, d := range tr.t.DependsOn {
			s.Tasks[d] = c.byID[d].recordValue()
		}
		s.Tasks[tr.t.ID] = tr.recordValue() // decided, on_finally still running
	case scopeRecover, scopeOutputs:
		for _, o := range c.tasks {
			if o != tr && o.terminal() {
				s.Tasks[o.t.ID] = o.recordValue()
			}
		}
	}
	return c.scopeIter(s, kind, it)
}

// scopeIter adds what an attempt's or a recover's expressions see of its
// iteration: the evaluated `with`, item and index.
func (c *Core) scopeIter(s workflow.Scope, kind scopeKind, it *iterRun) workflow.Scope {
	if it != nil && (kind == scopeBody || kind == scopeRecover || kind == scopeWith) {
		if kind != scopeWith {
			s.With = it.with
		}
		if it.index >= 0 {
			s.Item, s.Index, s.HasItem = it.item, it.index, true
		}
	}
	return s
}

// recordValue is the task record of §3.13 as expressions see it. Once the
// task is terminal its record never changes, so it is built once; readers
// never modify it (evaluation copies what it returns).
func (tr *taskRun) recordValue() map[string]any {
	if tr.rec != nil {
		return tr.rec
	}
	r := map[string]any{
		"status": string(tr.status), "output": tr.output, "error": nil,
		"started_at": nil, "ended_at": nil, "duration_ms": tr.duration().Milliseconds(),
	}
	if tr.err != nil {
		r["error"] = errorValue(tr.err)
	}
	if tr.started {
		r["started_at"] = tr.startedAt.UTC().Format(timeLayout)
		r["ended_at"] = tr.endedAt.UTC().Format(timeLayout)
	}
	for _, n := range bindingNames(tr.t) {
		r[n] = nil
		if tr.status == StatusSuccess {
			r[n] = tr.bindings[n]
		}
	}
	if tr.decided() {
		tr.rec = r
	}
	return r
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// errorValue is the §8.1 error object in the value model; task_id and
// attempt are null for an error that belongs to no task (outputs).
func errorValue(e *spec.Error) map[string]any {
	var code, taskID, attempt any
	if e.Code != "" {
		code = e.Code
	}
	if e.TaskID != "" {
		taskID = e.TaskID
	}
	if e.Attempt > 0 {
		attempt = e.Attempt
	}
	details := map[string]any{}
	for k, v := range e.Details {
		details[k] = v
	}
	return map[string]any{"code": code, "category": e.Category, "message": e.Message, "transient": e.Transient,
		"details": details, "task_id": taskID, "attempt": attempt}
}

func bindingNames(t *spec.Task) []string {
	names := make([]string, len(t.Bindings))
	for i, b := range t.Bindings {
		names[i] = b.Name
	}
	return names
}

// runBindings runs the jq bindings in name order over a raw output (§3.6);
// the first failure stops them. They run under ctx, the attempt's (§3.9: the
// timeout covers them): once it is done, the running binding stops and the
// error is NIKA-CANCEL-001, which the core, who cancelled the job, has
// already superseded (a timeout, a fail-fast) or which is the user's.
func runBindings(ctx context.Context, bs []*spec.Binding, output any) (map[string]any, *spec.Error) {
	if len(bs) == 0 {
		return nil, nil
	}
	sorted := append([]*spec.Binding(nil), bs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := make(map[string]any, len(bs))
	for _, b := range sorted {
		vals, err := b.Program.Run(ctx, output)
		if err != nil {
			if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return nil, spec.NewError(spec.CodeCancel, fmt.Sprintf("binding %q was interrupted: %v", b.Name, err), map[string]any{"binding": b.Name})
			}
			return nil, spec.NewError(spec.CodeVarBindingJQ, fmt.Sprintf("binding %q: %v", b.Name, err), map[string]any{"binding": b.Name})
		}
		if len(vals) != 1 {
			return nil, spec.NewError(spec.CodeVarBindingCount, fmt.Sprintf("binding %q produced %d values, want exactly one", b.Name, len(vals)),
				map[string]any{"binding": b.Name, "count": len(vals)})
		}
		out[b.Name] = vals[0]
	}
	return out, nil
}

// templateTaskRefs lists the tasks a value's expressions read, in first
// appearance order (for on_error.recover's wait, D2).
func templateTaskRefs(v spec.Value) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case *spec.Template:
			for _, p := range x.Parts {
				if p.Program == nil {
					continue
				}
				for _, r := range p.Program.Refs {
					if r.Root == "tasks" && len(r.Path) > 0 && !seen[r.Path[0]] {
						seen[r.Path[0]] = true
						out = append(out, r.Path[0])
					}
				}
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}

// job builds the verb's job; the driver sets Emit. Its fields are nil here:
// the driver evaluates them (Eval) and sets them with setFields.
func (c *Core) job(tr *taskRun, verb string, attempt, iteration int) workflow.Job {
	return workflow.Job{Task: tr.t, Verb: verb, Model: tr.t.Model, Attempt: attempt, Iteration: iteration,
		Permits: c.w.Permits, RunDir: c.cfg.RunDir, Workflow: c.w.Name}
}

// setFields sets a job's evaluated verb fields; a non-empty `model` field
// overrides the task's model.
func setFields(j *workflow.Job, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	j.Fields = fields
	if m, ok := fields["model"].(string); ok && m != "" {
		j.Model = m
	}
}

// typeName names a value's kind with its article, for messages.
func typeName(v any) string {
	k := spec.ValueKind(v)
	switch k {
	case "null", "bytes":
		return k
	case "integer", "array", "object":
		return "an " + k
	}
	return "a " + k
}

// hasTemplate reports whether a value holds an expression anywhere.
func hasTemplate(v spec.Value) bool {
	switch x := v.(type) {
	case *spec.Template:
		return true
	case []any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	}
	return false
}
