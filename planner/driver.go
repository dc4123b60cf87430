package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Verb runs one job (ARCHITECTURE.md §4). Implementations return failures
// as outcomes and must honour ctx.
type Verb interface {
	Run(ctx context.Context, job workflow.Job) workflow.Outcome
}

// BatchVerb is an optional capability, found by type assertion (D5): the
// driver hands it every job of that verb started in one step.
type BatchVerb interface {
	RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome
}

// Options wire one run.
type Options struct {
	Config
	Verbs     map[string]Verb // by verb name: infer, exec, invoke, agent
	Canonical event.Sink      // the canonical stream; nil: discarded
	Live      event.LiveSink  // the live stream; nil: discarded; called from several goroutines
	Clock     func() time.Time
	// Finally is the context on_finally steps run under. A user
	// cancellation (ctx) does not stop them; cancelling Finally abandons
	// them (a second signal). Nil: they are bounded by their timeout only.
	Finally context.Context
	// Memory is the run's journal (memory.go); nil: none is kept and nothing is restored.
	Memory Memory
}

// Run executes a compiled workflow to the end and returns its result. A
// cancelled ctx is the user's cancellation: nothing new starts, running
// attempts are cancelled, and started tasks still run on_finally within
// their bound. Run returns only once every goroutine it started is done.
func Run(ctx context.Context, w *workflow.Workflow, in Inputs, opts Options) Result {
	return newDriver(ctx, w, in, opts).run()
}

func newDriver(ctx context.Context, w *workflow.Workflow, in Inputs, opts Options) *driver {
	d := &driver{
		opts:     opts,
		core:     NewCore(w, in, opts.Config),
		workflow: w.Name,
		base:     ctx,
		results:  newInbox(),
		running:  map[JobID]runningJob{},
		asks:     make(chan inspectReq),
	}
	d.inspect = d.inspector()
	d.arm = d.afterDelay
	if d.opts.Clock == nil {
		d.opts.Clock = time.Now
	}
	return d
}

// jobResult is a job's report, or (prepared) the `with` its attempt
// evaluated, which the core keeps for the recover before the job ends, or a
// timer that fired: one queue, taken in the order they came.
type jobResult struct {
	timer    *Timer // a timer that fired, and no report
	id       JobID
	rep      Report
	prepared bool
	// An on_finally step's live task_started, reported from its goroutine
	// once its `when` let it run; nil if not.
	step *liveJob
}

// runningJob is a job the driver started and has not had the report of.
type runningJob struct {
	cancel context.CancelFunc
	at     time.Time // when it started (nika:inspect threads)
}

type driver struct {
	opts     Options
	core     *Core
	workflow string // the workflow's name, on every live event
	base     context.Context
	results  *inbox
	// arm arms one timer of a step: once its delay has passed, it puts the
	// timer in the inbox, after the reports that came before it (tests arm
	// their own, fired at a rendezvous).
	arm     func(Timer)
	running map[JobID]runningJob
	asks    chan inspectReq                            // nika:inspect questions, answered by the loop
	inspect func(context.Context, string) (any, error) // every job's Job.Inspect (one closure for the run)
	armed   []*time.Timer
	jobs    map[JobID]liveJob // running jobs as the live stream saw them start; nil without Options.Live
	wg      sync.WaitGroup
	swept   bool // every running job was cancelled once the run was done
	cancels int  // calls of a job's cancel function (foreach_test.go counts them)
	// paused holds the attempts waiting for an answer (memory.go), in the order they paused;
	// backoffs counts the retry back-off timers armed and not yet taken: while one is pending,
	// the run is not paused (the retry will run).
	paused   []Paused
	backoffs int
}

func (d *driver) run() Result {
	defer func() {
		for _, t := range d.armed {
			t.Stop()
		}
	}()
	begun := d.opts.Clock()
	d.live(event.Live{Kind: event.LiveWorkflowStarted})
	userDone := d.base.Done()
	var step Step
	if d.base.Err() != nil { // cancelled before it began: nothing starts (LANGUAGE.md §3.4)
		userDone = nil
		step = d.core.StartCancelled(begun)
	} else {
		step = d.core.Start(begun)
	}
	for {
		d.carryOut(step)
		if step.Done && len(d.running) == 0 {
			break
		}
		if !step.Done && len(d.paused) > 0 && len(d.running) == 0 && d.backoffs == 0 {
			// Nothing runs and nothing will start but through an answer: the run pauses (D49).
			step = d.core.Pause(d.opts.Clock(), d.paused)
			continue
		}
		if step.Done && !d.swept { // fail-fast or timed-out jobs still unwinding
			// Once: nothing starts after the run is done, so the jobs
			// running now are all there is to cancel.
			d.swept = true
			for id := range d.running {
				d.cancel(id)
			}
		}
		if userDone != nil && d.base.Err() != nil {
			// The user's cancellation comes before a result or timer that is ready with it
			// (a job may return just after seeing it): nothing new starts once it happened.
			userDone = nil
			step = d.userCancelled(step)
			continue
		}
		select {
		case <-d.results.ready:
			r, ok := d.results.take()
			if !ok { // a token outlived the report it announced
				step = Step{Done: step.Done} // nothing new to carry out
				continue
			}
			if r.timer != nil {
				if r.timer.Kind == TimerBackoff {
					d.backoffs--
				}
				if step.Done {
					step = Step{Done: true}
					continue
				}
				step = d.core.TimerFired(*r.timer, d.opts.Clock())
				d.liveTimedOut(*r.timer, step)
				continue
			}
			if r.prepared {
				if !step.Done {
					step = d.core.Prepared(r.id, r.rep.With, d.opts.Clock())
				} else {
					step = Step{Done: true}
				}
				continue
			}
			d.cancel(r.id) // releases the job's context
			delete(d.running, r.id)
			d.liveFinished(r)
			if step.Done {
				step = Step{Done: true}
				continue
			}
			if q := r.rep.Outcome.Pause; q != nil && r.id.Kind == JobAttempt {
				// It waits for an answer; the core still sees it running (memory.go).
				d.paused = append(d.paused, Paused{Task: r.id.Task, Iteration: r.id.Iteration, Attempt: r.id.Attempt, Question: *q})
				step = Step{}
				continue
			}
			step = d.core.Finished(r.id, r.rep, d.opts.Clock())
		case q := <-d.asks:
			q.reply <- d.answer(q.view)
			step = Step{Done: step.Done} // nothing new to carry out
		case <-userDone:
			userDone = nil
			step = d.userCancelled(step)
		}
	}
	d.wg.Wait()
	res := d.core.Result()
	d.live(event.Live{Kind: event.LiveWorkflowFinished, Status: string(res.State), Elapsed: d.opts.Clock().Sub(begun)})
	return res
}

// userCancelled applies the user's cancellation; step is the step last carried out.
func (d *driver) userCancelled(step Step) Step {
	if step.Done {
		return Step{Done: true} // the last step was carried out already
	}
	return d.core.Cancel(d.opts.Clock())
}

// carryOut does what a step says: release events, cancel, start, arm.
func (d *driver) carryOut(s Step) {
	d.liveRetrying(s)
	for _, e := range s.Events {
		if d.opts.Canonical != nil {
			d.opts.Canonical.Emit(e)
		}
	}
	for _, id := range s.Cancel {
		d.cancel(id)
		d.unpause(id)
	}
	// D5: several attempts of a verb that can batch start as one call.
	batches := map[string][]Work{}
	var order []string
	for _, wk := range s.Start {
		if wk.ID.Kind != JobFinally && wk.ID.Kind != JobOutputs && d.base.Err() != nil {
			// The user cancelled while this step was being carried out
			// (starting a wide for_each's jobs takes a while): the attempts
			// and recovers not started yet do not start. The loop tells the
			// core before anything else (it gave it the cancellation
			// already, or it is the next input), and the core, which ends
			// them cancelled, wants no report of them.
			continue
		}
		if _, ok := d.opts.Verbs[wk.Job.Verb].(BatchVerb); ok && wk.ID.Kind == JobAttempt {
			if _, seen := batches[wk.Job.Verb]; !seen {
				order = append(order, wk.Job.Verb)
			}
			batches[wk.Job.Verb] = append(batches[wk.Job.Verb], wk)
			continue
		}
		d.start(wk)
	}
	for _, verb := range order {
		if ws := batches[verb]; len(ws) == 1 {
			d.start(ws[0])
		} else {
			d.startBatch(d.opts.Verbs[verb].(BatchVerb), ws)
		}
	}
	for _, t := range s.Timers {
		if t.Kind == TimerBackoff {
			d.backoffs++
		}
		d.arm(t)
	}
}

// unpause forgets a paused attempt the core ended (a cancellation, its task's timeout).
func (d *driver) unpause(id JobID) {
	if len(d.paused) == 0 || id.Kind != JobAttempt {
		return
	}
	d.paused = slices.DeleteFunc(d.paused, func(p Paused) bool {
		return p.Task == id.Task && p.Iteration == id.Iteration && p.Attempt == id.Attempt
	})
}

// afterDelay arms a timer on the clock: Run stops the ones still armed
// when it returns; one that fires after that leaves its timer in an inbox
// nobody reads.
func (d *driver) afterDelay(t Timer) {
	d.armed = append(d.armed, time.AfterFunc(t.Delay, func() { d.results.put(jobResult{timer: &t}) }))
}

// cancel cancels a running job (none if it is not running).
func (d *driver) cancel(id JobID) {
	if j, ok := d.running[id]; ok {
		d.cancels++
		j.cancel()
	}
}

// start runs one job in its own goroutine: its user code (Work.Eval) and its
// verb, if it has one, under the job's context. on_finally steps run on a
// context that a user cancellation does not cancel, bounded by their timeout
// (LANGUAGE.md §3.11); so do the outputs, whose run's state is decided.
func (d *driver) start(wk Work) {
	parent := d.base
	switch wk.ID.Kind {
	case JobFinally:
		parent = context.WithoutCancel(d.base)
		if d.opts.Finally != nil {
			parent = d.opts.Finally
		}
	case JobOutputs:
		parent = context.WithoutCancel(d.base)
	}
	ctx, cancel := context.WithCancel(parent)
	if wk.Timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, wk.Timeout, errStepTimeout)
		inner := cancel
		cancel = func() { cancelT(); inner() }
	}
	d.running[wk.ID] = runningJob{cancel: cancel, at: d.opts.Clock()}
	switch wk.ID.Kind {
	case JobRecover, JobGate, JobOutputs: // no verb: user code only
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			var rep Report
			switch wk.ID.Kind {
			case JobRecover:
				rep = wk.Eval.runRecover(ctx)
			case JobGate:
				rep = wk.Eval.runGate(ctx)
			default:
				rep = wk.Eval.runOutputs()
			}
			d.results.put(jobResult{id: wk.ID, rep: rep})
		}()
		return
	}
	j := &verbJob{d: d, id: wk.ID, timeout: wk.Timeout, eval: wk.Eval, ctx: ctx, verb: d.opts.Verbs[wk.Job.Verb],
		abandoned: wk.ID.Kind == JobFinally && parent.Err() != nil}
	j.job = wk.Job
	j.ready = wk.ID.Kind == JobAttempt && wk.Eval.Literal && wk.Eval.prepareLiteral(&j.job)
	j.job.Emit = j.emit
	j.job.Live = d.liveNotes(wk.ID)
	j.job.Inspect = d.inspect
	if wk.ID.Kind == JobAttempt {
		d.liveStarted(wk.ID, j.job.Verb)
	}
	d.wg.Add(1)
	go j.run()
}

// verbJob is a job that calls a verb (an attempt, an on_finally step), as
// its goroutine runs it: one allocation holds what the goroutine and the
// job's Emit share.
type verbJob struct {
	d         *driver
	id        JobID
	timeout   time.Duration // Work.Timeout
	eval      *Eval
	job       workflow.Job
	ctx       context.Context
	verb      Verb
	abandoned bool // a second signal (Options.Finally cancelled) abandoned on_finally: this step does not run
	mu        sync.Mutex
	emitted   []Emitted
	step      *liveJob  // an on_finally step's live task_started (jobResult)
	rep       Report    // here rather than on the goroutine's stack (run)
	ready     bool      // the driver set the attempt's literal fields (Eval.prepareLiteral)
	mem       JobMemory // the job's journal (memory.go); nil: none
	restored  bool      // an on_finally step's outcome came from the journal
}

func (j *verbJob) emit(kind string, fields map[string]any) {
	j.mu.Lock()
	j.emitted = append(j.emitted, Emitted{Kind: kind, Fields: fields})
	j.mu.Unlock()
}

// run is the job's goroutine. Its frames stay small (the rare paths are
// calls of their own, the report is written into the inbox in place): a
// goroutine starts on a small stack, and one that outgrows it copies it.
func (j *verbJob) run() {
	defer j.d.wg.Done()
	rep := &j.rep
	switch {
	case j.id.Kind == JobFinally:
		j.finallyStep(rep)
	case j.ctx.Err() != nil:
		rep.Outcome = workflow.Failed(notStarted(j.ctx))
	default:
		j.eval.runAttempt(j.ctx, &j.job, j.ready, j.prepared, j.recall, j.runVerb, rep)
	}
	j.mu.Lock()
	rep.Emitted = j.emitted
	j.mu.Unlock()
	if j.mem != nil && !rep.Restored {
		j.mem.Settled(rep)
	}
	j.d.results.putReport(j.id, rep, j.step)
}

// recall asks the run's memory about the attempt (memory.go) and, when it holds an outcome to
// take instead of the verb's, sets it in rep.
func (j *verbJob) recall(job *workflow.Job, with map[string]any, rep *Report) bool {
	m, r, ok := j.d.remember(j.id, job, with)
	j.mem = m
	if !ok {
		return false
	}
	rep.Outcome, rep.Bindings, rep.Restored = r.Outcome, r.Bindings, r.Restored
	return true
}

// finallyStep runs an on_finally step: its own timeout's expiry is
// NIKA-TIMEOUT-001.
//
//go:noinline
func (j *verbJob) finallyStep(rep *Report) {
	evalCtx := j.ctx
	if j.abandoned { // the step's `when` and fields still decide whether it counts as run
		evalCtx = context.WithoutCancel(j.ctx)
	}
	*rep = j.eval.runStep(evalCtx, &j.job, j.runStep)
	rep.Restored = j.restored
	if q := rep.Outcome.Pause; q != nil { // only an attempt pauses (memory.go)
		rep.Outcome = workflow.Failed(spec.NewError(spec.CodeBuiltinPrompt, "an on_finally step cannot wait for an answer: "+q.Error()+"; give the prompt a `default`",
			map[string]any{"mode": q.Mode, "message": q.Message}))
	}
	if rep.Outcome.Err != nil && context.Cause(j.ctx) == errStepTimeout {
		rep.Outcome = workflow.Failed(spec.NewError(spec.CodeTimeout, fmt.Sprintf("on_finally step %d of task %q timed out after %s", j.id.Finally, j.id.Task, j.timeout),
			map[string]any{"timeout": j.timeout.String()}))
	}
}

func (j *verbJob) runVerb(job *workflow.Job) workflow.Outcome { return runVerb(j.ctx, j.verb, job) }

func (j *verbJob) prepared(with map[string]any) { j.d.prepared(j.id, j.eval, with) }

// runStep runs an on_finally step's verb once its `when` let it run.
func (j *verbJob) runStep(job *workflow.Job) workflow.Outcome {
	if at := j.d.liveStep(j.id, job.Verb); !at.IsZero() {
		j.step = &liveJob{verb: job.Verb, at: at}
	}
	if j.abandoned {
		return workflow.Failed(spec.NewError(spec.CodeCancel, "on_finally was abandoned", nil))
	}
	m, r, ok := j.d.remember(j.id, job, nil)
	j.mem = m
	if ok && r.Restored {
		j.restored = true
		return r.Outcome
	}
	return j.runVerb(job)
}

// prepared hands the core an attempt's evaluated `with` before its verb
// runs, when the task's recover may read it after the attempt was ended
// (Eval.KeepWith); called from the job's goroutine.
func (d *driver) prepared(id JobID, e *Eval, with map[string]any) {
	if e.KeepWith {
		d.results.put(jobResult{id: id, rep: Report{With: with}, prepared: true})
	}
}

// startBatch runs several jobs of one BatchVerb in one call, after each
// job's `with` and fields were evaluated under the job's own context (a job
// whose evaluation fails is settled at once and left out of the call). The
// batch's context ends when every job in it was cancelled (or the run was);
// one job is cancelled alone through its Job.Cancelled. A job's outcome
// reaches the core as soon as the verb settles it (Job.Settle), so a failing
// iteration fails fast while its siblings are still running; outcomes the
// verb did not settle early are taken from RunBatch's result. A job's
// bindings run in a goroutine of their own, under the job's context, once
// its outcome is known.
func (d *driver) startBatch(v BatchVerb, ws []Work) {
	ctx, cancel := context.WithCancel(d.base)
	var mu sync.Mutex
	pending := len(ws)
	emitted := make([][]Emitted, len(ws))
	settled := make([]bool, len(ws))
	reps := make([]Report, len(ws)) // With, set once evaluated; Bindings too, for a restored job
	mems := make([]JobMemory, len(ws))
	jctx := make([]context.Context, len(ws))
	// deliver hands job i's outcome to the core, once, after its bindings.
	deliver := func(i int, out workflow.Outcome) {
		mu.Lock()
		if settled[i] {
			mu.Unlock()
			return
		}
		settled[i] = true
		rep := reps[i]
		rep.Emitted = emitted[i]
		mem := mems[i]
		mu.Unlock()
		rep.Outcome = out
		e := ws[i].Eval
		if e == nil || out.Err != nil || len(e.Bindings) == 0 || rep.Restored {
			if mem != nil && !rep.Restored {
				mem.Settled(&rep)
			}
			d.results.put(jobResult{id: ws[i].ID, rep: rep})
			return
		}
		d.wg.Add(1) // the batch goroutine holds the group until every job is delivered
		go func() {
			defer d.wg.Done()
			e.bind(jctx[i], &rep)
			if mem != nil {
				mem.Settled(&rep)
			}
			d.results.put(jobResult{id: ws[i].ID, rep: rep})
		}()
	}
	jobs := make([]workflow.Job, len(ws))
	for i, wk := range ws {
		var once sync.Once
		stop := make(chan struct{})
		var cancelJob context.CancelFunc
		jctx[i], cancelJob = context.WithCancel(d.base)
		d.running[wk.ID] = runningJob{at: d.opts.Clock(), cancel: func() {
			once.Do(func() {
				close(stop) // this job alone (Job.Cancelled)
				cancelJob()
				mu.Lock()
				pending--
				last := pending == 0
				mu.Unlock()
				if last {
					cancel()
				}
			})
		}}
		jobs[i] = wk.Job
		jobs[i].Inspect = d.inspect
		jobs[i].Cancelled = stop
		jobs[i].Live = d.liveNotes(wk.ID)
		jobs[i].Emit = func(kind string, fields map[string]any) {
			mu.Lock()
			if !settled[i] {
				emitted[i] = append(emitted[i], Emitted{Kind: kind, Fields: fields})
			}
			mu.Unlock()
		}
		jobs[i].Settle = func(out workflow.Outcome) { deliver(i, out) }
		d.liveStarted(wk.ID, wk.Job.Verb)
	}
	d.live(event.Live{Kind: event.LiveBatchDispatched, Task: ws[0].ID.Task, Verb: ws[0].Job.Verb, Size: len(ws)})
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		var idx []int // the jobs whose with and fields evaluated, in job order
		var batch []workflow.Job
		for i, wk := range ws {
			if jctx[i].Err() != nil {
				deliver(i, workflow.Failed(notStarted(jctx[i])))
				continue
			}
			if wk.Eval == nil {
				idx, batch = append(idx, i), append(batch, jobs[i])
				continue
			}
			with, err := wk.Eval.evalFields(jctx[i], &jobs[i])
			mu.Lock()
			reps[i].With = with
			mu.Unlock()
			if err != nil {
				deliver(i, workflow.Failed(err))
				continue
			}
			d.prepared(wk.ID, wk.Eval, with)
			m, r, ok := d.remember(wk.ID, &jobs[i], with)
			mu.Lock()
			mems[i] = m
			if ok {
				reps[i].Restored, reps[i].Bindings = r.Restored, r.Bindings
			}
			mu.Unlock()
			if ok {
				deliver(i, r.Outcome) // from the journal: the verb does not run (memory.go)
				continue
			}
			idx, batch = append(idx, i), append(batch, jobs[i])
		}
		if len(batch) == 0 {
			return
		}
		outs := runBatch(ctx, v, batch)
		for k, i := range idx {
			deliver(i, outs[k])
		}
	}()
}

// notStarted is the error of a job cancelled before its goroutine began
// (a wide for_each cancelled while most of its jobs wait for a CPU): it
// reports at once, without evaluating its user code or calling its verb.
func notStarted(ctx context.Context) *spec.Error {
	msg := "cancelled before it started"
	if cause := context.Cause(ctx); cause != nil {
		msg += ": " + cause.Error()
	}
	return spec.NewError(spec.CodeCancel, msg, nil)
}

// errStepTimeout is the cause of an on_finally step's context when its own timeout ends it.
var errStepTimeout = errors.New("the on_finally step's timeout expired")

// runBatch calls RunBatch, turning a panic or a wrong count of outcomes
// into error outcomes. A panic fails every job the verb did not settle
// before it, with the panic value and the stack, as runVerb does.
func runBatch(ctx context.Context, v BatchVerb, jobs []workflow.Job) (outs []workflow.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			failed := workflow.Failed(panicError("verb "+jobs[0].Verb, r))
			outs = make([]workflow.Outcome, len(jobs))
			for i := range outs {
				outs[i] = failed
			}
			return
		}
		if len(outs) != len(jobs) {
			failed := workflow.Failed(&spec.Error{Category: "internal_error", Message: fmt.Sprintf("batch verb returned %d outcomes for %d jobs", len(outs), len(jobs)), Details: map[string]any{}})
			outs = make([]workflow.Outcome, len(jobs))
			for i := range outs {
				outs[i] = failed
			}
		}
	}()
	return v.RunBatch(ctx, jobs)
}

// runVerb calls the verb, turning a missing verb or a panic into an error
// outcome (start turns an on_finally step's own timeout into NIKA-TIMEOUT-001).
func runVerb(ctx context.Context, v Verb, job *workflow.Job) (out workflow.Outcome) {
	if v == nil {
		return workflow.Failed(spec.NewError(spec.CodeInvokeUnknown, fmt.Sprintf("verb %q is not in this build", job.Verb), nil))
	}
	defer func() {
		if r := recover(); r != nil {
			out = workflow.Failed(panicError("verb "+job.Verb, r))
		}
	}()
	return v.Run(ctx, *job)
}
