package temporal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

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
	// the job learns of its cancellation); 0: every 5 s.
	Heartbeat time.Duration
}

// RunJob runs one job's verb: the job as the workflow evaluated it, its outcome and the events
// the verb emitted. A verb's failure is an outcome, never the activity's error: only a lost
// worker, a timeout or a cancellation make the activity fail, and the workflow decides what that
// means (never Temporal's retry, whose policy allows one attempt).
func (a *Activities) RunJob(ctx context.Context, in JobInput) (JobOutcome, error) {
	job := in.job()
	var mu sync.Mutex
	var emitted []Emitted
	job.Emit = func(kind string, fields map[string]any) {
		mu.Lock()
		emitted = append(emitted, Emitted{Kind: kind, Fields: Value{fields}})
		mu.Unlock()
	}
	if v := in.Inspect; v != nil {
		job.Inspect = func(_ context.Context, view string) (any, error) {
			if view != v.View {
				return nil, fmt.Errorf("the view %q was not asked for when the job started", view)
			}
			return v.Answer.V, nil
		}
	}
	stop := a.heartbeat(ctx)
	out := runVerb(ctx, a.Verbs[job.Verb], &job)
	stop()
	mu.Lock()
	defer mu.Unlock()
	return JobOutcome{Output: Value{out.Output}, Err: wireError(out.Err), Usage: out.Usage, Pause: out.Pause, Emitted: emitted}, nil
}

// heartbeat records a heartbeat at once and then every a.Heartbeat until stop is called.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.Heartbeat
	if every <= 0 {
		every = 5 * time.Second
	}
	activity.RecordHeartbeat(ctx)
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
				activity.RecordHeartbeat(ctx)
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
