package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Config is the engine configuration of one run.
type Config struct {
	RunID            string
	Seed             uint64 // retry jitter seed (--seed)
	MaxParallelTasks int    // 0: unbounded (D4)
	RunDir           string
}

// Inputs are the run's resolved vars, env and secrets.
type Inputs struct {
	Vars, Env, Secrets map[string]any
}

// JobKind tells what a job is. Every kind runs user code in the driver
// (usercode.go); only attempts and on_finally steps call a verb.
type JobKind uint8

const (
	JobAttempt JobKind = iota // an attempt: its with, verb fields, verb, then bindings
	JobRecover                // an on_error.recover: its value, then the bindings over it
	JobFinally                // an on_finally step: its when and fields, then its verb
	JobGate                   // a task's gate: its when, then its for_each collection
	JobOutputs                // the workflow's outputs, once every task is terminal
)

// JobID names one unit of work the core asks the driver to run.
type JobID struct {
	Task      string // "" for JobOutputs
	Kind      JobKind
	Iteration int // 0-based for_each index; -1 outside for_each (and for a gate, a step, the outputs)
	Attempt   int // 1-based; 0 for an on_finally step, a gate, the outputs
	Finally   int // index of the on_finally step; -1 for any other kind
}

// Work is one job to start now.
type Work struct {
	ID      JobID
	Job     workflow.Job  // the verb's job (JobAttempt, JobFinally); Fields nil until Eval set them
	Timeout time.Duration // a bound the driver enforces on this job alone (on_finally steps); 0: none
	// Eval is the job's user code, which the driver runs with the job and
	// under its context (usercode.go); never nil.
	Eval *Eval
}

// TimerKind tells what a timer is for.
type TimerKind uint8

const (
	TimerBackoff  TimerKind = iota + 1 // the wait before the next attempt
	TimerDeadline                      // the task timeout over the whole attempt loop
)

// Timer asks the driver to call TimerFired after Delay.
type Timer struct {
	Task      string
	Iteration int
	Kind      TimerKind
	Seq       int // distinguishes successive timers of the same iteration
	Delay     time.Duration
}

// Step is what the core decided after one input (Start, StartCancelled,
// Finished, Prepared, TimerFired, Cancel, Pause). A driver carries it out whole,
// in this order, before it feeds the core the next input:
//
//  1. Events: write them to the canonical stream as they are, in order.
//     They are final (canonical order, Seq and TS set); what a task has
//     not released yet is kept by the core, never by the driver.
//  2. Cancel: end those jobs (their contexts). A job cancelled here may
//     still report; the core ignores a report it no longer waits for, so
//     the driver may feed it or drop it.
//  3. Start: start every job, in order, each under its own context: an
//     attempt, a recover or a gate under the run's, an on_finally step
//     and the outputs under one the user's cancellation does not end
//     (Options.Finally for a step), bounded by Work.Timeout when it is set
//     (its expiry fails the job with NIKA-TIMEOUT-001). The job runs its
//     Work.Eval (usercode.go), never the core's goroutine, then its verb
//     (attempts and on_finally steps). A batch-capable verb may take the
//     attempts of one step as one call (D5). Each started job is reported
//     once through Finished, and an attempt whose Eval.KeepWith is set
//     reports its evaluated `with` through Prepared before its verb runs.
//     If the user cancelled while the step was being carried out, the
//     attempts, recovers and gates not started yet are not started: the
//     next input must then be Cancel, which ends them without a report.
//  4. Timers: arm each; feed TimerFired once its Delay has passed.
//     Retrying lists the retries whose back-off timers these are, for the
//     live stream (task_retrying now, while the canonical one may wait).
//
// A Step's slices belong to the core again once the driver feeds the next
// input: a driver that keeps them longer copies them.
//
// The user's cancellation is fed as Cancel as soon as it is seen, before
// any report or timer that is ready with it. Once a step is Done the run is
// over: the driver feeds nothing more, cancels the jobs still running (a
// fail-fast, a timeout leave some) and waits for them, then reads Result.
type Step struct {
	Start    []Work
	Cancel   []JobID
	Timers   []Timer
	Events   []event.Event
	Retrying []Retrying
	Done     bool
}

// Retrying is a retry the core decided: the attempt that failed, and the
// code it failed with. Its back-off timer is in the same step, and its
// canonical task_retrying among the events the step releases or keeps for
// later; the driver reports it on the live stream at once.
type Retrying struct {
	Task      string
	Verb      string
	Iteration int
	Attempt   int
	Code      string
}

// Emitted is an event a verb asked for while it ran (nika:log, nika:emit):
// the driver collects them per job and hands them back with the outcome.
type Emitted struct {
	Kind   string
	Fields map[string]any
}

// Core is the deterministic state machine of one run.
type Core struct {
	w     *workflow.Workflow
	in    Inputs
	cfg   Config
	now   time.Time
	step  Step
	spare Step // the last step's slices, reused by the next

	tasks []*taskRun // declaration order
	byID  map[string]*taskRun
	// Incremental scheduling: a task is gated when its count of
	// non-terminal dependencies reaches zero; gated tasks queue for a slot.
	toGate     []*taskRun
	ready      []*taskRun
	recovering []*taskRun
	order      []*taskRun // canonical order
	release    int        // next index in order whose events are not yet released
	seq        int64

	running     int // tasks holding a concurrency slot
	wakeRecover bool
	cancelled   bool
	failed      bool
	started     bool
	finishing   bool // every task is terminal: the outputs job runs
	done        bool
	startedAt   time.Time

	outputs    map[string]any
	outputsErr *spec.Error
	state      Status
	paused     []Paused // the questions a paused run waits on (Pause)

	startedF map[string]map[string]any // the fields of task_started, one per verb (startedFields)

	// visits counts the iterations the core looked at in its loops over a
	// task's iterations: the work the tests of linear cost count
	// (foreach_test.go), which a scan per outcome makes quadratic.
	visits int
}

// NewCore prepares a run; nothing happens until Start.
func NewCore(w *workflow.Workflow, in Inputs, cfg Config) *Core {
	c := &Core{w: w, in: in, cfg: cfg, byID: make(map[string]*taskRun, len(w.Tasks))}
	for _, t := range w.Tasks {
		tr := newTaskRun(t)
		c.tasks = append(c.tasks, tr)
		c.byID[t.ID] = tr
	}
	for _, t := range w.Order {
		c.order = append(c.order, c.byID[t.ID])
	}
	for _, tr := range c.tasks {
		tr.waitingOn = len(tr.t.DependsOn)
		for _, d := range tr.t.DependsOn {
			dep := c.byID[d]
			dep.dependents = append(dep.dependents, tr)
		}
		if len(tr.t.DependsOn) == 0 {
			c.toGate = append(c.toGate, tr)
		}
	}
	return c
}

// becameTerminal is called once when a task's record is decided: its
// dependents count down, and those with nothing left to wait for are gated.
func (c *Core) becameTerminal(tr *taskRun) {
	if tr.counted {
		return
	}
	tr.counted = true
	for _, d := range tr.dependents {
		d.waitingOn--
		if d.waitingOn == 0 {
			c.toGate = append(c.toGate, d)
		}
	}
	if len(c.recovering) > 0 {
		c.wakeRecover = true
	}
}

// Start begins the run: workflow_started, then every task whose
// dependencies are all terminal (those without any) is gated.
func (c *Core) Start(now time.Time) Step { return c.start(now, false) }

// StartCancelled begins a run the user cancelled before it started: after
// workflow_started every task is cancelled and none starts (LANGUAGE.md §3.4).
func (c *Core) StartCancelled(now time.Time) Step { return c.start(now, true) }

func (c *Core) start(now time.Time, cancelled bool) Step {
	c.begin(now)
	if c.started {
		return c.end()
	}
	c.started, c.startedAt = true, now
	c.emitRun(event.WorkflowStarted, map[string]any{
		"workflow": c.w.Name, "tasks": len(c.w.Tasks), "seed": c.cfg.Seed, "vars": c.in.Vars,
	})
	if cancelled {
		c.cancelled = true
		for _, tr := range c.tasks {
			tr.userCancel(c)
		}
	}
	c.advance()
	return c.end()
}

// Finished reports the outcome of a job the core started, with the events
// the verb emitted while it ran and what the driver evaluated around it.
func (c *Core) Finished(id JobID, r Report, now time.Time) Step {
	c.begin(now)
	if id.Kind == JobOutputs {
		c.outputsDone(r)
	} else if tr := c.byID[id.Task]; tr != nil {
		tr.finished(c, id, r)
	}
	c.advance()
	return c.end()
}

// Prepared reports the `with` an attempt evaluated, before its verb ran
// (asked for by Eval.KeepWith): the recover sees it even if the attempt ends
// without a report (a timeout).
func (c *Core) Prepared(id JobID, with map[string]any, now time.Time) Step {
	c.begin(now)
	if tr := c.byID[id.Task]; tr != nil {
		if it := tr.iter(id.Iteration); it != nil && it.state == iterRunning && it.live && tr.jobOf(it) == id && with != nil {
			it.with = with
		}
	}
	return c.end()
}

// TimerFired reports that a timer the core armed has elapsed.
func (c *Core) TimerFired(t Timer, now time.Time) Step {
	c.begin(now)
	if tr := c.byID[t.Task]; tr != nil {
		tr.timer(c, t)
	}
	c.advance()
	return c.end()
}

// Cancel is the user's cancellation (signal or API): nothing new starts,
// running attempts end cancelled, pending tasks become cancelled, and
// started tasks still run on_finally (LANGUAGE.md §3.4).
func (c *Core) Cancel(now time.Time) Step {
	c.begin(now)
	if !c.cancelled && !c.finishing { // the run's state is decided once its outputs are asked for
		c.cancelled = true
		for _, tr := range c.tasks {
			tr.userCancel(c)
		}
	}
	c.advance()
	return c.end()
}

// Pause ends a run in which nothing runs and nothing can start until a person answers the
// questions of the paused attempts (D49, memory.go): the run's state is paused, its terminal
// event workflow_paused lists them, and the tasks not settled stay unsettled (a resumed run
// runs them). The events the core still holds are not released: the journal, not this trace,
// carries the run on.
func (c *Core) Pause(now time.Time, paused []Paused) Step {
	c.begin(now)
	if !c.done && !c.finishing && len(paused) > 0 {
		c.done = true
		c.state = StatusPaused
		c.paused = slices.Clone(paused)
		qs := make([]any, len(c.paused))
		for i, p := range c.paused {
			q := map[string]any{"task": p.Task, "mode": p.Question.Mode, "message": p.Question.Message}
			if p.Iteration >= 0 {
				q["iteration"] = p.Iteration
			}
			if len(p.Question.Choices) > 0 {
				q["choices"] = slices.Clone(p.Question.Choices)
			}
			qs[i] = q
		}
		c.emitRun(event.WorkflowPaused, map[string]any{"state": string(StatusPaused), "questions": qs,
			"timing": map[string]any{"duration_ms": now.Sub(c.startedAt).Milliseconds()}})
	}
	return c.end()
}

// begin starts a step on the slices of the last one (their contents were
// carried out: Step's slices are valid until the next input).
func (c *Core) begin(now time.Time) {
	c.now = now
	b := &c.spare
	clear(b.Start)
	clear(b.Events)
	c.step = Step{Start: b.Start[:0], Cancel: b.Cancel[:0], Timers: b.Timers[:0], Events: b.Events[:0], Retrying: b.Retrying[:0]}
}

func (c *Core) end() Step {
	s := c.step
	s.Done = c.done
	c.spare, c.step = s, Step{}
	return s
}

// advance gates every waiting task whose dependencies are terminal, starts
// what the concurrency bound allows, releases settled events in canonical
// order, and finishes the run when every task is terminal.
func (c *Core) advance() {
	for progress := true; progress; {
		progress = false
		for len(c.toGate) > 0 {
			tr := c.toGate[0]
			c.toGate = pop(c.toGate)
			if tr.phase == phaseWaiting {
				tr.gate(c)
				progress = true
			}
		}
		if n := len(c.ready); n > 1 && !c.cancelled { // a wide wave starts at once: one Start slice for it
			if c.cfg.MaxParallelTasks > 0 {
				n = min(n, c.cfg.MaxParallelTasks-c.running)
			}
			if n > 0 {
				c.step.Start = slices.Grow(c.step.Start, n)
			}
		}
		for len(c.ready) > 0 && !c.cancelled && (c.cfg.MaxParallelTasks <= 0 || c.running < c.cfg.MaxParallelTasks) {
			tr := c.ready[0]
			c.ready = pop(c.ready)
			if tr.phase != phaseReady {
				continue
			}
			c.running++
			tr.holdsSlot = true
			tr.begin(c)
			progress = true
		}
		if c.wakeRecover {
			c.wakeRecover = false
			var waiting []*taskRun
			for _, tr := range c.recovering {
				if !tr.waitingRecover() {
					tr.recovering = false
					continue
				}
				slot := tr.holdsSlot || c.cfg.MaxParallelTasks <= 0 || c.running < c.cfg.MaxParallelTasks
				if !c.recoverReady(tr) || !slot {
					waiting = append(waiting, tr)
					continue
				}
				if !tr.holdsSlot { // D4: the resumed task takes a slot again
					c.running++
					tr.holdsSlot = true
				}
				tr.recovering = false
				tr.resumeRecover(c)
				progress = true
			}
			c.recovering = waiting
		}
	}
	c.releaseSettled()
	if !c.done && c.release == len(c.order) {
		c.finishRun()
	}
}

// pop drops the head of a queue; the last one leaves the queue's capacity
// for the next append (a chain queues one task at a time).
func pop(q []*taskRun) []*taskRun {
	if len(q) == 1 {
		return q[:0]
	}
	return q[1:]
}

func (c *Core) recoverReady(tr *taskRun) bool {
	for _, id := range tr.recoverRefs {
		if dep := c.byID[id]; dep != nil && !dep.terminal() {
			return false
		}
	}
	return true
}

// slotFree gives back a task's concurrency slot.
func (c *Core) slotFree(tr *taskRun) {
	if tr.holdsSlot {
		tr.holdsSlot = false
		c.running--
		if len(c.recovering) > 0 {
			c.wakeRecover = true // a waiting recover may take the slot
		}
	}
}

// waitRecover registers a task whose recover waits on other tasks.
func (c *Core) waitRecover(tr *taskRun) {
	if tr.recovering {
		return
	}
	tr.recovering = true
	c.recovering = append(c.recovering, tr)
	c.wakeRecover = true
}

// releaseSettled moves the buffered events of settled tasks to the step, in
// canonical order: a task that settled early waits for those before it. Of
// the task at the front, still running, what is final already goes too
// (taskRun.stream).
func (c *Core) releaseSettled() {
	for c.release < len(c.order) {
		tr := c.order[c.release]
		if tr.phase != phaseSettled {
			tr.stream(c)
			return
		}
		tr.release(c)
		c.release++
	}
}

func (c *Core) emit(e event.Event) {
	c.seq++
	e.Seq = c.seq
	e.TS = c.now
	e.RunID = c.cfg.RunID
	c.step.Events = append(c.step.Events, e)
}

// startedFields are the fields of a task_started: the same for every task
// of one verb, so one map for them all (a sink treats an event as
// read-only, event.Sink).
func (c *Core) startedFields(verb string) map[string]any {
	f, ok := c.startedF[verb]
	if !ok {
		if c.startedF == nil {
			c.startedF = map[string]map[string]any{}
		}
		f = map[string]any{"verb": verb}
		c.startedF[verb] = f
	}
	return f
}

func (c *Core) emitRun(kind string, fields map[string]any) {
	c.emit(event.Event{Kind: kind, Iteration: -1, Fields: fields})
}

// finishRun starts the outputs job once every task's events are released;
// the run ends when it reports (outputsDone), at once without outputs.
func (c *Core) finishRun() {
	if c.finishing {
		return
	}
	c.finishing = true
	if len(c.w.Outputs) == 0 {
		c.endRun(map[string]any{}, nil)
		return
	}
	decls := append([]*spec.OutputDecl(nil), c.w.Outputs...)
	sort.Slice(decls, func(i, j int) bool { return decls[i].Name < decls[j].Name })
	c.step.Start = append(c.step.Start, Work{ID: JobID{Kind: JobOutputs, Iteration: -1, Finally: -1},
		Eval: &Eval{Scope: c.scope(&taskRun{t: &spec.Task{}}, scopeOutputs, nil), Outputs: decls}})
}

// outputsDone takes the outputs job's report: in a run that already failed
// or was cancelled, entries that could not be evaluated are null, silently.
func (c *Core) outputsDone(r Report) {
	if !c.finishing || c.done {
		return
	}
	out, _ := r.Outcome.Output.(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	err := r.Outcome.Err
	if c.failed || c.cancelled {
		err = nil
	}
	c.endRun(out, err)
}

// endRun releases the run's terminal event.
func (c *Core) endRun(outputs map[string]any, outputsErr *spec.Error) {
	c.done = true
	c.outputs, c.outputsErr = outputs, outputsErr
	if c.outputsErr != nil {
		c.failed = true
	}
	timing := map[string]any{"duration_ms": c.now.Sub(c.startedAt).Milliseconds()}
	switch {
	case c.failed:
		c.state = StatusFailure
		f := map[string]any{"state": string(c.state), "timing": timing}
		if c.outputsErr != nil {
			f["error"] = c.outputsErr.Code
		}
		c.emitRun(event.WorkflowFailed, f)
	case c.cancelled:
		c.state = StatusCancelled
		c.emitRun(event.WorkflowCancelled, map[string]any{"state": string(c.state), "error": spec.CodeCancel, "timing": timing})
	default:
		c.state = StatusSuccess
		c.emitRun(event.WorkflowCompleted, map[string]any{"state": string(c.state), "timing": timing})
	}
}

// Result is the outcome of a finished run: its state, every task's record
// in declaration order, and the outputs.
type Result struct {
	State   Status // success, failure, cancelled
	Tasks   []TaskResult
	Outputs map[string]any
	Error   *spec.Error // an outputs error (NIKA-VAR-009, …), belonging to no task
	Usage   map[string]*ModelUsage
	Paused  []Paused // State paused: the questions it waits on, in the order they were asked
}

// TaskResult is one task's entry in the report (D22).
type TaskResult struct {
	ID     string
	Status Status
	Output any
	Error  *spec.Error
	Usage  map[string]*ModelUsage
}

// ModelUsage sums provider usage per model (D22).
type ModelUsage struct {
	Requests, InputTokens, OutputTokens, Unreported int
}

// Result returns the run's result; meaningful once a Step reported Done.
func (c *Core) Result() Result {
	r := Result{State: c.state, Outputs: c.outputs, Error: c.outputsErr, Usage: map[string]*ModelUsage{}, Paused: c.paused}
	r.Tasks = make([]TaskResult, 0, len(c.tasks))
	for _, tr := range c.tasks {
		tres := TaskResult{ID: tr.t.ID, Status: tr.status, Output: tr.output, Error: tr.err, Usage: tr.usage}
		if c.state == StatusPaused && !tr.terminal() {
			tres.Status, tres.Output = StatusPending, nil
			if slices.ContainsFunc(c.paused, func(p Paused) bool { return p.Task == tr.t.ID }) {
				tres.Status = StatusPaused
			}
		}
		r.Tasks = append(r.Tasks, tres)
		for m, u := range tr.usage {
			agg := r.Usage[m]
			if agg == nil {
				agg = &ModelUsage{}
				r.Usage[m] = agg
			}
			agg.Requests += u.Requests
			agg.InputTokens += u.InputTokens
			agg.OutputTokens += u.OutputTokens
			agg.Unreported += u.Unreported
		}
	}
	return r
}

func (id JobID) String() string {
	switch id.Kind {
	case JobRecover:
		return fmt.Sprintf("%s[%d]#%d/recover", id.Task, id.Iteration, id.Attempt)
	case JobGate:
		return id.Task + "/gate"
	case JobOutputs:
		return "outputs"
	}
	return fmt.Sprintf("%s[%d]#%d/%d", id.Task, id.Iteration, id.Attempt, id.Finally)
}
