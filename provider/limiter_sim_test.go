package provider

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The limiter against a simulated provider, in simulated time: BenchmarkCapacity's workload
// (provider/openai/capacity_bench_test.go) with every delay explicit, so that the state machine's
// reaction to a ceiling is reproducible and its causes can be told apart (how late the first
// refusal comes back, what pacing had released, the burst after a pause).

// simClock is a discrete-event clock: AfterFunc queues an event, run executes them in time order
// (ties in the order queued), each followed by after.
type simClock struct {
	now    time.Time
	events simEvents
	seq    int
	after  func()
}

type simEvent struct {
	at      time.Time
	seq     int
	f       func()
	stopped bool
}

type simEvents []*simEvent

func (h simEvents) Len() int { return len(h) }
func (h simEvents) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || (h[i].at.Equal(h[j].at) && h[i].seq < h[j].seq)
}
func (h simEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (c *simClock) Now() time.Time { return c.now }

func (c *simClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.seq++
	e := &simEvent{at: c.now.Add(d), seq: c.seq, f: f}
	heap.Push(&c.events, e)
	return func() bool { was := !e.stopped; e.stopped = true; return was }
}

func (c *simClock) run() {
	for c.events.Len() > 0 {
		e := heap.Pop(&c.events).(*simEvent)
		if e.stopped {
			continue
		}
		e.stopped = true
		if e.at.After(c.now) {
			c.now = e.at
		}
		e.f()
		if c.after != nil {
			c.after()
		}
	}
}

// simConfig is a simulated provider and its client.
type simConfig struct {
	capacity int           // requests served at once; 0: no limit
	latency  time.Duration // of an admitted request, at the server
	// up and down are the network both ways; proc is the client's work per answer, done one answer
	// at a time (a loaded machine reads answers late, and in bursts).
	up, down, proc time.Duration
	jitter         time.Duration // up to this much more on each way, at random (seeded)
	retryAfter     time.Duration // on a 429
	jobs, turns    int
	initial, max   int
}

// simResult is what BenchmarkCapacity reports, in simulated time.
type simResult struct {
	wall, ws, we   time.Duration
	goodputFrac    float64
	sends, refused int
	failed         int
	maxIn          int
	fullAt         time.Duration // -1: never
	limits         []int         // the limit after each congestion event's first refusal
}

type simJob struct {
	turn, sends int
	w           *waiter
}

func simulate(cfg simConfig) simResult {
	rnd := rand.New(rand.NewPCG(1, 2))
	jit := func() time.Duration {
		if cfg.jitter <= 0 {
			return 0
		}
		return time.Duration(rnd.Int64N(int64(cfg.jitter)))
	}
	clk := &simClock{now: time.Unix(1_700_000_000, 0)}
	start := clk.now
	l := newLimiter(clk, cfg.initial, cfg.max, 0, 0)
	r := simResult{fullAt: -1}
	target := min(cfg.jobs, cfg.max)
	var (
		done             []time.Duration
		pending          []*simJob // waiting in the limiter, in arrival order
		admitted, inside int
		cpuFree          time.Time
	)
	var acquire func(j *simJob)
	send := func(j *simJob, t ticket) {
		j.sends++
		r.sends++
		answer := func(ok bool) {
			clk.AfterFunc(cfg.down+jit(), func() {
				at := clk.now
				if cpuFree.After(at) {
					at = cpuFree
				}
				at = at.Add(cfg.proc)
				cpuFree = at
				clk.AfterFunc(at.Sub(clk.now), func() {
					if ok {
						l.release(t, outcome{ok: true})
						done = append(done, clk.now.Sub(start))
						if j.turn++; j.turn < cfg.turns {
							j.sends = 0
							acquire(j)
						}
						return
					}
					epoch := l.epoch
					l.release(t, outcome{limited: true, retryAfter: cfg.retryAfter})
					if l.epoch != epoch {
						r.limits = append(r.limits, l.capacity, l.limit, int(clk.now.Sub(start).Milliseconds()))
					}
					if j.sends >= DefaultMaxSends {
						r.failed++
						return
					}
					clk.AfterFunc(cfg.retryAfter, func() { acquire(j) })
				})
			})
		}
		clk.AfterFunc(cfg.up+jit(), func() {
			inside++
			r.maxIn = max(r.maxIn, inside)
			if r.fullAt < 0 && inside >= target {
				r.fullAt = clk.now.Sub(start)
			}
			if cfg.capacity > 0 && admitted >= cfg.capacity {
				r.refused++
				inside--
				answer(false)
				return
			}
			admitted++
			clk.AfterFunc(cfg.latency, func() {
				admitted--
				inside--
				answer(true)
			})
		})
	}
	acquire = func(j *simJob) {
		l.mu.Lock()
		now := clk.now
		if len(l.waiters) == 0 && l.admits(now, 1) {
			t := l.grant(now, 1)
			l.mu.Unlock()
			send(j, t)
			return
		}
		j.w = &waiter{tokens: 1, ch: make(chan ticket, 1)}
		l.waiters = append(l.waiters, j.w)
		pending = append(pending, j)
		l.pump(now)
		l.mu.Unlock()
	}
	// After every event: send what the limiter granted (from the front of the queue).
	clk.after = func() {
		for len(pending) > 0 {
			select {
			case t := <-pending[0].w.ch:
				j := pending[0]
				pending = pending[1:]
				send(j, t)
				continue
			default:
			}
			break
		}
	}
	for range cfg.jobs {
		acquire(&simJob{})
	}
	clk.after()
	clk.run()

	r.wall = clk.now.Sub(start)
	c := cfg.capacity
	if c == 0 {
		c = target
	}
	total := cfg.jobs * cfg.turns
	if len(done) > 0 {
		r.we = done[max(0, min(total-c, len(done)-1))]
		r.ws = 2 * time.Second
		if r.we-r.ws < time.Second {
			r.ws = max(0, r.we-time.Second)
		}
		n := 0
		for _, t := range done {
			if t > r.ws && t <= r.we {
				n++
			}
		}
		if r.we > r.ws {
			r.goodputFrac = float64(n) / (r.we - r.ws).Seconds() / (float64(c) / cfg.latency.Seconds())
		}
	}
	return r
}

// Against a provider admitting C at once (200 ms, 429 with Retry-After: 1 above), with no delays
// and with a little network jitter and client work per answer, the limiter turns at least 90% of
// the capacity into answers after the first 2 s with at most 2% of sends refused and no request
// failing, and with no limit it gets all 1,000 jobs' requests out at once within 1 s (the targets of
// BenchmarkCapacity, here in simulated time; that benchmark measures the real client).
func TestLimiterAgainstSimulatedProvider(t *testing.T) {
	for _, d := range []struct{ proc, jitter time.Duration }{{0, 0}, {100 * time.Microsecond, 5 * time.Millisecond}} {
		for _, c := range []int{16, 64, 256, 0} {
			r := simulate(simConfig{capacity: c, latency: 200 * time.Millisecond, up: 100 * time.Microsecond,
				down: 100 * time.Microsecond, proc: d.proc, jitter: d.jitter, retryAfter: time.Second, jobs: 1000, turns: 2,
				initial: DefaultInitialLimit, max: DefaultMaxLimit})
			msg := fmt.Sprintf("proc %v jitter %v C=%d: wall %.2fs, goodput %.3f of C/L, %d of %d sends refused, %d failed, max in flight %d, full after %v; events (capacity, limit, ms): %v",
				d.proc, d.jitter, c, r.wall.Seconds(), r.goodputFrac, r.refused, r.sends, r.failed, r.maxIn, r.fullAt, r.limits)
			t.Log(msg)
			switch {
			case r.failed > 0:
				t.Errorf("%s: requests failed", msg)
			case c == 0 && (r.fullAt < 0 || r.fullAt > time.Second):
				t.Errorf("%s: did not have every job's request out at once within 1 s", msg)
			case c > 0 && r.goodputFrac < 0.9:
				t.Errorf("%s: goodput below 90%% of the capacity", msg)
			case 50*r.refused > r.sends:
				t.Errorf("%s: more than 2%% of sends refused", msg)
			}
		}
	}
}
