package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/workflow"
)

// §6.7 / D19: the live stream gets calls started and finished, batches, nudges and the finish; the
// canonical stream gets none of them.
func TestLiveStreamReportsCallsBatchesNudgeAndFinish(t *testing.T) {
	p := providertest.NewScripted(
		providertest.ToolCalls("", sameHash("a1"), providertest.Call{ID: "b1", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", sameHash("a2"), providertest.Call{ID: "b2", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.ToolCalls("", sameHash("a3"), providertest.Call{ID: "b3", Name: "nika:jq", Input: `{"bad":1}`}),
		providertest.Reply("fine"),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash", "nika:jq"}}, 8)
	job, live := withLive(job)
	out := v.Run(context.Background(), job)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	var calls, batches, nudges, finished, requests int
	for _, n := range live.notes {
		switch n.Kind {
		case event.LiveToolCallStarted:
			calls++
		case event.LiveToolCallFinished:
			if n.Tool == "nika:jq" && (!n.IsError || n.Code == "" || n.Outcome != n.Code) {
				t.Fatalf("jq finished note %+v", n)
			}
			if n.Tool == "nika:hash" && (n.IsError || n.Outcome != "ok") {
				t.Fatalf("hash finished note %+v", n)
			}
		case event.LiveBatchDispatched:
			batches++
		case event.LiveAgentNudge:
			nudges++
			if n.Code != string(guard.ReasonRepeatedActions) || n.Outcome != n.Code {
				t.Fatalf("nudge note %+v", n)
			}
		case event.LiveAgentFinished:
			finished++
			if n.Outcome != "ok" || n.IsError {
				t.Fatalf("finish note %+v", n)
			}
		case event.LiveProviderRequest:
			requests++
		}
	}
	if calls != 6 || batches != 3 || nudges != 1 || finished != 1 || requests != 4 {
		t.Fatalf("calls %d batches %d nudges %d finished %d requests %d\n%v", calls, batches, nudges, finished, requests, live.kinds())
	}
	if k := live.kinds(); k[len(k)-1] != event.LiveAgentFinished {
		t.Fatalf("agent_finished is not last: %v", k)
	}
	// Each batch: batch_dispatched, then started/finished pairs, before the next provider request.
	k := live.kinds()
	if !slices.Equal(k[:2], []string{event.LiveProviderRequest, event.LiveBatchDispatched}) {
		t.Fatalf("live order %v", k)
	}
	for _, l := range ev.lines {
		kind, _, _ := strings.Cut(l, " ")
		switch kind {
		case event.LiveToolCallStarted, event.LiveToolCallFinished, event.LiveBatchDispatched, event.LiveAgentFinished, event.LiveProviderRequest:
			t.Fatalf("live kind on the canonical stream: %s", l)
		}
	}
}

func TestLiveStreamReportsStallAndFailedFinish(t *testing.T) {
	p := providertest.NewScripted()
	for i := range 6 {
		p.Push(providertest.ToolCalls("looping", sameHash(fmt.Sprint("s", i))))
	}
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	job, live := withLive(job)
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeStalled {
		t.Fatalf("got %v", out.Err)
	}
	k := live.kinds()
	want := []string{event.LiveAgentStalled + " " + CodeStalled, event.LiveAgentFinished + " " + CodeStalled}
	if !slices.Equal(k[len(k)-2:], want) {
		t.Fatalf("live tail %v", k[len(k)-2:])
	}
}

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

// The agent's failed provider request reaches the live stream like infer's: the D27 reason as
// the outcome, RateLimited set for a rate limit (D19; metrics count it).
func TestLiveProviderRequestFailureReason(t *testing.T) {
	p := providertest.NewScripted(providertest.Fail(provider.ReasonRateLimited))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p"}, 8)
	job, live := withLive(job)
	if out := v.Run(context.Background(), job); out.Err == nil {
		t.Fatal("want a failure")
	}
	var req []workflow.LiveNote
	for _, n := range live.notes {
		if n.Kind == "provider_request" {
			req = append(req, n)
		}
	}
	if len(req) != 1 || req[0].Outcome != provider.ReasonRateLimited || !req[0].RateLimited || req[0].Code != "NIKA-INFER-001" {
		t.Errorf("provider_request notes = %+v", req)
	}
}

// The live stream carries the text a model wrote in each turn (agent_text, for the web view's
// timeline), cut to event.MaxLiveText bytes at a rune boundary; the canonical stream never does.
func TestLiveStreamCarriesTheModelsText(t *testing.T) {
	long := strings.Repeat("é", event.MaxLiveText) // 2 bytes a rune: the cut falls inside one
	p := providertest.NewScripted(
		providertest.ToolCalls("let me hash it", providertest.Call{ID: "a1", Name: "nika:hash", Input: `{"text":"x"}`}),
		providertest.Reply(long),
	)
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	job, live := withLive(job)
	if out := v.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	var texts []string
	for _, n := range live.notes {
		if n.Kind == event.LiveAgentText {
			texts = append(texts, fmt.Sprintf("%d:%d", n.Turn, len(n.Message)))
			if n.Turn == 1 && n.Message != "let me hash it" {
				t.Errorf("turn 1 text %q", n.Message)
			}
			if n.Turn == 2 && (len(n.Message) > event.MaxLiveText || !strings.HasSuffix(n.Message, "…") || !strings.HasPrefix(long, strings.TrimSuffix(n.Message, "…"))) {
				t.Errorf("turn 2 text is %d bytes, not a prefix of the reply cut with …", len(n.Message))
			}
		}
	}
	if len(texts) != 2 {
		t.Fatalf("agent_text notes %v, want one per turn with text", texts)
	}
	for _, l := range ev.lines {
		if strings.Contains(l, "let me hash it") {
			t.Fatalf("the model's text reached the canonical stream: %s", l)
		}
	}
}
