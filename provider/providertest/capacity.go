package providertest

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Capacity is a simulated provider's admission control, for tests and benchmarks of the limiter
// against an httptest server: it admits Limit requests at once (0: any number) and hands each
// admitted one to Next after Latency (the provider's latency, not synchronization); a request that
// arrives while Limit are being served is answered at once with 429, the headers of Refusal, and an
// OpenAI-style rate-limit error body. Set the fields before the first request; Capacity is safe for
// concurrent use.
type Capacity struct {
	Limit   int
	Latency time.Duration
	Refusal http.Header  // the 429's headers, e.g. Retry-After: 1
	Next    http.Handler // answers an admitted request
	// Entered, if set, is called (under Capacity's lock) with the number of requests inside the
	// handler, admitted or being refused, each time one enters.
	Entered func(inside int)

	mu                                      sync.Mutex
	admitted, inside, maxIn, sends, refused int
}

// CapacityCounts is what a Capacity has seen.
type CapacityCounts struct {
	Sends       int // requests received, each send of a retried request counted
	Refused     int // answered 429
	MaxInFlight int // the most requests inside the handler at once, admitted or being refused
}

// Counts returns what c has seen so far.
func (c *Capacity) Counts() CapacityCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CapacityCounts{Sends: c.sends, Refused: c.refused, MaxInFlight: c.maxIn}
}

func (c *Capacity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.sends++
	c.inside++
	c.maxIn = max(c.maxIn, c.inside)
	if c.Entered != nil {
		c.Entered(c.inside)
	}
	admit := c.Limit == 0 || c.admitted < c.Limit
	if admit {
		c.admitted++
	} else {
		c.refused++
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inside--
		if admit {
			c.admitted--
		}
		c.mu.Unlock()
	}()
	if !admit {
		for k, vs := range c.Refusal {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	t := time.NewTimer(c.Latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	c.Next.ServeHTTP(w, r)
}
