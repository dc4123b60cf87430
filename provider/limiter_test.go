package provider

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// lim is a limiter on a fake clock with helpers that keep the tests short.
type lim struct {
	*limiter
	t       *testing.T
	clock   *fakeClock
	queuedc chan struct{} // a value each time a waiter joins the queue
}

func newLim(t *testing.T, initial, maximum, rpm, tpm int) *lim {
	c := newFakeClock()
	l := &lim{limiter: newLimiter(c, initial, maximum, rpm, tpm), t: t, clock: c, queuedc: make(chan struct{}, 8)}
	l.queued = func() { l.queuedc <- struct{}{} }
	return l
}

// take acquires n tickets that must be granted at once.
func (l *lim) take(n int) []ticket {
	l.t.Helper()
	var ts []ticket
	for range n {
		for i := 0; !l.free() && l.pacing() && i < 1e6; i++ {
			l.clock.Advance(paceMin) // pacing opens the slot a little later
		}
		if !l.free() {
			l.t.Fatalf("ticket %d of %d not free: %+v", len(ts)+1, n, l.stats())
		}
		tk, err := l.acquire(context.Background(), 1)
		if err != nil {
			l.t.Fatal(err)
		}
		ts = append(ts, tk)
	}
	return ts
}

// queue starts an acquire that must wait (the limiter's queued hook, set by newLim, says when it is
// in the queue with its wake armed) and returns where its ticket will arrive.
func (l *lim) queue() <-chan ticket {
	l.t.Helper()
	got := make(chan ticket, 1)
	go func() {
		tk, err := l.acquire(context.Background(), 1)
		if err != nil {
			l.t.Error(err)
		}
		got <- tk
	}()
	<-l.queuedc
	return got
}

// pacing reports whether slots of the limit are still to be opened by pacing.
func (l *lim) pacing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.catchUp(l.clock.Now())
	return l.open < l.limit
}

// free reports whether a ticket would be granted now.
func (l *lim) free() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters) == 0 && l.admits(l.clock.Now(), 1)
}

// round is one full round of slow start: fill the limit, let a round trip pass, answer all.
func (l *lim) round(rtt time.Duration) {
	ts := l.take(l.stats().Limit - l.stats().InFlight)
	l.clock.Advance(rtt)
	for _, t := range ts {
		l.release(t, outcome{ok: true})
	}
}

// Slow start: the limit quadruples per round below slowStartFast, then doubles, up to the maximum.
// From the default start, a thousand in flight are four rounds away.
func TestLimiterSlowStartGrowsPerRound(t *testing.T) {
	l := newLim(t, DefaultInitialLimit, 1024, 0, 0)
	for _, want := range []int{64, 256, 512, 1024, 1024} {
		l.round(200 * time.Millisecond)
		if got := l.stats().Limit; got != want {
			t.Fatalf("limit after a round = %d, want %d", got, want)
		}
	}
}

// A lone caller (one request at a time) never raises the limit: it is not what holds it back.
func TestLimiterDoesNotGrowWhenUnused(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 0)
	for range 100 {
		tk := l.take(1)
		l.clock.Advance(100 * time.Millisecond)
		l.release(tk[0], outcome{ok: true})
	}
	if got := l.stats().Limit; got != 8 {
		t.Errorf("limit = %d, want 8 (never in use)", got)
	}
}

// The first rate-limited answer halves the limit once for the whole congestion event, sets the
// capacity found (what was in flight beside the refused send) as the end of slow start, and a
// success of a send made before it does not grow the limit.
func TestLimiterCongestionHalvesOnceAndFindsCapacity(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 0)
	l.round(time.Millisecond) // 32
	ts := l.take(32)          // a server that admits 20: the 21st to the 32nd are refused
	for _, tk := range ts[20:] {
		l.release(tk, outcome{limited: true})
	}
	st := l.stats()
	if st.Limit != 16 || st.RateLimited != 12 {
		t.Fatalf("after 12 refusals: %+v, want limit 16 (halved once), 12 rate-limited", st)
	}
	if l.ssthresh != 20 || l.capacity != 20 {
		t.Errorf("ssthresh %d, capacity %d; want 20, 20 (the refused send of level 21 saw 20 beside it; slow start stops a thirty-second below, none up to 32)", l.ssthresh, l.capacity)
	}
	for _, tk := range ts[:20] { // answered, but sent before the decrease
		l.release(tk, outcome{ok: true})
	}
	if got := l.stats().Limit; got != 16 {
		t.Errorf("limit = %d after old successes, want 16", got)
	}
	l.round(time.Millisecond) // slow start again, up to the capacity found
	if got := l.stats().Limit; got != 20 {
		t.Errorf("limit = %d after a round, want 20 (slow start stops at ssthresh)", got)
	}
}

// Above ssthresh the limit grows by one per limit successes, and not during the hold after a
// congestion event; a congestion event that finds no more capacity doubles the hold.
func TestLimiterCongestionAvoidanceAndHold(t *testing.T) {
	l := newLim(t, 4, 1024, 0, 0)
	ts := l.take(4)
	l.release(ts[3], outcome{limited: true}) // capacity 3
	for _, tk := range ts[:3] {
		l.release(tk, outcome{ok: true})
	}
	if st := l.stats(); st.Limit != 2 || l.ssthresh != 3 || l.hold != probeHold {
		t.Fatalf("after the 429: limit %d ssthresh %d hold %s", st.Limit, l.ssthresh, l.hold)
	}
	l.round(time.Millisecond) // slow start to 3
	for range 20 {
		l.round(time.Millisecond) // held
	}
	if got := l.stats().Limit; got != 3 {
		t.Fatalf("limit = %d during the hold, want 3", got)
	}
	l.clock.Advance(probeHold)
	l.round(time.Millisecond) // 3 successes at limit 3: +1
	if got := l.stats().Limit; got != 4 {
		t.Fatalf("limit = %d after the hold and one round, want 4", got)
	}
	l.round(time.Millisecond) // 4 successes at limit 4: +1
	if got := l.stats().Limit; got != 5 {
		t.Fatalf("limit = %d, want 5", got)
	}
	// The probe fails where the last one did: the hold doubles.
	ts = l.take(5)
	l.release(ts[4], outcome{limited: true}) // level 5: capacity 4, not more than 3+10%… (3 → 4 is more)
	if l.hold != probeHold {
		t.Errorf("hold = %s after finding more capacity (4 > 3), want %s", l.hold, probeHold)
	}
	for _, tk := range ts[:4] {
		l.release(tk, outcome{ok: true})
	}
	ts = l.take(l.stats().Limit)
	l.release(ts[len(ts)-1], outcome{limited: true}) // no more capacity than 4
	if l.hold != 2*probeHold {
		t.Errorf("hold = %s after a probe that found no more capacity, want %s", l.hold, 2*probeHold)
	}
}

// Successes whose smoothed latency climbs past three times the floor end slow start (the provider
// queues): the limit is kept and grows additively from then on.
func TestLimiterLatencyEndsSlowStart(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 0)
	l.round(10 * time.Millisecond) // 32
	if got := l.stats().Limit; got != 32 {
		t.Fatalf("limit = %d", got)
	}
	for range 4 {
		l.round(100 * time.Millisecond) // queueing: ten times the floor
	}
	// Growing on, slow start would have passed 1,000; it ended at 35, early in the first slow round
	// (the eighth sample), and the three rounds after it add one each (congestion avoidance).
	if got := l.stats().Limit; got != 38 || l.ssthresh != 35 {
		t.Errorf("limit = %d, ssthresh %d; want 38 and 35: slow start ended, then +1 per round", got, l.ssthresh)
	}
}

// A Retry-After pauses every send until it passes; the queue is woken by the clock, in order.
func TestLimiterRetryAfterPausesEveryone(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLim(t, 8, 1024, 0, 0)
	ts := l.take(2)
	l.release(ts[0], outcome{limited: true, retryAfter: time.Second})
	if l.free() {
		t.Fatal("a send is free during the pause")
	}
	first, second := l.queue(), l.queue()
	if st := l.stats(); st.Waiting != 2 || l.clock.pending() != 1 {
		t.Fatalf("%+v, %d wake timers; want 2 waiting, 1 wake", st, l.clock.pending())
	}
	l.clock.Advance(999 * time.Millisecond)
	if st := l.stats(); st.Waiting != 2 {
		t.Fatalf("%+v before the pause ends", st)
	}
	l.clock.Advance(time.Millisecond)
	a, b := <-first, <-second
	if st := l.stats(); st.Waiting != 0 || st.InFlight != 3 || a.level+b.level != 2+3 {
		t.Errorf("after the pause: %+v, levels %d and %d", st, a.level, b.level)
	}
}

// RPM: no more sends than the budget in any minute; the queue waits for the oldest to expire.
func TestLimiterRPMBudget(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLim(t, 8, 1024, 3, 0)
	ts := l.take(3)
	for _, tk := range ts {
		l.clock.Advance(10 * time.Second)
		l.release(tk, outcome{ok: true})
	}
	if l.free() {
		t.Fatal("a fourth send within the minute is free")
	}
	got := l.queue()
	l.clock.Advance(29 * time.Second) // 59 s after the first send
	select {
	case <-got:
		t.Fatal("granted before the first send left the window")
	default:
	}
	l.clock.Advance(time.Second)
	<-got
}

// TPM: the estimate counts before the send, the reported usage replaces it; a request larger than
// the whole budget goes alone.
func TestLimiterTPMBudget(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 1000)
	l.mu.Lock()
	a := l.grant(l.clock.Now(), 600)
	fits := l.admits(l.clock.Now(), 500)
	l.mu.Unlock()
	if fits {
		t.Fatal("600 + 500 tokens fit a budget of 1000")
	}
	l.release(a, outcome{ok: true, tokens: 300}) // it used 300 of the 600 estimated
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.admits(l.clock.Now(), 500) {
		t.Error("300 reported + 500 do not fit 1000")
	}
	l.clock.Advance(time.Minute)
	if !l.admits(l.clock.Now(), 5000) {
		t.Error("an empty window refuses one request larger than the budget")
	}
}

// A waiter whose context ends leaves the queue at once, and the one behind it moves up.
func TestLimiterCancelledWaiterLeaves(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLim(t, 1, 1024, 0, 0)
	first := l.take(1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := l.acquire(ctx, 1); errc <- err }()
	<-l.queuedc
	next := l.queue()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if st := l.stats(); st.Waiting != 1 {
		t.Fatalf("%+v, want 1 waiting", st)
	}
	l.release(first[0], outcome{ok: true})
	tk := <-next
	l.release(tk, outcome{ok: true})
	if st := l.stats(); st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("%+v, want empty", st)
	}
}

// Slow start's new slots open one at a time, spread over a round at the floor latency, so that a
// step of the limit never goes out as one burst.
func TestLimiterPacesSlowStart(t *testing.T) {
	l := newLim(t, slowStartFast, 1024, 0, 0)
	l.round(80 * time.Millisecond) // limit 512 (doubling above slowStartFast), floor 80 ms
	if got := l.stats().Limit; got != 2*slowStartFast {
		t.Fatalf("limit = %d, want %d", got, 2*slowStartFast)
	}
	count := func() int {
		n := 0
		for l.free() {
			l.take(1)
			n++
		}
		return n
	}
	if n := count(); n != slowStartFast+1 {
		t.Fatalf("%d slots open at once after the round, want %d (those released and one new)", n, slowStartFast+1)
	}
	// One slot every 80 ms / 512 = 156 µs (the first after 80 ms / 257, the limit then).
	l.clock.Advance(time.Millisecond)
	if n := count(); n < 4 || n > 7 {
		t.Fatalf("%d slots opened in the next millisecond, want 4 to 7", n)
	}
	l.clock.Advance(80 * time.Millisecond)
	if st := l.stats(); count() == 0 || l.pacing() || st.Limit != 2*slowStartFast {
		t.Errorf("a round later not every slot is open: %+v", l.stats())
	}
}

// A request waiting only for pacing is granted by the clock when its slot opens.
func TestLimiterPacingWakesWaiters(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLim(t, 8, 1024, 0, 0)
	l.round(80 * time.Millisecond)
	l.take(9)
	got := l.queue()
	if l.clock.pending() != 1 {
		t.Fatalf("%d wake timers, want 1", l.clock.pending())
	}
	l.clock.Advance(5 * time.Millisecond)
	if tk := <-got; tk.level != 10 {
		t.Errorf("granted at level %d, want 10", tk.level)
	}
}

// The capacity a congestion event finds is what is still in flight as its refusals come back, the
// smallest over the event: a refused send that reached the server late (granted while few were
// in flight) does not make it look small, and the sends that went out while the first refusal
// was on its way back do not make it look large once their own refusals are in.
func TestLimiterCapacityIsWhatStaysInFlight(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 0)
	l.round(time.Millisecond) // 32
	l.round(time.Millisecond) // 128
	ts := l.take(100)         // a server that admits 80; the refused include the 3rd send (it arrived late)
	refused := append([]ticket{ts[2]}, ts[81:]...)
	l.release(refused[0], outcome{limited: true})
	if l.capacity != 99 {
		t.Fatalf("capacity %d after the first refusal, want 99 (in flight as it came back)", l.capacity)
	}
	for _, tk := range refused[1:] {
		l.release(tk, outcome{limited: true})
	}
	if st := l.stats(); l.capacity != 80 || st.Limit != 64 || l.ssthresh != belowCapacity(80) {
		t.Errorf("capacity %d, limit %d, ssthresh %d; want 80, 64 (halved once), %d", l.capacity, st.Limit, l.ssthresh, belowCapacity(80))
	}
}

// A limit that raced past twice the capacity before the first refusal came back is brought down
// to the capacity found, not only halved: halving would leave it above the capacity after the pause.
func TestLimiterDecreaseNeverAboveCapacityFound(t *testing.T) {
	l := newLim(t, 8, 1024, 0, 0)
	l.round(time.Millisecond) // 32
	l.round(time.Millisecond) // 128
	ts := l.take(128)
	l.release(ts[127], outcome{limited: true})
	for _, tk := range ts[40:127] { // the server admitted 40: the other refusals come back
		l.release(tk, outcome{limited: true})
	}
	if st := l.stats(); st.Limit != belowCapacity(40) || l.capacity != 40 {
		t.Errorf("limit %d, capacity %d; want %d and 40 (128/2 = 64 is above it)", st.Limit, l.capacity, belowCapacity(40))
	}
}

// A probe above a capacity already found that fails finds the same capacity: the limit goes back
// to it, not to half of it (the pause the refusal brings is the cost of the probe already).
func TestLimiterFailedProbeReturnsToCapacity(t *testing.T) {
	l := newLim(t, 32, 1024, 0, 0)
	ts := l.take(17)
	l.release(ts[16], outcome{limited: true}) // capacity 16
	for _, tk := range ts[:16] {
		l.release(tk, outcome{ok: true})
	}
	l.round(time.Millisecond) // slow start back to 16, where it holds
	if st := l.stats(); st.Limit != 16 || l.ssthresh != 16 {
		t.Fatalf("limit %d, ssthresh %d after the first event; want 16 and 16 (held at the capacity itself)", st.Limit, l.ssthresh)
	}
	l.clock.Advance(probeHold)
	l.round(time.Millisecond) // 16 successes at 16: 17
	if got := l.stats().Limit; got != 17 {
		t.Fatalf("limit %d after the hold, want 17 (probing)", got)
	}
	ts = l.take(17)
	l.release(ts[16], outcome{limited: true}) // the probe fails: still 16
	if st := l.stats(); st.Limit != 16 || l.capacity != 16 || l.hold != 2*probeHold {
		t.Errorf("limit %d, capacity %d, hold %s after a failed probe; want 16, 16, %s", st.Limit, l.capacity, l.hold, 2*probeHold)
	}
}

// The margin below a capacity found is a thirty-second of all but the first request: none up to
// 32, where one request would be more than a thirty-second.
func TestLimiterBelowCapacity(t *testing.T) {
	for c, want := range map[int]int{1: 1, 2: 2, 16: 16, 20: 20, 32: 32, 33: 32, 64: 63, 256: 249, 1024: 993} {
		if got := belowCapacity(c); got != want {
			t.Errorf("belowCapacity(%d) = %d, want %d", c, got, want)
		}
	}
}
