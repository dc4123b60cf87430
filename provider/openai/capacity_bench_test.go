package openai_test

// BenchmarkCapacity measures how much of a provider's capacity the provider front end (its limiter
// and retries) turns into answers, in process: a fake OpenAI-compatible server with a fixed
// capacity, and the client nika builds for an openai/… model (cmd/nika/providers.go).
//
// The simulated provider admits C requests at once; each admitted request is answered after L
// (the handler waits L: this is the provider's latency, not synchronization of the benchmark).
// A request arriving while C are being served is answered at once with 429 and Retry-After: 1.
// "unlimited" never answers 429.
//
// The workload: 1,000 concurrent jobs, each making 2 requests one after the other through
// front.Complete (2,000 requests), against C ∈ {16, 64, 256, unlimited} and L = 200 ms.
//
// Run it:  go test ./provider/openai/ -run '^$' -bench Capacity -benchtime 1x
//
// Metrics (each the mean over the b.N runs of the workload):
//
//   - wall-s: from the first job's start to the last job's end.
//   - goodput-req/s: successful requests answered per second within the window [ws, we].
//     we is the moment fewer than C requests remain unanswered: with N = 2,000 requests and
//     the successful answers' times t_1 ≤ … ≤ t_N (measured at the client, from the start),
//     we = t_(N−C+1); the last C requests can no longer fill the provider, so the drain is left
//     out. ws = 2 s (the limiter's start-up is left out), unless we − 2 s < 1 s: then the run
//     is too short for that window and ws = we − 1 s, the last second before the drain (it
//     begins before 2 s, so it counts more of the start-up, never less; with ws = 0, as before,
//     a limiter fast enough to finish early was scored on its start-up alone).
//     goodput = #{i : ws < t_i ≤ we} / (we − ws).
//     window-start-s and window-end-s report the window used.
//     For "unlimited", C in these definitions is min(jobs, provider.DefaultMaxLimit): the most
//     requests the client may have in flight, i.e. the capacity the limiter allows itself.
//   - goodput-frac: goodput / (C / L), the fraction of the capacity turned into answers.
//   - 429s and 429-%: the requests the server answered 429, as a count and as a percentage of
//     every request the server received (each send of a retried request counts).
//   - failed: requests whose final outcome was a failure; any makes the benchmark fail.
//   - max-inflight: the most requests inside the server's handler at once (admitted or being
//     refused).
//   - ms-to-full ("unlimited" only): the time from the start until the server first had
//     min(jobs, provider.DefaultMaxLimit) requests in flight at once; -1 if it never did. It
//     happens when every job has a request out at once before the first jobs finish: the limiter
//     serves its waiters in arrival order, so a job's second request waits behind the first
//     requests still queued, and no job ends before the limit has let every job start.
//   - ms-to-unheld ("unlimited" only): the time until no request waits in the limiter any more
//     (sampled every 5 ms): the limiter has reached the demand, min(jobs left, maximum); the
//     latest over the runs.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/provider/providertest"
)

const (
	capJobs         = 1000
	capTurns        = 2
	capLatency      = 200 * time.Millisecond
	capWindowStart  = 2 * time.Second
	capMinWindowLen = time.Second
)

// capServer is the simulated provider: a providertest.Capacity of limit requests at once (0: no
// limit), each answered after latency, others answered 429 with Retry-After: 1; it times the first
// moment target requests were inside (ms-to-full).
type capServer struct {
	*providertest.Capacity
	target int

	mu     sync.Mutex
	start  time.Time     // set before the workload starts
	fullAt time.Duration // -1 until inside first reached target
}

const capReply = `{"id":"chatcmpl-bench","object":"chat.completion","model":"gpt-bench",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`

func newCapServer(limit, target int) *capServer {
	s := &capServer{target: target, fullAt: -1}
	s.Capacity = &providertest.Capacity{Limit: limit, Latency: capLatency, Refusal: http.Header{"Retry-After": {"1"}},
		Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, capReply)
		}),
		Entered: func(inside int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fullAt < 0 && inside >= s.target {
				s.fullAt = time.Since(s.start)
			}
		}}
	return s
}

// capClient is the HTTP client cmd/nika/providers.go gives the provider adapters.
func capClient() *http.Client {
	return provider.NewHTTPClient(provider.DefaultMaxLimit)
}

// capRun is the figures of one run of the workload.
type capRun struct {
	wall, ws, we     time.Duration
	goodput          float64
	sends, refused   int
	failed           int
	firstFailure     string
	maxIn            int
	fullAt           time.Duration
	capacityRequests int           // C used in the window and goodput-frac
	unheld           time.Duration // when the limiter stopped holding requests back; -1: never
}

func runCapacity(b *testing.B, limit int) capRun {
	b.Helper()
	target := min(capJobs, provider.DefaultMaxLimit)
	srv := newCapServer(limit, target)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := capClient()
	defer client.CloseIdleConnections()

	p, ok := openai.Lookup("openai")
	if !ok {
		b.Fatal("no openai profile")
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": hs.URL + "/v1"}
	a, err := openai.New(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, client)
	if err != nil {
		b.Fatal(err)
	}
	front := provider.NewFront("openai", a, provider.FrontConfig{})

	total := capJobs * capTurns
	done := make([]time.Duration, 0, total) // times of the successful answers
	var (
		mu           sync.Mutex
		failed       atomic.Int64
		firstFailure atomic.Value
		wg           sync.WaitGroup
	)
	ctx := context.Background()
	start := time.Now()
	srv.mu.Lock()
	srv.start = start
	srv.mu.Unlock()
	// unheld: the first moment, once requests queued in the limiter, that none waits any more
	// (sampled every 5 ms): from then on the limiter holds nothing back.
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	unheld := time.Duration(-1)
	sampling.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		queued := false
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			st := front.Stats()
			if st.Waiting > 0 {
				queued = true
			} else if queued && st.InFlight > 0 {
				unheld = time.Since(start)
				return
			}
		}
	})
	for j := range capJobs {
		wg.Go(func() {
			for turn := range capTurns {
				req := provider.Request{Model: "openai/gpt-bench", Messages: []provider.Message{{Role: provider.RoleUser,
					Blocks: []provider.Block{provider.TextBlock("job " + strconv.Itoa(j) + " turn " + strconv.Itoa(turn))}}}}
				out := front.Complete(ctx, []provider.Request{req})
				if out[0].Err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, out[0].Err.Error())
					continue
				}
				at := time.Since(start)
				mu.Lock()
				done = append(done, at)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	close(stopSampling)
	sampling.Wait()

	c := limit
	if c == 0 {
		c = target
	}
	r := capRun{wall: wall, failed: int(failed.Load()), capacityRequests: c, unheld: unheld}
	if f, ok := firstFailure.Load().(string); ok {
		r.firstFailure = f
	}
	counts := srv.Counts()
	r.sends, r.refused, r.maxIn = counts.Sends, counts.Refused, counts.MaxInFlight
	srv.mu.Lock()
	r.fullAt = srv.fullAt
	srv.mu.Unlock()

	slices.Sort(done)
	if len(done) > 0 {
		// we: the moment fewer than C requests remain unanswered (failures never get answered, so
		// with failures the window ends at the last answer).
		r.we = done[max(0, min(total-c, len(done)-1))]
		r.ws = capWindowStart
		if r.we-r.ws < capMinWindowLen {
			r.ws = max(0, r.we-capMinWindowLen)
		}
		n := 0
		for _, t := range done {
			if t > r.ws && t <= r.we {
				n++
			}
		}
		if r.we > r.ws {
			r.goodput = float64(n) / (r.we - r.ws).Seconds()
		}
	}
	return r
}

// msToFull is fullAt in milliseconds, -1 when the server never had the target in flight.
func msToFull(fullAt time.Duration) int64 {
	if fullAt < 0 {
		return -1
	}
	return fullAt.Milliseconds()
}

func BenchmarkCapacity(b *testing.B) {
	for _, limit := range []int{16, 64, 256, 0} {
		name := "C=" + strconv.Itoa(limit)
		if limit == 0 {
			name = "C=unlimited"
		}
		b.Run(name, func(b *testing.B) {
			var sum capRun
			var goodput float64
			neverFull := false
			var unheldMax time.Duration // the latest over the runs; -1 when one never got there
			for b.Loop() {
				r := runCapacity(b, limit)
				b.Logf("wall %.2fs, window [%.2fs, %.2fs], goodput %.1f req/s (%.3f of C/L with C=%d), %d sends, %d answered 429, %d failed, max in flight %d, ms to full %d",
					r.wall.Seconds(), r.ws.Seconds(), r.we.Seconds(), r.goodput,
					r.goodput/(float64(r.capacityRequests)/capLatency.Seconds()), r.capacityRequests,
					r.sends, r.refused, r.failed, r.maxIn, msToFull(r.fullAt))
				if r.failed > 0 {
					b.Fatalf("%d requests failed; the first: %s", r.failed, r.firstFailure)
				}
				sum.wall += r.wall
				sum.ws += r.ws
				sum.we += r.we
				goodput += r.goodput
				sum.sends += r.sends
				sum.refused += r.refused
				sum.maxIn = max(sum.maxIn, r.maxIn)
				sum.capacityRequests = r.capacityRequests
				if r.unheld < 0 || unheldMax < 0 {
					unheldMax = -1
				} else {
					unheldMax = max(unheldMax, r.unheld)
				}
				if r.fullAt < 0 {
					neverFull = true
				} else {
					sum.fullAt += r.fullAt
				}
			}
			n := float64(b.N)
			b.ReportMetric(sum.wall.Seconds()/n, "wall-s")
			b.ReportMetric(sum.ws.Seconds()/n, "window-start-s")
			b.ReportMetric(sum.we.Seconds()/n, "window-end-s")
			b.ReportMetric(goodput/n, "goodput-req/s")
			b.ReportMetric(goodput/n/(float64(sum.capacityRequests)/capLatency.Seconds()), "goodput-frac")
			b.ReportMetric(float64(sum.refused)/n, "429s")
			pct := 0.0
			if sum.sends > 0 {
				pct = 100 * float64(sum.refused) / float64(sum.sends)
			}
			b.ReportMetric(pct, "429-%")
			b.ReportMetric(0, "failed")
			b.ReportMetric(float64(sum.maxIn), "max-inflight")
			if limit == 0 {
				ms := -1.0
				if !neverFull {
					ms = float64(sum.fullAt.Milliseconds()) / n
				}
				b.ReportMetric(ms, "ms-to-full")
				b.ReportMetric(float64(unheldMax.Milliseconds()), "ms-to-unheld")
			}
		})
	}
}
