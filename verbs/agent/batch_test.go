package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

// §11.3: Run is RunBatch of one.
func TestRunIsBatchOfOne(t *testing.T) {
	p := providertest.NewScripted(providertest.Reply("one"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p"}, 8)
	outs := v.RunBatch(context.Background(), []workflow.Job{job})
	if len(outs) != 1 || outs[0].Err != nil || outs[0].Output != "one" {
		t.Fatalf("%+v", outs)
	}
}

// gateProvider answers every request with a reply naming its model once `need` requests are in
// flight at the same time (a rendezvous: sequential jobs would hang); the test bounds the wait.
type gateProvider struct {
	mu      sync.Mutex
	waiting int
	need    int
	open    chan struct{}
}

func (g *gateProvider) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.need {
		close(g.open)
	}
	g.mu.Unlock()
	out := make([]provider.Outcome, len(reqs))
	for i, r := range reqs {
		select {
		case <-g.open:
			out[i] = providertest.Reply("answer from " + r.Model + " to " + r.Messages[0].Blocks[0].Text)
		case <-ctx.Done():
			out[i] = providertest.Fail(provider.ReasonCancelled)
		}
	}
	return out
}

// §11.3 / D5: RunBatch runs the jobs' loops concurrently and returns one outcome per job in
// job order; a failing job (bad field, panic) is an outcome beside the others; each job's
// events go to that job's own emitter, so the runtime stamps them with its task, attempt and
// iteration.
func TestRunBatchRunsJobsConcurrentlyOneOutcomePerJobInOrder(t *testing.T) {
	g := &gateProvider{need: 3, open: make(chan struct{})}
	reg := provider.NewRegistry()
	reg.Register("test", g)
	v := &Verb{Providers: reg, Builtins: tools.NewBuiltins()}
	recs := make([]*rec, 5)
	jobs := make([]workflow.Job, 5)
	for i := range jobs {
		recs[i] = &rec{}
		jobs[i] = workflow.Job{Verb: "agent", Model: "test/m", Attempt: 1, Iteration: i, Emit: recs[i].emit,
			Fields: map[string]any{"prompt": fmt.Sprint("item ", i), "tools": []any{"nika:hash"}}}
	}
	jobs[1].Fields = map[string]any{"prompt": "  "} // fails at arming
	jobs[3].Emit = func(string, map[string]any) { panic("boom\nsecond line") }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outs := v.RunBatch(ctx, jobs)
	if len(outs) != len(jobs) {
		t.Fatalf("%d outcomes", len(outs))
	}
	for _, i := range []int{0, 2, 4} {
		if outs[i].Err != nil || outs[i].Output != fmt.Sprint("answer from test/m to item ", i) || len(outs[i].Usage) != 1 {
			t.Fatalf("job %d: %v %v (sequential jobs never meet the rendezvous)", i, outs[i].Output, outs[i].Err)
		}
		if len(recs[i].lines) != 3 || !strings.HasPrefix(recs[i].lines[0], event.AgentToolsSelected) || !strings.HasPrefix(recs[i].lines[1], event.InferCompleted) {
			t.Fatalf("job %d events %v", i, recs[i].lines)
		}
	}
	if outs[1].Err == nil || outs[1].Err.Code != spec.CodeVarRuntime || len(recs[1].lines) != 0 {
		t.Fatalf("job 1: %v %v", outs[1].Err, recs[1].lines)
	}
	if outs[3].Err == nil || outs[3].Err.Code != CodePanic || outs[3].Err.Details["panic"] != "boom second line" {
		t.Fatalf("job 3: %v", outs[3].Err)
	}
	if got := v.RunBatch(ctx, nil); len(got) != 0 {
		t.Fatalf("empty batch: %v", got)
	}
}

// A batch runs its jobs under one context; Job.Cancelled stops one job
// alone (a fail-fast sibling, a timeout) while the others finish.
func TestRunBatchCancelsOneJobAlone(t *testing.T) {
	v, job, _ := setup(t, provider.NewMock(), map[string]any{"prompt": "hash it", "tools": []any{"nika:hash", "nika:done"}}, 8)
	stopped := make(chan struct{})
	close(stopped)
	a, b := job, job
	a.Emit = func(string, map[string]any) {} // each job has its own emitter
	b.Emit = func(string, map[string]any) {}
	a.Cancelled = stopped
	out := v.RunBatch(context.Background(), []workflow.Job{a, b})
	if out[0].Err == nil || out[0].Err.Code != "NIKA-CANCEL-001" {
		t.Errorf("cancelled job: %+v, want NIKA-CANCEL-001", out[0])
	}
	if out[1].Err != nil || out[1].Output != "hash it" {
		t.Errorf("sibling: %+v, want success", out[1])
	}
}
