package temporal

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// User code in the workflow.
//
// A job's user code (planner.Work.Eval: an attempt's `with`, verb fields and bindings, a
// recover, a gate, an on_finally step's `when` and fields, the outputs) runs here, in workflow
// code, not in an activity: it is pure (D15: expressions see only the scope, jq gets no
// environment, no clock, no input), so running it again on replay gives the same values, and
// the activity then carries only the verb call, with its fields evaluated. What differs from
// the local driver (planner/usercode.go, whose evaluator is not exported):
//
//   - User code takes no workflow time, so a task timeout never expires while it runs; an
//     expression is still bounded by its step budget, but a jq binding has none, and a runaway
//     one holds the workflow task (Temporal's workflow task timeout then retries it). The local
//     driver ends it at the task's deadline instead.
//   - A cancellation cannot stop it midway (it is not interruptible): it decides at once.
//
// The functions below mirror the planner's (prepare, bind, runRecover, runGate, runStep,
// runOutputs) one for one; the trace-equality tests (equal_test.go) hold the two together.

// background is the context of expressions in workflow code: nothing cancels them midway.
var background = context.Background()

// prepare evaluates an attempt's `with`, then its verb fields, sets the fields in job and
// returns the evaluated `with` (nil if it did not evaluate).
func prepare(e *planner.Eval, job *workflow.Job) (with map[string]any, err *spec.Error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(evaluationPanicked, r)
		}
	}()
	with = map[string]any{}
	for _, nv := range e.With {
		v, err := workflow.EvalContext(background, nv.Value, e.Scope)
		if err != nil {
			return nil, err
		}
		with[nv.Name] = v
	}
	scope := e.Scope
	scope.With = with // the verb body sees with; with itself did not
	fields, err := workflow.EvalContext(background, e.Body, scope)
	if err != nil {
		return with, err
	}
	m, _ := fields.(map[string]any)
	setFields(job, m)
	return with, nil
}

// bind runs the bindings over a successful outcome's output; a binding failure becomes the
// outcome's error (the usage stays: it was spent).
func bind(e *planner.Eval, rep *planner.Report) {
	if rep.Outcome.Err != nil || len(e.Bindings) == 0 {
		return
	}
	b, err := func() (b map[string]any, err *spec.Error) {
		defer func() {
			if r := recover(); r != nil {
				b, err = nil, panicError(evaluationPanicked, r)
			}
		}()
		return runBindings(e.Bindings, rep.Outcome.Output)
	}()
	if err != nil {
		rep.Outcome = workflow.Outcome{Err: err, Usage: rep.Outcome.Usage}
		return
	}
	rep.Bindings = b
}

// runBindings runs output bindings in name order; each must yield exactly one value.
func runBindings(bs []*spec.Binding, output any) (map[string]any, *spec.Error) {
	sorted := append([]*spec.Binding(nil), bs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := make(map[string]any, len(bs))
	for _, b := range sorted {
		vals, err := b.Program.Run(background, output)
		if err != nil {
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

// runRecover evaluates a recover value, then the bindings over it (§3.10).
func runRecover(e *planner.Eval) (rep planner.Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = planner.Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
		}
	}()
	v, err := workflow.EvalContext(background, e.Recover, e.Scope)
	if err != nil {
		return planner.Report{Outcome: workflow.Failed(err)}
	}
	rep.Outcome = workflow.Outcome{Output: v}
	bind(e, &rep)
	return rep
}

// runGate evaluates a task's `when`, then its for_each collection (§3.3, §3.7).
func runGate(e *planner.Eval) (rep planner.Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = planner.Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
		}
	}()
	if e.When != nil {
		ok, err := workflow.EvalBool(e.When, e.Scope)
		if err != nil {
			return planner.Report{Outcome: workflow.Failed(err)}
		}
		if !ok {
			return planner.Report{Skipped: true}
		}
	}
	if e.ForEach == nil {
		return planner.Report{}
	}
	v, err := workflow.EvalContext(background, e.ForEach, e.Scope)
	if err != nil {
		return planner.Report{Outcome: workflow.Failed(err)}
	}
	items, ok := v.([]any)
	if !ok {
		details := map[string]any{"path": "for_each"}
		if tmpl, isT := e.ForEach.(*spec.Template); isT {
			details = map[string]any{"expression": tmpl.Source, "path": tmpl.Path}
		}
		return planner.Report{Outcome: workflow.Failed(spec.NewError(spec.CodeVarRuntime,
			fmt.Sprintf("for_each must yield a list, got %s", typeName(v)), details))}
	}
	return planner.Report{Items: items}
}

// prepareStep evaluates an on_finally step's `when`, then its fields (§3.11): ok is false when
// the `when` is false.
func prepareStep(e *planner.Eval, job *workflow.Job) (ok bool, err *spec.Error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, panicError(evaluationPanicked, r)
		}
	}()
	if e.When != nil {
		pass, err := workflow.EvalBool(e.When, e.Scope)
		if err != nil || !pass {
			return false, err
		}
	}
	fields, err := workflow.EvalContext(background, e.Body, e.Scope)
	if err != nil {
		return false, err
	}
	m, _ := fields.(map[string]any)
	setFields(job, m)
	return true, nil
}

// runOutputs evaluates the envelope outputs in name order (§2.5).
func runOutputs(e *planner.Eval) (rep planner.Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = planner.Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
		}
	}()
	out := make(map[string]any, len(e.Outputs))
	var first *spec.Error
	for _, d := range e.Outputs {
		v, err := workflow.Eval(d.Value, e.Scope)
		if err == nil {
			if _, jerr := canon.Marshal(v); jerr != nil { // NaN, ±Inf: not JSON (§4.7)
				err = spec.NewError(spec.CodeVarRuntime, fmt.Sprintf("output %q cannot be written as JSON: %v", d.Name, jerr),
					map[string]any{"output": d.Name})
			}
		}
		if err == nil && d.Type != "" && !spec.MatchesType(v, d.Type) {
			err = spec.NewError(spec.CodeVarOutputType, fmt.Sprintf("output %q is %s, not %s", d.Name, typeName(v), d.Type),
				map[string]any{"output": d.Name, "type": d.Type})
		}
		if err != nil {
			out[d.Name] = nil
			if first == nil {
				first = err
			}
			continue
		}
		out[d.Name] = v
	}
	return planner.Report{Outcome: workflow.Outcome{Output: out, Err: first}}
}

// setFields sets a job's evaluated verb fields; a non-empty `model` field overrides the task's model.
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

const evaluationPanicked = "evaluating the task's expressions or bindings"

// panicError is the internal error of a recovered panic, as the planner's.
func panicError(what string, r any) *spec.Error {
	return &spec.Error{Category: "internal_error", Message: fmt.Sprintf("%s panicked: %v", what, r),
		Details: map[string]any{"panic": strings.Join(strings.Fields(fmt.Sprint(r)), " "), "stack": string(debug.Stack())}}
}
