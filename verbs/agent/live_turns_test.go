package agent

import (
	"context"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
)

// agent_finished's Turns (nika_agent_turns) counts the turns the agent took: a run cancelled before
// its first request took none, not one.
func TestLiveTurnsCancelledBeforeFirstTurn(t *testing.T) {
	v, job, _ := setup(t, provider.NewMock(), map[string]any{"prompt": "p"}, 8)
	job, live := withLive(job)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := v.Run(ctx, job)
	if out.Err == nil {
		t.Fatal("a cancelled run succeeded")
	}
	var fin []int
	for _, n := range live.notes {
		switch n.Kind {
		case event.LiveAgentFinished:
			fin = append(fin, n.Turns)
		case event.LiveProviderRequest:
			t.Errorf("a request after the cancellation: %+v", n)
		}
	}
	if len(fin) != 1 || fin[0] != 0 {
		t.Errorf("agent_finished Turns %v, want one note with 0", fin)
	}
}
