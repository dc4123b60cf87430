package planner

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// User code off the core.
//
// An attempt's `with`, its verb fields and its output bindings, and an
// on_error.recover value with the bindings over it, are user code: a `${{ }}`
// expression may loop for as long as its step budget lasts, and a jq binding
// has no budget at all (`[range(6e7)] | length`). The core does not run
// them: it would block the run (no other task's outcome, no timer, no
// cancellation could be taken while one ran), and it would run them outside
// the attempt's timeout, which covers the bindings (LANGUAGE.md §3.9). It
// hands them to the driver as data (Work.Eval), the driver runs them with the
// job, under the job's context, and reports what they produced with its
// outcome (Report). So:
//
//   - A task's timeout ends an attempt whose `with`, fields or bindings are
//     still running with NIKA-TIMEOUT-001 when it expires, like one whose verb
//     is: the core decides at the deadline and cancels the job, whose
//     evaluation then stops (expressions within one loop iteration, jq at its
//     next instruction) and whose late report is ignored.
//   - A binding that fails before the deadline is the attempt's error
//     (NIKA-VAR-002, NIKA-VAR-004; §3.6); an expression that runs out of
//     steps is NIKA-VAR-006 (§4.6: a runtime evaluation failure; there is no
//     code of its own for "too expensive", and the value budget already uses
//     VAR-006). Neither is transient.
//   - A user cancellation stops the evaluation as it stops a verb; an
//     evaluation stopped by its context reports NIKA-CANCEL-001.
//   - A recover runs under the run's context, not the timeout (which does
//     not cover it, §3.9); a user cancellation stops it.
//
// The gate (`when`, a for_each collection), an on_finally step's `when` and
// fields, and the envelope outputs are user code too, and run in the driver
// the same way (JobGate, JobFinally, JobOutputs): a gate under the run's
// context (a user cancellation ends it, and the core, which settled the task
// cancelled, ignores its report); an on_finally step under the step's own
// context and timeout; the outputs under a context the user's cancellation
// does not end, because the core decided the run's state before it asked for
// them. A gate made of literals only (`when: true`, a literal list) is no
// user code: the core decides it at once, so that the jobs of one step still
// start together (D5); neither are an attempt's verb fields without `with`
// and without an expression, which the driver copies before it starts the
// job (prepareLiteral). workflow.EvalBool takes no context, so a `when` is
// bounded by its step budget alone.

// Eval is the user code of a job (see above).
type Eval struct {
	// Scope is what the job's expressions see: an attempt's `with`, a
	// recover value, a gate, an on_finally step, the outputs; an attempt's
	// verb fields see it plus the evaluated `with`.
	Scope    workflow.Scope
	With     []spec.NamedValue  // an attempt's `with`, evaluated first (§3.5)
	Body     spec.Value         // an attempt's or an on_finally step's verb fields
	Recover  spec.Value         // a recover job's value (JobRecover)
	Bindings []*spec.Binding    // run over the verb's output, or over the recover value
	When     spec.Value         // a gate's or an on_finally step's `when`; nil: none
	ForEach  spec.Value         // a gate's for_each collection; nil: none
	Outputs  []*spec.OutputDecl // JobOutputs: the declarations, in name order
	// Literal: the attempt has no `with` and its verb fields hold no
	// expression, so they are copied without an evaluator (copyLiteral).
	Literal bool
	// KeepWith: the core wants the evaluated `with` as soon as it is known
	// (Core.Prepared), for a recover that may read it after a timeout ended
	// the attempt.
	KeepWith bool
}

// Report is what the driver reports of a job: the outcome (an error of the
// job's user code is reported as the outcome's error), the events the verb
// emitted, and the values the driver evaluated around the verb.
type Report struct {
	Outcome  workflow.Outcome
	Emitted  []Emitted
	With     map[string]any // an attempt's evaluated `with`; nil if it did not evaluate
	Bindings map[string]any // the bindings over a successful output
	// Skipped: the job's user code decided that nothing more runs: a gate's
	// `when` was false, or an on_finally step's `when` was false (no error)
	// or its `when` or fields did not evaluate (the Outcome's error), and
	// its verb did not run.
	Skipped bool
	Items   []any // a gate's evaluated for_each collection
	// Restored: the journal of an earlier run of this one held the job's success (Memory), and
	// the outcome and bindings are that record's; the verb did not run.
	Restored bool
}

// prepare evaluates an attempt's `with`, then its verb fields, under ctx,
// sets the fields in job, and returns the evaluated `with` (nil if it did
// not evaluate). The job goes by pointer on this path, as through runAttempt
// and runStep: a job's goroutine starts on a small stack, which copies of
// workflow.Job in every frame made it grow (and copy itself) for each job.
func (e *Eval) prepare(ctx context.Context, job *workflow.Job) (with map[string]any, err *spec.Error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(evaluationPanicked, r)
		}
	}()
	with = noWith
	if len(e.With) > 0 {
		with = make(map[string]any, len(e.With))
	}
	for _, nv := range e.With {
		v, err := workflow.EvalContext(ctx, nv.Value, e.Scope)
		if err != nil {
			return nil, err
		}
		with[nv.Name] = v
	}
	scope := e.Scope
	scope.With = with // the verb body sees with; with itself did not
	fields, err := workflow.EvalContext(ctx, e.Body, scope)
	if err != nil {
		return with, err
	}
	m, _ := fields.(map[string]any)
	setFields(job, m)
	return with, nil
}

// prepareLiteral sets the fields of an attempt without `with` whose fields
// hold no expression (Eval.Literal), without an evaluator; false if they
// are not a plain literal tree, for prepare to evaluate. It runs no user
// code, so the driver calls it before it starts the job's goroutine, whose
// first stack is small: the copy's allocations, deep in the runtime, made it
// grow (and copy itself) for every job.
func (e *Eval) prepareLiteral(job *workflow.Job) bool {
	fields, ok := copyLiteral(e.Body)
	if ok {
		m, _ := fields.(map[string]any)
		setFields(job, m)
	}
	return ok
}

// evalFields sets an attempt's fields: a copy of literal ones
// (prepareLiteral), or what prepare evaluates.
func (e *Eval) evalFields(ctx context.Context, job *workflow.Job) (with map[string]any, err *spec.Error) {
	if e.Literal && e.prepareLiteral(job) {
		return noWith, nil
	}
	return e.prepare(ctx, job)
}

// runAttempt runs one attempt under ctx: its `with` and verb fields, then
// (once prepared was told the `with`) the verb through run, which recovers
// its panics, then the bindings over the verb's output. recall, when it
// reports true, set the outcome from the run's journal instead of the verb
// (memory.go): a restored one keeps its journaled bindings, an answer gets
// its bindings run.
// ready: the driver set the job's literal fields already (prepareLiteral).
func (e *Eval) runAttempt(ctx context.Context, job *workflow.Job, ready bool, prepared func(with map[string]any),
	recall func(*workflow.Job, map[string]any, *Report) bool, run func(*workflow.Job) workflow.Outcome, rep *Report) {
	with, err := noWith, (*spec.Error)(nil)
	if !ready {
		with, err = e.evalFields(ctx, job)
	}
	rep.With = with
	if err != nil {
		rep.Outcome = workflow.Failed(err)
		return
	}
	prepared(with)
	if recall(job, with, rep) {
		if !rep.Restored {
			e.bind(ctx, rep)
		}
		return
	}
	rep.Outcome = run(job)
	e.bind(ctx, rep)
}

// bind runs the bindings under ctx over a successful outcome's output; a
// binding failure becomes the outcome's error (the usage stays: it was
// spent).
func (e *Eval) bind(ctx context.Context, rep *Report) {
	if rep.Outcome.Err != nil || len(e.Bindings) == 0 {
		return
	}
	b, err := func() (b map[string]any, err *spec.Error) {
		defer func() {
			if r := recover(); r != nil {
				b, err = nil, panicError(evaluationPanicked, r)
			}
		}()
		return runBindings(ctx, e.Bindings, rep.Outcome.Output)
	}()
	if err != nil {
		rep.Outcome = workflow.Outcome{Err: err, Usage: rep.Outcome.Usage}
		return
	}
	rep.Bindings = b
}

// runRecover evaluates a recover value under ctx, then the bindings over it
// (§3.10).
func (e *Eval) runRecover(ctx context.Context) (rep Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
		}
	}()
	v, err := workflow.EvalContext(ctx, e.Recover, e.Scope)
	if err != nil {
		return Report{Outcome: workflow.Failed(err)}
	}
	rep.Outcome = workflow.Outcome{Output: v}
	e.bind(ctx, &rep)
	return rep
}

// runGate evaluates a task's `when`, then its for_each collection (§3.3,
// §3.7): a false `when` is Skipped, an error the outcome's.
func (e *Eval) runGate(ctx context.Context) (rep Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
		}
	}()
	if e.When != nil {
		ok, err := workflow.EvalBool(e.When, e.Scope)
		if err != nil {
			return Report{Outcome: workflow.Failed(err)}
		}
		if !ok {
			return Report{Skipped: true}
		}
	}
	if e.ForEach == nil {
		return Report{}
	}
	v, err := workflow.EvalContext(ctx, e.ForEach, e.Scope)
	if err != nil {
		return Report{Outcome: workflow.Failed(err)}
	}
	items, ok := v.([]any)
	if !ok {
		details := map[string]any{"path": "for_each"}
		if tmpl, isT := e.ForEach.(*spec.Template); isT {
			details = map[string]any{"expression": tmpl.Source, "path": tmpl.Path}
		}
		return Report{Outcome: workflow.Failed(spec.NewError(spec.CodeVarRuntime,
			fmt.Sprintf("for_each must yield a list, got %s", typeName(v)), details))}
	}
	return Report{Items: items}
}

// prepareStep evaluates an on_finally step's `when`, then its fields under
// ctx (§3.11): ok is false when the `when` is false.
func (e *Eval) prepareStep(ctx context.Context, job *workflow.Job) (ok bool, err *spec.Error) {
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
	fields, err := workflow.EvalContext(ctx, e.Body, e.Scope)
	if err != nil {
		return false, err
	}
	m, _ := fields.(map[string]any)
	setFields(job, m)
	return true, nil
}

// runStep runs an on_finally step: its `when` and fields, then (when they
// let it run) its verb through run.
func (e *Eval) runStep(ctx context.Context, job *workflow.Job, run func(*workflow.Job) workflow.Outcome) Report {
	ok, err := e.prepareStep(ctx, job)
	if err != nil {
		return Report{Outcome: workflow.Failed(err), Skipped: true}
	}
	if !ok {
		return Report{Skipped: true}
	}
	return Report{Outcome: run(job)}
}

// runOutputs evaluates the envelope outputs in name order (§2.5): the
// outcome's output is the map, its error the first that failed (which the
// core keeps only in a run that neither failed nor was cancelled); an
// entry that fails is null.
func (e *Eval) runOutputs() (rep Report) {
	defer func() {
		if r := recover(); r != nil {
			rep = Report{Outcome: workflow.Failed(panicError(evaluationPanicked, r))}
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
	return Report{Outcome: workflow.Outcome{Output: out, Err: first}}
}

// noWith is the evaluated `with` of an attempt without one: empty, shared,
// and never modified (expressions read it; evaluation copies what it
// returns).
var noWith = map[string]any{}

// copyLiteral deep-copies a literal tree without expressions, as
// workflow.Eval would (the verb may modify its fields), within the literal
// budget of workflow.Eval (10,000 nodes, 1 MiB); ok is false for anything
// else (a template, a value of another kind, a tree beyond the budget), which
// the evaluator then handles with its own errors.
func copyLiteral(v spec.Value) (any, bool) {
	b := litBudget{nodes: 10_000, bytes: 1 << 20}
	return b.copy(v, 0)
}

type litBudget struct{ nodes, bytes int }

func (b *litBudget) copy(v any, depth int) (any, bool) {
	b.nodes--
	if b.nodes < 0 || b.bytes < 0 || depth > canon.MaxDepth {
		return nil, false
	}
	switch x := v.(type) { // a scalar is returned as it came: no new interface value
	case nil, bool:
		return v, true
	case int, float64:
		b.bytes -= 8
		return v, true
	case string:
		b.bytes -= len(x)
		return v, b.bytes >= 0
	case []any:
		return b.slice(x, depth)
	case map[string]any:
		return b.object(x, depth)
	}
	return nil, false
}

// slice and object copy the containers in frames of their own, so that the
// leaves' frames stay small (this runs on a job goroutine's first stack).
func (b *litBudget) slice(x []any, depth int) (any, bool) {
	if x == nil {
		return []any(nil), true
	}
	out := make([]any, len(x))
	for i, it := range x {
		c, ok := b.copy(it, depth+1)
		if !ok {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

func (b *litBudget) object(x map[string]any, depth int) (any, bool) {
	if x == nil {
		return map[string]any(nil), true
	}
	out := make(map[string]any, len(x))
	for k, it := range x {
		b.bytes -= len(k)
		c, ok := b.copy(it, depth+1)
		if !ok {
			return nil, false
		}
		out[k] = c
	}
	return out, true
}

const evaluationPanicked = "evaluating the task's expressions or bindings"

// panicError is the internal error of a recovered panic: what panicked, the
// panic value (details.panic, one line, as NIKA-AGENT-007 has it) and the
// stack of the goroutine that panicked (call it from the deferred function).
func panicError(what string, r any) *spec.Error {
	return &spec.Error{Category: "internal_error", Message: fmt.Sprintf("%s panicked: %v", what, r),
		Details: map[string]any{"panic": strings.Join(strings.Fields(fmt.Sprint(r)), " "), "stack": string(debug.Stack())}}
}
