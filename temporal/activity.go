package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Names under which Register registers the workflow and the activity.
const (
	WorkflowName = "nika.run"
	JobActivity  = "nika.job"
)

// Activities runs jobs' verbs on a worker. Verbs are the verbs of the worker's runs, built
// through package engine (engine.Engine.ActivityVerbs, D51): one set for every run the worker
// serves, so the exec verb's process bound holds for all of them.
type Activities struct {
	Verbs map[string]planner.Verb
	// Heartbeat is how often a running job heartbeats (Temporal learns that its worker lives, and
	// the job learns of its cancellation); 0: every 5 s, and never less
	// often than a third of the activity's heartbeat timeout.
	Heartbeat time.Duration
}

// RunJob runs one job's verb: the job as the workflow evaluated it, its outcome and the events
// the verb emitted. A verb's failure is an outcome, never the activity's error: only a lost
// worker, a timeout or a cancellation make the activity fail, and the workflow decides what that
// means (never Temporal's retry, whose policy allows one attempt).
//
// The job's Memo (workflow.Job.Memo) is its heartbeat: every step a verb records (the agent: each
// model response and tool batch) goes out with the next heartbeat, and a job dispatched again
// after its worker was lost gets the steps its last heartbeat carried (JobInput.Recorded), so an
// agent goes on after its last recorded turn instead of asking the model again. A Memo also lets
// nika:prompt ask to wait (tools.Call.CanPause) instead of failing.
func (a *Activities) RunJob(ctx context.Context, in JobInput) (JobOutcome, error) {
	job := in.job()
	var mu sync.Mutex
	var emitted []Emitted
	job.Emit = func(kind string, fields map[string]any) {
		mu.Lock()
		emitted = append(emitted, Emitted{Kind: kind, Fields: Value{fields}})
		mu.Unlock()
	}
	m := &memo{ctx: ctx, recorded: in.Recorded, steps: slices.Clone(in.Recorded)}
	job.Memo = m
	stop := m.beat(a.Heartbeat)
	out := runVerb(ctx, a.Verbs[job.Verb], &job)
	stop()
	if err := interrupted(ctx); err != nil { // no outcome: the job runs again, after its recorded steps
		m.mu.Lock()
		steps := slices.Clone(m.steps)
		m.mu.Unlock()
		return JobOutcome{}, temporal.NewApplicationError(err.Error(), errInterrupted, steps)
	}
	mu.Lock()
	defer mu.Unlock()
	return JobOutcome{Output: Value{out.Output}, Err: wireError(out.Err), Usage: out.Usage, Pause: out.Pause, Emitted: emitted}, nil
}

// memo is a job's workflow.Memo: the steps it recorded ride on its heartbeats.
type memo struct {
	ctx      context.Context
	recorded []json.RawMessage // what an earlier dispatch of the job recorded
	mu       sync.Mutex
	steps    []json.RawMessage // recorded, and every step since
}

func (m *memo) Recorded() []json.RawMessage { return m.recorded }

func (m *memo) Record(step json.RawMessage) {
	m.mu.Lock()
	m.steps = append(m.steps, slices.Clone(step))
	m.mu.Unlock()
	m.heartbeat()
}

// heartbeat tells Temporal the job lives, with its steps (the SDK throttles what it sends).
func (m *memo) heartbeat() {
	if !activity.IsActivity(m.ctx) {
		return
	}
	m.mu.Lock()
	steps := slices.Clone(m.steps)
	m.mu.Unlock()
	activity.RecordHeartbeat(m.ctx, steps)
}

// beat heartbeats with the memo's steps at once and then every `every` until stop is called.
func (m *memo) beat(every time.Duration) (stop func()) { return beat(m.ctx, every, m.heartbeat) }

// beat calls heartbeat at once and then every `every` (0: 5 s; at most a third of the activity's
// heartbeat timeout) until stop is called or ctx is done; outside an activity it does nothing.
func beat(ctx context.Context, every time.Duration, heartbeat func()) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	if every <= 0 {
		every = 5 * time.Second
	}
	// A beat must come well within the activity's heartbeat timeout (a run may set a short one):
	// a third of it at most.
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		every = min(every, hb/3)
	}
	heartbeat()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				heartbeat()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// runVerb calls the verb, turning a missing verb or a panic into an error outcome, as the
// planner's local driver does.
func runVerb(ctx context.Context, v planner.Verb, job *workflow.Job) (out workflow.Outcome) {
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
