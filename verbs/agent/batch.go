package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// CodePanic is an engine panic inside one job of a batch (AGENT.md §11.3).
const CodePanic = spec.CodeAgentPanic

// RunBatch runs several agent jobs (planner.BatchVerb, DECISIONS.md D5, AGENT.md §11.3): each job
// is one independent loop, all run concurrently, and the result holds one outcome per job in job
// order. A failing job (a panic included, NIKA-AGENT-007) is an outcome beside the others. Each
// job's outcome also goes to its Job.Settle as soon as that job ends, and a job whose
// Job.Cancelled closes stops alone, so a fail-fast for_each stops its running siblings at once.
func (v *Verb) RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome {
	out := make([]workflow.Outcome, len(jobs))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = v.runInBatch(ctx, jobs[i])
			if settle := jobs[i].Settle; settle != nil {
				settle(out[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// runInBatch runs one job of a batch under its own context, which ends when the batch's does or
// when the planner cancels this job alone; a panic becomes the job's NIKA-AGENT-007 outcome.
func (v *Verb) runInBatch(ctx context.Context, job workflow.Job) (out workflow.Outcome) {
	defer func() {
		if rec := recover(); rec != nil {
			msg := strings.Join(strings.Fields(fmt.Sprint(rec)), " ")
			out = workflow.Failed(spec.NewError(CodePanic, "the agent loop panicked: "+msg, map[string]any{"panic": msg}))
		}
	}()
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c := job.Cancelled; c != nil { // the planner cancels this job alone (D3, D5)
		select {
		case <-c: // already cancelled: the job must not start a single request
			cancel()
		default:
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				select {
				case <-c:
					cancel()
				case <-jctx.Done():
				}
			}()
			defer func() { cancel(); <-watched }() // the watcher ends before the job does
		}
	}
	return v.Run(jctx, job)
}
