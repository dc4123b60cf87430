package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mkCalls(n int) []Call {
	cs := make([]Call, n)
	for i := range cs {
		cs[i] = Call{Index: i, ID: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("tool%d", i), Args: json.RawMessage(`{}`)}
	}
	return cs
}

// inflight tracks concurrent calls and their high-water mark.
type inflight struct{ cur, peak atomic.Int64 }

func (f *inflight) enter() int64 {
	c := f.cur.Add(1)
	for {
		p := f.peak.Load()
		if c <= p || f.peak.CompareAndSwap(p, c) {
			return c
		}
	}
}
func (f *inflight) leave() { f.cur.Add(-1) }

// recorder is a Progress that records real start/finish order.
type recorder struct {
	mu       sync.Mutex
	started  []string
	finished []string
	fin      chan string // optional, buffered
}

func (r *recorder) CallStarted(c Call) {
	r.mu.Lock()
	r.started = append(r.started, c.ID)
	r.mu.Unlock()
}
func (r *recorder) CallFinished(res Result) {
	r.mu.Lock()
	r.finished = append(r.finished, res.Call.ID)
	r.mu.Unlock()
	if r.fin != nil {
		r.fin <- res.Call.ID
	}
}

func resolveAsync(ctx context.Context, cfg Config, ex Executor, calls []Call, p Progress) <-chan []Result {
	out := make(chan []Result, 1)
	go func() { out <- Resolve(ctx, cfg, ex, calls, p) }()
	return out
}

func assertOrder(t *testing.T, calls []Call, res []Result) {
	t.Helper()
	if len(res) != len(calls) {
		t.Fatalf("got %d results for %d calls", len(res), len(calls))
	}
	for i := range calls {
		if res[i].Call.ID != calls[i].ID {
			t.Fatalf("slot %d holds %q, want %q", i, res[i].Call.ID, calls[i].ID)
		}
	}
}

func code(r Result) string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Code
}

// Rendezvous: every call blocks until 2 calls are in flight. Sequential
// dispatch cannot complete; a 5 s bound turns a hang into a failure.
func TestBatchedCallsRunConcurrentlyAndFoldInRequestOrder(t *testing.T) {
	rendezvous := func() (Executor, *atomic.Int64, chan struct{}) {
		var arrived atomic.Int64
		both := make(chan struct{})
		entered := make(chan struct{}, 2)
		ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
			entered <- struct{}{}
			if arrived.Add(1) == 2 {
				close(both)
			}
			select {
			case <-both:
				return "out:" + c.Name, nil, nil
			case <-ctx.Done():
				return "", nil, ctx.Err()
			}
		})
		return ex, &arrived, entered
	}
	calls := []Call{{Index: 0, ID: "a", Name: "nika:read"}, {Index: 1, ID: "b", Name: "nika:glob"}}

	for _, p := range []int{2, 8, 0} {
		t.Run(fmt.Sprintf("P=%d", p), func(t *testing.T) {
			ex, _, _ := rendezvous()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			select {
			case res := <-resolveAsync(ctx, Config{MaxParallel: p}, ex, calls, nil):
				assertOrder(t, calls, res)
				for i, want := range []string{"out:nika:read", "out:nika:glob"} {
					if res[i].Err != nil || res[i].Content != want {
						t.Fatalf("slot %d: %+v", i, res[i])
					}
				}
			case <-time.After(5 * time.Second):
				cancel()
				t.Fatal("rendezvous never met: calls did not run concurrently")
			}
		})
	}

	t.Run("P=1 deadlocks until cancelled", func(t *testing.T) {
		ex, arrived, entered := rendezvous()
		ctx, cancel := context.WithCancel(context.Background())
		out := resolveAsync(ctx, Config{MaxParallel: 1}, ex, calls, nil)
		<-entered // call a is in flight, blocked on the rendezvous
		select {
		case <-out:
			t.Fatal("sequential dispatch completed a rendezvous of 2")
		case <-time.After(50 * time.Millisecond): // bounded wait for a non-event
		}
		cancel()
		res := <-out
		if arrived.Load() != 1 {
			t.Fatalf("%d calls started under P=1, want 1", arrived.Load())
		}
		if code(res[0]) != CodeCancelled || code(res[1]) != CodeCancelled {
			t.Fatalf("want both cancelled, got %q %q", code(res[0]), code(res[1]))
		}
	})
}

// Reverse completion order, forced through channels: results stay in request order.
func TestResultsInRequestOrderWhateverCompletionOrder(t *testing.T) {
	const n = 8
	calls := mkCalls(n)
	gates := make([]chan struct{}, n)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	var started sync.WaitGroup
	started.Add(n)
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		started.Done()
		<-gates[c.Index]
		if c.Index%3 == 1 {
			return "", nil, errors.New("bad " + c.ID)
		}
		return "ok " + c.ID, json.RawMessage(`{"i":` + fmt.Sprint(c.Index) + `}`), nil
	})
	rec := &recorder{fin: make(chan string, n)}
	out := resolveAsync(context.Background(), Config{MaxParallel: n}, ex, calls, rec)
	started.Wait()
	for i := n - 1; i >= 0; i-- {
		close(gates[i])
		if got := <-rec.fin; got != calls[i].ID {
			t.Fatalf("completion %q, want %q", got, calls[i].ID)
		}
	}
	res := <-out
	assertOrder(t, calls, res)
	for i, r := range res {
		if i%3 == 1 {
			want := "NIKA-INVOKE-003 · tool" + fmt.Sprint(i) + " failed: bad c" + fmt.Sprint(i)
			if r.Content != want || code(r) != CodeInvokeFailed {
				t.Fatalf("slot %d: %q", i, r.Content)
			}
			continue
		}
		if r.Err != nil || r.Content != "ok "+calls[i].ID || string(r.Structured) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("slot %d: %+v", i, r)
		}
	}
	// the completion order really differed from request order (D32)
	if rec.finished[0] != calls[n-1].ID {
		t.Fatalf("completion order %v not reversed", rec.finished)
	}
}

func TestBoundedConcurrencyTenThousandCalls(t *testing.T) {
	const n, p = 10000, 8
	calls := mkCalls(n)
	var fl inflight
	var maxG atomic.Int64
	baseline := exactGoroutines()
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		fl.enter()
		defer fl.leave()
		if c.Index%25 != 0 {
			return c.ID, nil, nil
		}
		g := int64(exactGoroutines())
		for {
			m := maxG.Load()
			if g <= m || maxG.CompareAndSwap(m, g) {
				break
			}
		}
		return c.ID, nil, nil
	})
	res := Resolve(context.Background(), Config{MaxParallel: p}, ex, calls, nil)
	assertOrder(t, calls, res)
	for i, r := range res {
		if r.Err != nil || r.Content != calls[i].ID {
			t.Fatalf("slot %d: %+v", i, r)
		}
	}
	if fl.peak.Load() > p {
		t.Fatalf("high-water %d > %d", fl.peak.Load(), p)
	}
	if lim := int64(baseline + p + 4); maxG.Load() > lim {
		t.Fatalf("goroutines peaked at %d > baseline %d + %d + 4", maxG.Load(), baseline, p)
	}
}

// exactGoroutines counts live goroutines in a stop-the-world snapshot.
// runtime.NumGoroutine is not used: it reads the free-goroutine counters
// without a lock and can overcount by up to 32 while the runtime moves dead
// goroutines between per-P and global free lists (observed: 40+ at P = 8).
func exactGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return 1 + strings.Count(string(buf[:n]), "\n\ngoroutine ") // one record per goroutine
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestMaxParallelOneIsStrictlySequential(t *testing.T) {
	const n = 50
	calls := mkCalls(n)
	var fl inflight
	var mu sync.Mutex
	var log []string
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		fl.enter()
		mu.Lock()
		log = append(log, "start "+c.ID)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		log = append(log, "end "+c.ID)
		mu.Unlock()
		fl.leave()
		return "", nil, nil
	})
	res := Resolve(context.Background(), Config{MaxParallel: 1}, ex, calls, nil)
	assertOrder(t, calls, res)
	if fl.peak.Load() != 1 {
		t.Fatalf("peak in flight %d, want 1", fl.peak.Load())
	}
	for i := 0; i < n; i++ {
		if log[2*i] != "start "+calls[i].ID || log[2*i+1] != "end "+calls[i].ID {
			t.Fatalf("log not strictly sequential at %d: %v", i, log[2*i:2*i+2])
		}
	}
}

func TestFailureIsolationKeepsEveryResultInOrder(t *testing.T) {
	coded := spec.NewError("NIKA-MCP-002", "server said no", nil)
	for _, where := range []string{"head", "middle", "tail"} {
		t.Run(where, func(t *testing.T) {
			const n = 9
			bad := map[string][]int{"head": {0, 1, 2}, "middle": {3, 4, 5}, "tail": {6, 7, 8}}[where]
			kind := map[int]string{bad[0]: "error", bad[1]: "panic", bad[2]: "coded"}
			calls := mkCalls(n)
			ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
				switch kind[c.Index] {
				case "error":
					return "", nil, errors.New("disk on fire")
				case "panic":
					panic("boom")
				case "coded":
					return "", nil, fmt.Errorf("wrapped: %w", coded)
				}
				return "ok", nil, nil
			})
			res := Resolve(context.Background(), Config{MaxParallel: 4}, ex, calls, nil)
			assertOrder(t, calls, res)
			for i, r := range res {
				var want string
				switch kind[i] {
				case "error":
					want = fmt.Sprintf("NIKA-INVOKE-003 · tool%d failed: disk on fire", i)
				case "panic":
					want = fmt.Sprintf("NIKA-INVOKE-003 · tool%d panicked: boom", i)
					if !r.Panicked {
						t.Fatalf("slot %d: Panicked not set", i)
					}
				case "coded":
					want = "NIKA-MCP-002 · server said no"
				default:
					want = "ok"
				}
				if r.Content != want || r.IsError() != (kind[i] != "") {
					t.Fatalf("slot %d: %q (err %v), want %q", i, r.Content, r.Err, want)
				}
			}
			if Stopped(res) != -1 {
				t.Fatal("a non-boundary error stopped the batch")
			}
		})
	}
}

func TestPerCallTimeoutBecomesResult(t *testing.T) {
	release := make(chan struct{})
	var ignoringReturned atomic.Bool
	calls := []Call{{Index: 0, ID: "a", Name: "stubborn"}, {Index: 1, ID: "b", Name: "polite"}, {Index: 2, ID: "c", Name: "fast"}}
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		switch c.Name {
		case "stubborn": // ignores its context
			<-release
			ignoringReturned.Store(true)
			return "late", nil, nil
		case "polite":
			<-ctx.Done()
			return "", nil, ctx.Err()
		}
		return "quick", nil, nil
	})
	res := Resolve(context.Background(), Config{MaxParallel: 3, CallTimeout: 10 * time.Millisecond}, ex, calls, nil)
	if ignoringReturned.Load() {
		t.Fatal("Resolve waited for a tool that ignores its context")
	}
	assertOrder(t, calls, res)
	for i, name := range []string{"stubborn", "polite"} {
		want := "NIKA-TIMEOUT-001 · " + name + " exceeded its 10ms call timeout"
		if res[i].Content != want || code(res[i]) != CodeTimeout {
			t.Fatalf("slot %d: %q", i, res[i].Content)
		}
	}
	if res[2].Content != "quick" || res[2].Err != nil {
		t.Fatalf("sibling altered: %+v", res[2])
	}
	close(release)
	goleak.VerifyNone(t)
}

func TestTimedOutCallFreesItsSlot(t *testing.T) {
	// P = 1: the first call ignores its context; the second must still run.
	release := make(chan struct{})
	defer close(release)
	calls := mkCalls(2)
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		if c.Index == 0 {
			<-release
		}
		return "ran", nil, nil
	})
	res := Resolve(context.Background(), Config{MaxParallel: 1, CallTimeout: 5 * time.Millisecond}, ex, calls, nil)
	if code(res[0]) != CodeTimeout || res[1].Content != "ran" {
		t.Fatalf("got %+v", res)
	}
}

func TestBoundaryRefusalCancelsSiblingsAndIsNotFedBack(t *testing.T) {
	for _, sec := range []string{CodeSecPermits, CodeSecSSRF} {
		t.Run(sec, func(t *testing.T) {
			const n = 10
			calls := mkCalls(n)
			var starts atomic.Int64
			siblingIn := make(chan struct{})
			siblingSaw := make(chan error, 1)
			ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
				starts.Add(1)
				switch c.Index {
				case 0: // in flight, blocks on ctx
					close(siblingIn)
					<-ctx.Done()
					siblingSaw <- ctx.Err()
					return "", nil, ctx.Err()
				case 1:
					<-siblingIn
					return "", nil, spec.NewError(sec, "refused", map[string]any{"tool": c.Name})
				}
				return "must not run", nil, nil
			})
			res := Resolve(context.Background(), Config{MaxParallel: 2}, ex, calls, nil)
			if err := <-siblingSaw; !errors.Is(err, context.Canceled) {
				t.Fatalf("sibling saw %v", err)
			}
			if starts.Load() != 2 {
				t.Fatalf("%d calls started, want 2 (queued calls must not start)", starts.Load())
			}
			if i := Stopped(res); i != 1 || code(res[1]) != sec {
				t.Fatalf("Stopped = %d, code %q", i, code(res[1]))
			}
			assertOrder(t, calls, res)
			for i, r := range res {
				if i != 1 && code(r) != CodeCancelled {
					t.Fatalf("slot %d: %q", i, r.Content)
				}
			}
			goleak.VerifyNone(t)
		})
	}
}

func TestBoundaryRefusalWithPOneIsDeterministic(t *testing.T) {
	calls := mkCalls(5)
	var starts atomic.Int64
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		starts.Add(1)
		if c.Index >= 2 {
			return "", nil, spec.NewError(CodeSecSSRF, "loopback", nil)
		}
		return "ok", nil, nil
	})
	for round := 0; round < 20; round++ {
		starts.Store(0)
		res := Resolve(context.Background(), Config{MaxParallel: 1}, ex, calls, nil)
		if Stopped(res) != 2 || starts.Load() != 3 || res[0].Content != "ok" || code(res[3]) != CodeCancelled {
			t.Fatalf("round %d: stopped %d, starts %d", round, Stopped(res), starts.Load())
		}
	}
}

// lagCtx holds Resolve's coordinator where a preemption could: its Done is
// evaluated by the coordinator at the top of every select (and only there:
// it delegates Value, so context.WithCancel recognises the inner cancelCtx
// and starts no watcher goroutine that would call Done too).
type lagCtx struct {
	context.Context
	lag func()
}

func (c lagCtx) Done() <-chan struct{} {
	c.lag()
	return c.Context.Done()
}

// armOnStart is a Progress that records the calls started and arms a lag
// when the first one starts. Resolve calls it on the coordinator goroutine,
// like lagCtx.Done.
type armOnStart struct {
	armed   bool
	started []string
}

func (a *armOnStart) CallStarted(c Call) {
	a.started = append(a.started, c.ID)
	a.armed = a.armed || c.Index == 0
}
func (*armOnStart) CallFinished(Result) {}

// workerCreated ends the "created by" line of a worker's stack: Resolve
// starts each worker from (*batch).start. TestWorkersAliveSeesAWorker fails
// if that changes, so that the helpers below cannot silently stop waiting.
const workerCreated = "verbs/agent/dispatch.(*batch).start in goroutine"

// workersAlive counts the goroutines started by Resolve that are alive, in
// a stop-the-world snapshot.
func workersAlive() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), workerCreated)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitWorkersExited returns once no goroutine started by Resolve is alive.
// A worker whose Execute returned has only non-blocking steps left (send its
// result on a channel with room for it), so this always ends; it polls the
// goroutine list, it never sleeps.
func waitWorkersExited() {
	for workersAlive() > 0 {
		runtime.Gosched()
	}
}

func TestWorkersAliveSeesAWorker(t *testing.T) {
	// An earlier test's worker may still be on its way out (its result sent, Resolve returned):
	// it would be counted beside this call's own.
	waitWorkersExited()
	var alive int
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		alive = workersAlive() // this call's own worker, at least
		return "", nil, nil
	})
	Resolve(context.Background(), Config{}, ex, mkCalls(1), nil)
	if alive != 1 {
		t.Fatalf("workersAlive saw %d workers from inside a call, want 1: is %q still the worker's creator?", alive, workerCreated)
	}
}

// P = 1, call 0 refuses (NIKA-SEC-005): call 1 must never start (§6.1, §6.5),
// also when the refusal is already queued and its slot free by the time the
// coordinator reaches its next select (it was descheduled right after
// starting call 0). Both "a slot is free" and "a completion is queued" are
// then ready at once, and select picks either at random; taking the slot
// without first taking the queued completion starts call 1. Each round forces
// that state, so a coordinator that can start a call past a queued refusal
// fails with probability 1 - 2^-64.
func TestBoundaryRefusalWithPOneStopsBeforeNextStartWhenCoordinatorLags(t *testing.T) {
	for round := 0; round < 64; round++ {
		var starts atomic.Int64
		returned := make(chan struct{})
		ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
			starts.Add(1)
			if c.Index == 0 {
				defer close(returned)
				return "", nil, spec.NewError(CodeSecSSRF, "loopback", nil)
			}
			return "must not run", nil, nil
		})
		inner, cancel := context.WithCancel(context.Background())
		rec := &armOnStart{}
		ctx := lagCtx{Context: inner, lag: func() {
			if rec.armed {
				rec.armed = false
				<-returned          // call 0's Execute returned
				waitWorkersExited() // its completion is queued and its slot free
			}
		}}
		res := Resolve(ctx, Config{MaxParallel: 1}, ex, mkCalls(3), rec)
		cancel()
		// A call started past the refusal shows in the live view; whether it
		// also reaches its tool depends on whether its worker checks the
		// batch context before the coordinator cancels it: check both.
		if len(rec.started) != 1 || starts.Load() != 1 {
			t.Fatalf("round %d: calls started %v (%d reached the tool), want only c0", round, rec.started, starts.Load())
		}
		if Stopped(res) != 0 || code(res[1]) != CodeCancelled || code(res[2]) != CodeCancelled {
			t.Fatalf("round %d: stopped %d, %q %q", round, Stopped(res), res[1].Content, res[2].Content)
		}
	}
	goleak.VerifyNone(t)
}

// holdOnRefusal is a Progress that records what is reported finished and,
// when the refusal is, holds the coordinator (Resolve calls it there) until
// call 0 has returned and its worker exited.
type holdOnRefusal struct {
	returned <-chan struct{}
	started  []string
	finished map[string]string // call ID → content reported
}

func (h *holdOnRefusal) CallStarted(c Call) { h.started = append(h.started, c.ID) }
func (h *holdOnRefusal) CallFinished(r Result) {
	h.finished[r.Call.ID] = r.Content
	if r.Boundary() {
		<-h.returned
		waitWorkersExited()
	}
}

// A call that finished before the batch stopped keeps its own result, also
// when that result is still unread when the stop is seen: Resolve takes the
// results already queued before it gives the other calls NIKA-CANCEL-001.
// P = 2: call 1 refuses at once; call 0 returns "ok" only after call 1's
// worker has sent the refusal and exited, so call 0's result is queued
// behind it, and the progress hook holds the coordinator, which is reporting
// the refusal, until it is. No sleeps: the order is forced every run.
func TestStopKeepsResultsAlreadyQueued(t *testing.T) {
	refused, returned := make(chan struct{}), make(chan struct{})
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		switch c.Index {
		case 0:
			defer close(returned)
			<-refused
			for workersAlive() > 1 { // call 1's worker is gone: the refusal is queued
				runtime.Gosched()
			}
			return "ok", nil, nil
		case 1:
			defer close(refused)
			return "", nil, spec.NewError(CodeSecPermits, "outside permits", nil)
		}
		return "must not run", nil, nil
	})
	rec := &holdOnRefusal{returned: returned, finished: map[string]string{}}
	res := Resolve(context.Background(), Config{MaxParallel: 2}, ex, mkCalls(3), rec)
	assertOrder(t, mkCalls(3), res)
	if Stopped(res) != 1 || res[0].Content != "ok" || res[0].Err != nil || code(res[2]) != CodeCancelled {
		t.Fatalf("stopped %d; results %q, %q, %q", Stopped(res), res[0].Content, res[1].Content, res[2].Content)
	}
	if rec.finished["c0"] != "ok" || len(rec.started) != 2 {
		t.Fatalf("progress: started %v, finished %v", rec.started, rec.finished)
	}
	goleak.VerifyNone(t)
}

func TestCancelStartsNoQueuedCall(t *testing.T) {
	const n = 10
	calls := mkCalls(n)
	var starts atomic.Int64
	entered := make(chan struct{}, n)
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		starts.Add(1)
		entered <- struct{}{}
		<-ctx.Done()
		return "", nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	out := resolveAsync(ctx, Config{MaxParallel: 2}, ex, calls, rec)
	<-entered
	<-entered
	cancel()
	res := <-out
	if starts.Load() != 2 {
		t.Fatalf("%d calls started after cancel, want 2", starts.Load())
	}
	assertOrder(t, calls, res)
	for i, r := range res {
		if code(r) != CodeCancelled {
			t.Fatalf("slot %d: %q", i, r.Content)
		}
	}
	if len(rec.started) != 2 || len(rec.finished) != 2 {
		t.Fatalf("progress started %v finished %v", rec.started, rec.finished)
	}
	goleak.VerifyNone(t)
}

// AGENT.md §13.1 (D32: order, not milliseconds): cooperative and
// ctx-ignoring tools; Resolve returns on cancel, and once the ignoring tools
// are released no goroutine is left behind.
func TestCancelLeaksNoGoroutines(t *testing.T) {
	release := make(chan struct{})
	var returned, ignoringReturned atomic.Int64
	entered := make(chan struct{}, 4)
	calls := mkCalls(6)
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		entered <- struct{}{}
		defer returned.Add(1)
		if c.Index%2 == 0 {
			<-release // ignores ctx
			ignoringReturned.Add(1)
			return "late", nil, nil
		}
		<-ctx.Done()
		return "", nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	out := resolveAsync(ctx, Config{MaxParallel: 4}, ex, calls, nil)
	for i := 0; i < 4; i++ {
		<-entered
	}
	cancel()
	res := <-out
	// order, not milliseconds (D32): Resolve returned while tools were held
	if ignoringReturned.Load() != 0 {
		t.Fatal("Resolve waited for tools that ignore their context")
	}
	for i, r := range res {
		if code(r) != CodeCancelled {
			t.Fatalf("slot %d: %q (late results must be discarded)", i, r.Content)
		}
	}
	close(release)
	goleak.VerifyNone(t)
	if returned.Load() != 4 {
		t.Fatalf("%d tools returned, want 4", returned.Load())
	}
}

func TestAlreadyCancelledContextStartsNothing(t *testing.T) {
	var starts atomic.Int64
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) {
		starts.Add(1)
		return "", nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for round := 0; round < 100; round++ {
		res := Resolve(ctx, Config{MaxParallel: 3}, ex, mkCalls(5), nil)
		for i, r := range res {
			if code(r) != CodeCancelled {
				t.Fatalf("slot %d: %q", i, r.Content)
			}
		}
	}
	if starts.Load() != 0 {
		t.Fatalf("%d calls started on a cancelled context", starts.Load())
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	if r := Resolve(dctx, Config{}, ex, mkCalls(1), nil); code(r[0]) != CodeTimeout {
		t.Fatalf("deadline: %q", r[0].Content)
	}
}

type panickyProgress struct{}

func (panickyProgress) CallStarted(Call)    { panic("ui") }
func (panickyProgress) CallFinished(Result) { panic("ui") }

func TestProgressPanicIsIgnored(t *testing.T) {
	ex := ExecutorFunc(func(ctx context.Context, c Call) (string, json.RawMessage, error) { return "ok", nil, nil })
	res := Resolve(context.Background(), Config{}, ex, mkCalls(3), panickyProgress{})
	for _, r := range res {
		if r.Content != "ok" {
			t.Fatalf("%+v", r)
		}
	}
}

func TestConfig(t *testing.T) {
	cases := []struct{ p, n, want int }{{0, 100, 8}, {0, 3, 3}, {1, 100, 1}, {64, 10, 10}, {5000, 5000, 1024}, {-3, 100, 8}, {4, 0, 1}}
	for _, c := range cases {
		if got := (Config{MaxParallel: c.p}).Effective(c.n); got != c.want {
			t.Errorf("Effective(P=%d, n=%d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
	for _, p := range []int{0, 1, 1024} {
		if err := (Config{MaxParallel: p}).Validate(); err != nil {
			t.Errorf("P=%d: %v", p, err)
		}
	}
	for _, c := range []Config{{MaxParallel: -1}, {MaxParallel: 1025}, {CallTimeout: -1}} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "dispatch") {
			t.Errorf("%+v accepted", c)
		}
	}
	if res := Resolve(context.Background(), Config{}, nil, nil, nil); len(res) != 0 {
		t.Fatal("empty batch")
	}
	// a nil executor is a panic recovered into a result, not a crash
	if res := Resolve(context.Background(), Config{}, nil, mkCalls(1), nil); !res[0].Panicked {
		t.Fatalf("%+v", res[0])
	}
}
