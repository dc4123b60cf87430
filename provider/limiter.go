package provider

import (
	"context"
	"sync"
	"time"
)

// The limiter's tuning (AGENT.md §11.2; the decisions are in Front's doc).
const (
	// slowStartExit ends slow start when the smoothed latency of successes passes this multiple of
	// the lowest latency seen: the provider is queueing what it does not serve.
	slowStartExit = 3
	// latencySamples successes are needed before latency can end slow start.
	latencySamples = 8
	// slowStartGain is what each success adds to the limit in slow start below slowStartFast (the
	// limit grows (1+slowStartGain)-fold per round: 16, 64, 256 from DefaultInitialLimit), and 1
	// above it (it doubles per round). The new
	// slots open one at a time, paced over a round at the floor latency, so an overshoot is bounded
	// by how fast the first refusal comes back, not by the size of the step; above slowStartFast the
	// step, and so the overshoot while a refusal is on its way back, is kept smaller.
	slowStartGain = 3
	slowStartFast = 256
	// paceMin is the shortest time between two slots opened by pacing.
	paceMin = 50 * time.Microsecond
	// probeHold is how long, after a congestion event, the limit stays at or below the capacity it
	// found before it grows again; it doubles at each congestion event that finds no more capacity
	// than the one before (a probe that failed), up to probeHoldMax, and is back to probeHold when
	// one finds more.
	probeHold    = 10 * time.Second
	probeHoldMax = 5 * time.Minute
	// budgetWindow is the window of the RPM and TPM budgets.
	budgetWindow = time.Minute
)

// clock is the limiter's time: Now, and AfterFunc to wake the queue when a pause or a budget
// window ends. Tests inject a fake one.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// limiter caps the requests a Front has in flight, serving waiters in arrival order. It is a state
// machine over an injected clock; a send takes a ticket with acquire and gives it back with release,
// saying how the send went.
//
// The limit starts in slow start: each success of a send made while the limit was in use raises it
// by gain (3 below slowStartFast, 256, then 1), so it quadruples, then doubles, per round of requests, up
// to ssthresh; the new slots open paced over the round (catchUp). The first sign of congestion ends slow
// start: a rate_limited answer, or the smoothed latency rising past slowStartExit times the floor
// (ssthresh becomes the limit, which is kept). A rate_limited answer reveals a capacity: the
// requests still in flight as it comes back, the smallest over the congestion event (see
// congested). It halves the limit, and brings it no higher than just below that capacity, where
// ssthresh goes; a probe above a capacity already found that fails goes back to it instead of
// halving. Above ssthresh the limit grows by 1 per limit successes (congestion avoidance), and
// not at all for a hold after a congestion event. A rate_limited answer of a send granted before
// the last decrease does not decrease again: one congestion event, one decrease.
//
// A Retry-After on a rate_limited answer pauses every send until it passes. RPM and TPM budgets
// admit a send only while the sends (tokens) of the last minute, this one included, fit; a single
// request larger than the whole TPM budget goes alone, when the window is empty.
type limiter struct {
	mu    sync.Mutex
	clock clock

	limit, max int
	open       int       // slots usable now: the limit, less what pacing has not opened yet
	paceAt     time.Time // when pacing opens the next slot; zero when open == limit
	ssthresh   int       // slow start while limit < ssthresh
	inflight   int
	streak     int    // successes since the last additive increase
	epoch      uint64 // bumped on every decrease

	floor    time.Duration // the lowest latency of a success
	smoothed time.Duration // the exponentially weighted mean latency of successes (1/8)
	samples  int

	capacity  int // the capacity the last congestion event revealed (0: none yet)
	hold      time.Duration
	holdUntil time.Time // no additive increase before
	paused    time.Time // no send before (Retry-After)

	rpm, tpm *budget

	waiters []*waiter // FIFO
	wake    func() bool
	wakeAt  time.Time

	rateLimited uint64 // answers rate_limited, ever

	queued func() // tests: called (under the lock) once a waiter has joined the queue and the wake is armed
}

// waiter is a queued acquire; it is granted by a send on its buffered channel.
type waiter struct {
	tokens int
	ch     chan ticket
}

// ticket is a granted send.
type ticket struct {
	epoch  uint64
	level  int // requests in flight when it was granted, itself included
	limit  int // the limit when it was granted
	sent   time.Time
	tokens *spent // its entry in the TPM window; nil without a TPM budget
}

// outcome is how a send went, for release.
type outcome struct {
	ok         bool          // answered
	limited    bool          // answered rate_limited
	retryAfter time.Duration // the server's hint on a rate_limited answer; 0: none
	tokens     int           // tokens the provider reported (input + output); 0: not reported
}

func newLimiter(c clock, initial, maximum, rpm, tpm int) *limiter {
	l := &limiter{clock: c, limit: initial, open: initial, max: maximum, ssthresh: maximum, hold: probeHold}
	if rpm > 0 {
		l.rpm = &budget{size: rpm}
	}
	if tpm > 0 {
		l.tpm = &budget{size: tpm}
	}
	return l
}

// acquire waits for a ticket for a send of an estimated tokens, or for ctx.
func (l *limiter) acquire(ctx context.Context, tokens int) (ticket, error) {
	l.mu.Lock()
	if err := ctx.Err(); err != nil { // a cancellation that came while the caller was on its way here
		l.mu.Unlock()
		return ticket{}, err
	}
	now := l.clock.Now()
	if len(l.waiters) == 0 && l.admits(now, tokens) {
		t := l.grant(now, tokens)
		l.mu.Unlock()
		return t, nil
	}
	w := &waiter{tokens: tokens, ch: make(chan ticket, 1)}
	l.waiters = append(l.waiters, w)
	l.pump(now) // arms the wake when only time holds the queue
	if l.queued != nil {
		l.queued()
	}
	l.mu.Unlock()

	select {
	case t := <-w.ch:
		if err := ctx.Err(); err != nil {
			l.release(t, outcome{})
			return ticket{}, err
		}
		return t, nil
	case <-ctx.Done():
		l.mu.Lock()
		for i, x := range l.waiters {
			if x == w {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				l.pump(l.clock.Now()) // the one behind may fit where this one did not
				l.mu.Unlock()
				return ticket{}, ctx.Err()
			}
		}
		l.mu.Unlock()
		l.release(<-w.ch, outcome{}) // granted while giving up: hand the slot back
		return ticket{}, ctx.Err()
	}
}

// admits reports whether a send of tokens may start now.
func (l *limiter) admits(now time.Time, tokens int) bool {
	l.catchUp(now)
	return l.inflight < l.open && !now.Before(l.paused) &&
		l.rpm.admits(now, 1) && l.tpm.admits(now, tokens)
}

// gain is what a success adds to the limit in slow start.
func (l *limiter) gain() int {
	if l.limit < slowStartFast {
		return slowStartGain
	}
	return 1
}

// catchUp opens the slots pacing lets open by now: one per floor/(gain·limit), so that the
// growth of a round is spread over the round. Before any latency is known, nothing is paced.
func (l *limiter) catchUp(now time.Time) {
	if l.open >= l.limit || l.floor <= 0 {
		l.open, l.paceAt = l.limit, time.Time{}
		return
	}
	every := max(l.floor/time.Duration(l.gain()*l.limit), paceMin)
	if l.paceAt.IsZero() {
		l.paceAt = now
	}
	if now.Before(l.paceAt) {
		return
	}
	n := 1 + int(now.Sub(l.paceAt)/every)
	l.open = min(l.limit, l.open+n)
	if l.open >= l.limit {
		l.paceAt = time.Time{}
	} else {
		l.paceAt = l.paceAt.Add(time.Duration(n) * every)
	}
}

func (l *limiter) grant(now time.Time, tokens int) ticket {
	l.inflight++
	l.rpm.spend(now, 1)
	return ticket{epoch: l.epoch, level: l.inflight, limit: l.limit, sent: now, tokens: l.tpm.spend(now, tokens)}
}

// release gives a ticket back with how its send went.
func (l *limiter) release(t ticket, o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.inflight--
	if o.tokens > 0 {
		l.tpm.correct(t.tokens, o.tokens) // the estimate corrected: what the provider counted
	}
	switch {
	case o.limited:
		l.congested(now, t, o.retryAfter)
	case o.ok:
		l.succeeded(now, t)
	}
	l.pump(now)
}

func (l *limiter) congested(now time.Time, t ticket, retryAfter time.Duration) {
	l.rateLimited++
	l.streak = 0
	if retryAfter > 0 && now.Add(retryAfter).After(l.paused) {
		l.paused = now.Add(retryAfter)
	}
	// The capacity found: what is still in flight as the refusal comes back. At the first refusal
	// of an event that counts the sends that went out while it was on its way back (refused too);
	// as their refusals come back it shrinks to what the provider admitted, so the event keeps the
	// smallest. (The requests in flight beside the refused send when it was granted are no
	// measure: on a loaded machine a send can reach the server tens of milliseconds after sends
	// granted later, and answers are read late.)
	found := max(1, l.inflight)
	// Only a refusal of a send made while the limit was in use (as for growth, in succeeded) says
	// the limit is above the capacity; one at low use (a request rate budget, say) only halves it.
	inUse := 2*max(t.level, l.inflight+1) >= t.limit
	if t.epoch != l.epoch {
		// The same congestion event: the limit was decreased already.
		if found < l.capacity {
			l.capacity = found
			l.ssthresh = max(belowCapacity(found), l.limit)
			if inUse {
				l.limit = min(l.limit, belowCapacity(found))
				l.ssthresh, l.open = belowCapacity(found), min(l.open, l.limit)
			}
		}
		return
	}
	l.epoch++
	if l.capacity > 0 && found <= l.capacity+l.capacity/10 {
		l.hold = min(2*l.hold, probeHoldMax) // no more capacity than last time: probe less often
	} else {
		l.hold = probeHold
	}
	switch {
	case !inUse:
		l.limit /= 2
	case l.capacity > 0 && found >= l.capacity:
		// A probe above a known capacity failed: the capacity stands, so back to it rather than
		// to half of it (every congestion event costs a Retry-After pause already).
		l.limit = min(l.limit-1, belowCapacity(found))
	default:
		l.limit = min(l.limit/2, belowCapacity(found)) // never above the capacity just found
	}
	l.limit = max(1, l.limit)
	l.capacity = found
	l.open = min(l.open, l.limit)
	l.ssthresh = max(belowCapacity(found), l.limit)
	start := now
	if l.paused.After(start) {
		start = l.paused
	}
	l.holdUntil = start.Add(l.hold)
}

// belowCapacity is where slow start stops after a congestion event that revealed capacity c:
// (c-1)/32 below it, a thirty-second of all but the first request. c may count answers the provider
// had sent that the client had not read yet, and every overshoot costs a Retry-After pause for
// every caller; congestion avoidance finds the rest after the hold. Up to 32 the margin is none:
// one request would be more than a thirty-second. A sixteenth (measured: BENCHMARKS.md, issue 13)
// left a capacity of 256 held at 241, under 90% of it once the rounds' edges are counted.
func belowCapacity(c int) int { return max(1, c-(c-1)/32) }

func (l *limiter) succeeded(now time.Time, t ticket) {
	lat := now.Sub(t.sent)
	if l.samples == 0 || lat < l.floor {
		l.floor = lat
	}
	if l.samples == 0 {
		l.smoothed = lat
	} else {
		l.smoothed += (lat - l.smoothed) / 8
	}
	l.samples++
	if t.epoch != l.epoch {
		return // sent before the last decrease
	}
	if len(l.waiters) == 0 && 2*max(t.level, l.inflight+1) < t.limit {
		return // less than half the limit in use: it is not what holds sends back
	}
	if l.limit < l.ssthresh {
		if l.samples >= latencySamples && l.smoothed > slowStartExit*max(l.floor, time.Millisecond) {
			l.ssthresh = l.limit // queueing: slow start is over, the limit is kept
			return
		}
		l.limit = min(l.limit+l.gain(), l.ssthresh, l.max)
		return
	}
	if now.Before(l.holdUntil) {
		return
	}
	if l.streak++; l.streak >= l.limit && l.limit < l.max {
		l.limit++
		l.streak = 0
	}
}

// pump grants waiters from the front while they fit, and arms the wake when the one in front waits
// for time only (a pause, a budget window).
func (l *limiter) pump(now time.Time) {
	for len(l.waiters) > 0 {
		w := l.waiters[0]
		if !l.admits(now, w.tokens) {
			break
		}
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		w.ch <- l.grant(now, w.tokens)
	}
	if len(l.waiters) == 0 || l.inflight >= l.limit {
		return // nothing waits, or a release will pump
	}
	at := l.paused
	if l.inflight >= l.open && l.paceAt.After(at) {
		at = l.paceAt
	}
	if t := l.rpm.free(now, 1); t.After(at) {
		at = t
	}
	if t := l.tpm.free(now, l.waiters[0].tokens); t.After(at) {
		at = t
	}
	if !at.After(now) || (l.wake != nil && l.wakeAt.Equal(at)) {
		return
	}
	if l.wake != nil {
		l.wake()
	}
	l.wakeAt = at
	l.wake = l.clock.AfterFunc(at.Sub(now), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.wake = nil
		l.pump(l.clock.Now())
	})
}

func (l *limiter) stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Limit: l.limit, InFlight: l.inflight, Waiting: len(l.waiters), RateLimited: l.rateLimited}
}

// budget is a per-minute budget (RPM, TPM) over a sliding window: the sends of the last minute,
// oldest first, and their sum. A nil budget admits everything.
type budget struct {
	size   int
	window []*spent
	sum    int
}

// spent is one send's share of a budget; n is corrected once the provider reports usage.
type spent struct {
	at  time.Time
	n   int
	out bool // expired: no longer in the window
}

func (b *budget) expire(now time.Time) {
	i := 0
	for i < len(b.window) && !b.window[i].at.Add(budgetWindow).After(now) {
		b.sum -= b.window[i].n
		b.window[i].out = true
		i++
	}
	if i > 0 {
		b.window = append(b.window[:0], b.window[i:]...)
	}
}

// admits reports whether n more fits in the window now; n larger than the whole budget fits an
// empty window.
func (b *budget) admits(now time.Time, n int) bool {
	if b == nil {
		return true
	}
	b.expire(now)
	return b.sum == 0 || b.sum+n <= b.size
}

func (b *budget) spend(now time.Time, n int) *spent {
	if b == nil {
		return nil
	}
	s := &spent{at: now, n: n}
	b.window = append(b.window, s)
	b.sum += n
	return s
}

// correct sets a send's share to n, if it is still in the window.
func (b *budget) correct(s *spent, n int) {
	if b == nil || s == nil || s.out {
		return
	}
	b.sum += n - s.n
	s.n = n
}

// free is when n more will fit: now, or when enough of the window has expired.
func (b *budget) free(now time.Time, n int) time.Time {
	if b == nil || b.admits(now, n) {
		return now
	}
	u := b.sum
	for _, s := range b.window {
		u -= s.n
		if u == 0 || u+n <= b.size {
			return s.at.Add(budgetWindow)
		}
	}
	return now
}
