package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent"
	"github.com/nikahq/nika/workflow"
)

// holdingAdapter answers in prose but holds each request until released,
// recording the peak number in flight.
type holdingAdapter struct {
	inFlight, peak atomic.Int64
	release        chan struct{}
}

func (h *holdingAdapter) Exchange(ctx context.Context, req provider.Request) provider.Outcome {
	n := h.inFlight.Add(1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer h.inFlight.Add(-1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return provider.Failed(provider.Failure{Model: req.Model, Reason: provider.ReasonCancelled, Message: "cancelled"})
	}
	return provider.Outcome{Response: &provider.Response{Message: provider.Message{Role: provider.RoleAssistant,
		Blocks: []provider.Block{provider.TextBlock("done")}}, StopReason: provider.StopEndTurn}}
}

// TestConcurrentAgentTasksShareOneLimiter: two agent branches and a
// five-item for_each over an agent task (seven loops at once) go through
// one provider instance whose limiter admits 2: never more than 2 requests
// are in flight, and every loop completes (AGENT.md §11.2).
func TestConcurrentAgentTasksShareOneLimiter(t *testing.T) {
	a := spec.CheckSource("l.nika.yaml", []byte(`nika: v1
workflow: shared-limiter
model: openai/gpt-test
tasks:
  - id: left
    agent: { prompt: "left" }
  - id: right
    agent: { prompt: "right" }
  - id: each
    for_each: [1, 2, 3, 4, 5]
    agent: { prompt: "item ${{ item }}" }
`), spec.CheckOptions{})
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(a.Findings)
	}
	h := &holdingAdapter{release: make(chan struct{})}
	reg := provider.NewRegistry()
	reg.Register("openai", provider.NewFront("openai", h, provider.FrontConfig{InitialLimit: 2, MaxLimit: 2}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // lets one held request go at a time, while the run lasts
		defer wg.Done()
		for {
			select {
			case h.release <- struct{}{}:
			case <-stop:
				return
			}
			time.Sleep(200 * time.Microsecond) // pacing only; nothing is asserted on time
		}
	}()
	res := planner.Run(context.Background(), w, planner.Inputs{}, planner.Options{Verbs: map[string]planner.Verb{
		"agent": &agent.Verb{Providers: reg, Builtins: tools.NewBuiltins()},
	}})
	close(stop)
	wg.Wait()
	if res.State != "success" {
		t.Fatalf("state %s: %+v", res.State, res.Tasks)
	}
	if p := h.peak.Load(); p > 2 || p < 1 {
		t.Errorf("peak requests in flight = %d, want 1..2 (one shared limiter of 2)", p)
	}
}
