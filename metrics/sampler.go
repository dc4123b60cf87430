package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
)

// DefaultSampleInterval is how often a Sampler looks at the providers' limiters by default.
const DefaultSampleInterval = 250 * time.Millisecond

// LimitersOf returns the instances of reg that have a limiter to observe, by provider name (the
// mock has none).
func LimitersOf(reg *provider.Registry) map[string]Limiter {
	out := map[string]Limiter{}
	if reg == nil {
		return out
	}
	for name, p := range reg.Instances() {
		if l, ok := p.(Limiter); ok {
			out[name] = l
		}
	}
	return out
}

// SamplerOptions configure StartSampler. The zero value samples every DefaultSampleInterval.
type SamplerOptions struct {
	// Workflow is the Workflow field of the observations (the planner stamps its own; the sampler
	// is not the planner).
	Workflow string
	// Interval between two samples; 0 means DefaultSampleInterval. Unused when Ticks is set.
	Interval time.Duration
	// Ticks, when set, drives the samples instead of a time.Ticker: one sample per value received.
	Ticks <-chan time.Time
	// Now stamps the observations' At; nil is time.Now.
	Now func() time.Time
}

// Sampler turns the providers' limiter snapshots into the live stream's provider_state: at every
// tick, one observation per provider whose snapshot (limit, in flight, waiting, rate-limited
// answers) changed since the last one sent, in provider-name order; and when it stops, one final
// observation per provider, changed or not, so that the last provider_state of each provider says
// how it ended. Its one goroutine ends in Stop. Build it with StartSampler.
type Sampler struct {
	names   []string // sorted
	sources map[string]Limiter
	sink    event.LiveSink
	opts    SamplerOptions
	last    map[string]provider.Stats // what was sent: the goroutine's, then Stop's

	quit, done chan struct{}
	once       sync.Once
}

// StartSampler starts sampling sources (nil entries are skipped) into sink. With no source or a nil
// sink it starts nothing and sends nothing.
func StartSampler(sources map[string]Limiter, sink event.LiveSink, opts SamplerOptions) *Sampler {
	s := &Sampler{sources: map[string]Limiter{}, sink: sink, opts: opts, last: map[string]provider.Stats{}}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if sink == nil {
		return s
	}
	for name, l := range sources {
		if l != nil {
			s.names = append(s.names, name)
			s.sources[name] = l
		}
	}
	if len(s.names) == 0 {
		return s
	}
	slices.Sort(s.names)
	s.quit, s.done = make(chan struct{}), make(chan struct{})
	ticks := s.opts.Ticks
	var ticker *time.Ticker
	if ticks == nil {
		interval := s.opts.Interval
		if interval <= 0 {
			interval = DefaultSampleInterval
		}
		ticker = time.NewTicker(interval)
		ticks = ticker.C
	}
	go func() {
		defer close(s.done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-s.quit:
				return
			case <-ticks:
				s.sample(false)
			}
		}
	}()
	return s
}

// Stop ends the goroutine, waits for it, then sends the final provider_state of every provider. It
// may be called more than once and from several goroutines; the first call does the work and the
// others wait for it.
func (s *Sampler) Stop() {
	s.once.Do(func() {
		if s.quit == nil {
			return
		}
		close(s.quit)
		<-s.done
		s.sample(true)
	})
}

// StopAtFinish returns next, changed in one way: a workflow_finished stops the sampler before it is
// passed on, so that the final provider_state comes first and workflow_finished stays the last
// observation of the run's live stream. A nil next stays nil.
func (s *Sampler) StopAtFinish(next event.LiveSink) event.LiveSink {
	if next == nil {
		return nil
	}
	return event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveWorkflowFinished {
			s.Stop()
		}
		next.Observe(l)
	})
}

// sample reads every source once and sends what changed, or everything when all is set.
func (s *Sampler) sample(all bool) {
	for _, name := range s.names {
		st := s.sources[name].Stats()
		if prev, seen := s.last[name]; seen && !all && same(prev, st) {
			continue
		}
		s.last[name] = st
		s.sink.Observe(event.Live{Kind: event.LiveProviderState, Workflow: s.opts.Workflow, Provider: name,
			Limit: st.Limit, InFlight: st.InFlight, Waiting: st.Waiting, RateLimitedAnswers: st.RateLimited,
			At: s.opts.Now()})
	}
}

// same compares the fields a provider_state carries (provider.Stats may grow others).
func same(a, b provider.Stats) bool {
	return a.Limit == b.Limit && a.InFlight == b.InFlight && a.Waiting == b.Waiting && a.RateLimited == b.RateLimited
}
