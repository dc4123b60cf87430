package metrics

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
)

// fedStats is a Limiter whose every Stats call takes the next snapshot the test sends. With a
// buffer of one, sending a snapshot waits until the sampler has read the one before: the test and
// the sampler meet at every sample, with no sleep.
type fedStats chan provider.Stats

func (f fedStats) Stats() provider.Stats { return <-f }

// recorder is a live sink that keeps what it is given, as "kind provider limit/inflight/waiting/limited" lines.
type recorder struct {
	mu    sync.Mutex
	lines []string
	all   []event.Live
}

func (r *recorder) Observe(l event.Live) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, l)
	if l.Kind != event.LiveProviderState {
		r.lines = append(r.lines, l.Kind)
		return
	}
	r.lines = append(r.lines, fmt.Sprintf("%s %s %d/%d/%d/%d", l.Kind, l.Provider, l.Limit, l.InFlight, l.Waiting, l.RateLimitedAnswers))
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// A tick sends the providers whose snapshot changed, in name order; Stop sends every provider's
// final snapshot, changed or not, once.
func TestSamplerSendsChanges(t *testing.T) {
	defer goleak.VerifyNone(t)
	ticks := make(chan time.Time)
	openai, anthropic := make(fedStats, 1), make(fedStats, 1)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rec := &recorder{}
	s := StartSampler(map[string]Limiter{"openai": openai, "anthropic": anthropic, "absent": nil}, rec,
		SamplerOptions{Workflow: "wf", Ticks: ticks, Now: func() time.Time { return at }})
	step := func(o, a provider.Stats) {
		openai <- o
		anthropic <- a
		ticks <- at
	}
	o1 := provider.Stats{Limit: 8}
	a1 := provider.Stats{Limit: 4, InFlight: 4, Waiting: 10}
	step(o1, a1) // first sight: both
	step(o1, a1) // unchanged: nothing
	o2 := provider.Stats{Limit: 16, InFlight: 12, Waiting: 40}
	step(o2, a1) // openai only
	a2 := a1
	a2.RateLimited = 3
	step(o2, a2) // a counter alone is a change
	step(o2, a2)
	openai <- o2 // the final snapshot
	anthropic <- a2
	s.Stop()
	s.Stop() // a second Stop sends nothing and does not block

	want := []string{
		"provider_state anthropic 4/4/10/0", "provider_state openai 8/0/0/0",
		"provider_state openai 16/12/40/0",
		"provider_state anthropic 4/4/10/3",
		"provider_state anthropic 4/4/10/3", "provider_state openai 16/12/40/0", // Stop
	}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("sent:\n%q\nwant:\n%q", got, want)
	}
	for _, l := range rec.all {
		if l.Workflow != "wf" || !l.At.Equal(at) || l.Task != "" {
			t.Errorf("observation %+v: want Workflow wf, At %v, no task", l, at)
		}
	}
}

// Through StopAtFinish, workflow_finished stops the sampler first: the final snapshots come before
// it, and it stays the last observation of the run.
func TestSamplerStopAtFinish(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := make(fedStats, 1)
	rec := &recorder{}
	s := StartSampler(map[string]Limiter{"openai": src}, rec, SamplerOptions{Ticks: make(chan time.Time)})
	live := s.StopAtFinish(rec)
	live.Observe(event.Live{Kind: event.LiveWorkflowStarted})
	live.Observe(event.Live{Kind: event.LiveTaskStarted})
	src <- provider.Stats{Limit: 2, RateLimited: 1}
	live.Observe(event.Live{Kind: event.LiveWorkflowFinished, Status: "success"})
	s.Stop() // the run's own Stop, after planner.Run: already done
	want := []string{"workflow_started", "task_started", "provider_state openai 2/0/0/1", "workflow_finished"}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if s.StopAtFinish(nil) != nil {
		t.Error("StopAtFinish(nil) is not nil")
	}
}

// panicStats fails a test that reads it.
type panicStats struct{}

func (panicStats) Stats() provider.Stats { panic("Stats read") }

// With nothing to sample or nowhere to send, no goroutine starts and nothing is read or sent; the
// real ticker (no Ticks) is stopped with its goroutine.
func TestSamplerIdleAndRealTicker(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	for _, s := range []*Sampler{
		StartSampler(nil, rec, SamplerOptions{}),
		StartSampler(map[string]Limiter{"x": nil}, rec, SamplerOptions{}),
		StartSampler(map[string]Limiter{"x": panicStats{}}, nil, SamplerOptions{}),
	} {
		s.Stop()
		if s.StopAtFinish(nil) != nil {
			t.Error("StopAtFinish(nil) is not nil")
		}
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("sent %q", got)
	}
	src := make(fedStats, 1)
	s := StartSampler(map[string]Limiter{"openai": src}, rec, SamplerOptions{Interval: time.Hour})
	src <- provider.Stats{Limit: 1}
	s.Stop()
	if got, want := rec.got(), []string{"provider_state openai 1/0/0/0"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if l := rec.all[0]; l.At.IsZero() {
		t.Error("At is zero with the default clock")
	}
}

// LimitersOf keeps the registry's instances that have a limiter.
func TestLimitersOf(t *testing.T) {
	reg := provider.NewRegistry()
	reg.Register("mock", provider.NewMock())
	f := provider.NewFront("openai", nil, provider.FrontConfig{})
	reg.Register("openai", f)
	got := LimitersOf(reg)
	if len(got) != 1 || got["openai"] != Limiter(f) {
		t.Errorf("LimitersOf = %v, want openai only", got)
	}
	if got := LimitersOf(nil); len(got) != 0 {
		t.Errorf("LimitersOf(nil) = %v", got)
	}
}
