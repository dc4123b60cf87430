package temporal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	tw "go.temporal.io/sdk/workflow"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Query and signal names of a run.
const (
	QueryEvents    = "events"    // the canonical lines released so far from an index (int), a page at a time
	QueryQuestions = "questions" // the open questions ([]Question)
	SignalAnswer   = "answer"    // an Answer
)

// Defaults of a run's activities (Input's JobTimeout and HeartbeatTimeout when zero).
const (
	DefaultJobTimeout       = 24 * time.Hour
	DefaultHeartbeatTimeout = 30 * time.Second
)

// maxLost bounds how often one job is dispatched again after its worker was lost (its
// heartbeat stopped): a worker that dies on the job every time ends it with an internal error.
const maxLost = 10

// Run is the workflow function (registered as WorkflowName): it compiles the input's workflow and
// drives the planner core to the run's end, as planner.Run does with goroutines (see doc.go).
func Run(ctx tw.Context, in Input) (Output, error) {
	w, err := compile(in)
	if err != nil {
		return Output{}, temporal.NewNonRetryableApplicationError(err.Error(), "nika.invalid", nil)
	}
	d := newDriver(ctx, w, in)
	if err := d.register(); err != nil {
		return Output{}, err
	}
	res := d.run()
	rep, err := canon.Marshal(canon.Finite(res.Report(d.runID, w.Name, in.Seed)))
	if err != nil {
		return Output{}, temporal.NewNonRetryableApplicationError("the run report: "+err.Error(), "nika.report", nil)
	}
	out := Output{State: string(res.State), Report: rep, Outputs: Value{res.Outputs}, EventCount: len(d.lines)}
	if size(d.lines) <= resultEventBytes {
		out.Events = d.lines
	}
	return out, nil
}

// Bounds on the canonical lines one payload carries: Temporal refuses payloads over 2 MiB (and
// warns from 512 KiB), so a long run's lines are read page by page through QueryEvents.
var (
	resultEventBytes = 256 << 10 // bytes of lines the result carries whole, or none (tests lower it)
	maxQueryBytes    = 1 << 20   // bytes of lines one QueryEvents answer carries at most
)

func size(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// page is the lines from index from on, as many as fit in maxQueryBytes (at least one).
func page(lines []string, from int) []string {
	from = max(0, min(from, len(lines)))
	n, end := 0, from
	for end < len(lines) && (end == from || n+len(lines[end]) <= maxQueryBytes) {
		n += len(lines[end])
		end++
	}
	return slices.Clone(lines[from:end])
}

// compile checks and compiles the workflow's text and sets its var-named models: a pure
// function of the input, so every replay compiles the same workflow.
func compile(in Input) (*workflow.Workflow, error) {
	a := spec.CheckSource(in.Name, []byte(in.Source), spec.CheckOptions{Model: in.Model, MCPServers: in.MCPServers, Ceiling: in.Ceiling})
	if !(spec.FileResult{Findings: a.Findings}).Valid() {
		var msgs []string
		for _, f := range a.Findings {
			msgs = append(msgs, fmt.Sprintf("error[%s] %s: %s", f.Code, f.Path, f.Message))
		}
		return nil, fmt.Errorf("%s is not a valid workflow: %s", in.Name, strings.Join(msgs, "; "))
	}
	w, err := workflow.Compile(a)
	if err != nil {
		return nil, err
	}
	if verr := workflow.ResolveModels(w, in.Vars.Map()); verr != nil {
		return nil, verr
	}
	return w, nil
}

// report is one input for the core: a job's report, the `with` an attempt evaluated
// (prepared), or a timer that fired.
type report struct {
	timer    *planner.Timer
	id       planner.JobID
	rep      planner.Report
	prepared bool
}

// waiting is an attempt whose verb asked a question (Outcome.Pause): it waits for an Answer.
type waiting struct {
	planner.Paused
	id   planner.JobID
	eval *planner.Eval
	with map[string]any
}

type driver struct {
	ctx   tw.Context // the run's: Temporal's cancellation of the workflow is the user's
	loop  tw.Context // the driver loop's, which no cancellation ends
	in    Input
	w     *workflow.Workflow
	core  *planner.Core
	runID string
	// queue holds the core's next inputs, in the order they came: the reports of jobs done in
	// workflow code (user code only), and what the selector's callbacks found (a job's activity
	// ended, a timer fired, an answer came).
	queue []report
	// sel is the loop's selector: the futures that ended (waiter.go), the answers, the
	// cancellation.
	sel     tw.Selector
	ended   tw.Channel
	open    *shard // the shard new futures go to until the loop yields (waiter.go)
	running map[planner.JobID]tw.CancelFunc
	// startedAt is when each running attempt started (the threads view of nika:inspect).
	startedAt map[planner.JobID]time.Time
	waiting   []waiting
	lines     []string // the canonical stream, as released
	swept     bool
}

func newDriver(ctx tw.Context, w *workflow.Workflow, in Input) *driver {
	runID := in.RunID
	if runID == "" {
		runID = tw.GetInfo(ctx).WorkflowExecution.ID
	}
	cfg := planner.Config{RunID: runID, Seed: in.Seed, MaxParallelTasks: in.MaxParallelTasks, RunDir: in.RunDir}
	inputs := planner.Inputs{Vars: orEmpty(in.Vars.Map()), Env: orEmpty(in.Env.Map()), Secrets: orEmpty(in.Secrets.Map())}
	loop, _ := tw.NewDisconnectedContext(ctx)
	d := &driver{ctx: ctx, loop: loop, in: in, w: w, core: planner.NewCore(w, inputs, cfg), runID: runID,
		sel: tw.NewSelector(loop), ended: tw.NewChannel(loop), running: map[planner.JobID]tw.CancelFunc{}, startedAt: map[planner.JobID]time.Time{}}
	d.sel.AddReceive(d.ended, func(c tw.ReceiveChannel, _ bool) {
		var e ended
		c.Receive(loop, &e)
		if e.timer != nil {
			d.queue = append(d.queue, report{timer: e.timer})
			return
		}
		d.settle(e.job, e.f)
	})
	d.sel.AddReceive(tw.GetSignalChannel(ctx, SignalAnswer), func(c tw.ReceiveChannel, _ bool) {
		var a Answer
		c.Receive(loop, &a)
		d.answer(a)
	})
	// The cancellation wakes the loop through a channel that gets one value: the closed Done
	// channel itself would be ready at every Select of the one selector.
	cancelled := tw.NewChannel(loop)
	tw.Go(loop, func(c tw.Context) {
		ctx.Done().Receive(c, nil)
		cancelled.Send(c, true)
	})
	d.sel.AddReceive(cancelled, func(c tw.ReceiveChannel, _ bool) { c.Receive(loop, nil) })
	return d
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (d *driver) register() error {
	if err := tw.SetQueryHandler(d.ctx, QueryEvents, func(from int) ([]string, error) { return page(d.lines, from), nil }); err != nil {
		return err
	}
	return tw.SetQueryHandler(d.ctx, QueryQuestions, func() ([]Question, error) { return d.questions(), nil })
}

func (d *driver) now() time.Time { return tw.Now(d.ctx) }

// run is the local driver's loop (planner/driver.go) on Temporal's primitives: the core's
// inputs come one at a time from the queue, which the selector's callbacks fill, and the
// cancellation comes first.
func (d *driver) run() planner.Result {
	userDone := true // the cancellation is still to be fed
	var step planner.Step
	if d.ctx.Err() != nil { // cancelled before it began: nothing starts (LANGUAGE.md §3.4)
		userDone = false
		step = d.core.StartCancelled(d.now())
	} else {
		step = d.core.Start(d.now())
	}
	for {
		d.carryOut(step)
		if step.Done && len(d.running) == 0 {
			break
		}
		if step.Done && !d.swept { // fail-fast or timed-out jobs still unwinding
			d.swept = true
			for _, id := range sortedJobs(d.running) {
				d.running[id]()
			}
		}
		if userDone && d.ctx.Err() != nil { // the cancellation comes before a report ready with it
			userDone = false
			step = d.cancelled(step)
			continue
		}
		if len(d.queue) > 0 {
			r := d.queue[0]
			d.queue = d.queue[1:]
			step = d.take(r, step)
			continue
		}
		d.open = nil         // the shards of this step are sealed: their coroutines run now
		d.sel.Select(d.loop) // one callback: it queues an input, or wakes the loop
		step = planner.Step{Done: step.Done}
	}
	return d.core.Result()
}

// cancelled applies the user's cancellation; step is the step last carried out.
func (d *driver) cancelled(step planner.Step) planner.Step {
	if step.Done {
		return planner.Step{Done: true}
	}
	return d.core.Cancel(d.now())
}

// take feeds the core one report; step is the step last carried out.
func (d *driver) take(r report, step planner.Step) planner.Step {
	switch {
	case r.timer != nil:
		if step.Done {
			return planner.Step{Done: true}
		}
		return d.core.TimerFired(*r.timer, d.now())
	case r.prepared:
		if step.Done {
			return planner.Step{Done: true}
		}
		return d.core.Prepared(r.id, r.rep.With, d.now())
	}
	if cancel, ok := d.running[r.id]; ok {
		cancel() // releases the job's context
		delete(d.running, r.id)
		delete(d.startedAt, r.id)
	}
	if step.Done {
		return planner.Step{Done: true}
	}
	return d.core.Finished(r.id, r.rep, d.now())
}

// carryOut does what a step says (planner.Step): release events, cancel, start, arm.
func (d *driver) carryOut(s planner.Step) {
	for _, e := range s.Events {
		b, err := e.AppendJSON(nil)
		if err != nil { // a value with no canonical encoding: the line says so, as a sink would skip it
			b = fmt.Appendf(nil, `{"kind":"encoding_error","error":%q}`, err.Error())
		}
		d.lines = append(d.lines, string(b))
	}
	for _, id := range s.Cancel {
		if cancel, ok := d.running[id]; ok {
			cancel()
		}
		d.unpause(id)
	}
	for _, wk := range s.Start {
		d.start(wk)
	}
	for _, t := range s.Timers {
		d.arm(t)
	}
}

// arm starts a Temporal timer for one of the core's; it fires whatever the cancellation (the
// core decides what a timer means once the run is cancelled).
func (d *driver) arm(t planner.Timer) {
	d.await(ended{f: tw.NewTimer(d.loop, t.Delay), timer: &t})
}

// sortedJobs lists a job set in a fixed order: workflow code never lets a map's order decide.
func sortedJobs(m map[planner.JobID]tw.CancelFunc) []planner.JobID {
	ids := make([]planner.JobID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b planner.JobID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}

// isCancelled reports whether an activity's error is its cancellation.
func isCancelled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce)
}
