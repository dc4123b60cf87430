package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, job, _ := setup(t, providertest.NewScripted(providertest.Reply("x")), map[string]any{"prompt": "p"}, 8)
	out := v.Run(ctx, job)
	if out.Err == nil || out.Err.Code != CodeCancel {
		t.Fatalf("got %v", out.Err)
	}
}

// AGENT.md §13.1 as amended by D32 (order, not milliseconds): with
// cooperative calls in flight, cancelling the run makes it return
// NIKA-CANCEL-001; the 5 s guard only turns a hang into a failure.
func TestCancelReturnsPromptly(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), hashCall("b", "2"), hashCall("c", "3")), providertest.Reply("never"))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	entered := make(chan struct{}, 3)
	v.exec = func(ctx context.Context, _ dispatch.Call) (string, json.RawMessage, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *spec.Error, 1)
	go func() { done <- v.Run(ctx, job).Err }()
	for range 3 {
		<-entered
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || err.Code != CodeCancel {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if len(p.Requests()) != 1 {
		t.Fatalf("%d requests after cancel", len(p.Requests()))
	}
}
