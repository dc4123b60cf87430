package server

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/engine"
)

// The queue is FIFO (package doc): with one slot held by a blocker, runs a, b and c queued in that
// order start in that order once the slot frees. Each run's only task reports itself on the gate and
// waits for one token, so with MaxRuns 1 the gate sees the runs exactly in their start order.
func TestQueueStartsRunsInSubmissionOrder(t *testing.T) {
	g := newGate()
	g.named = map[string]chan struct{}{"blocker": make(chan struct{}, 1)}
	s, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}, MaxRuns: 1, QueueSize: 3})
	named := func(name string) string { return strings.Replace(oneGatedYAML, "workflow: one", "workflow: "+name, 1) }
	blocker := c.submit(named("blocker"), nil)
	if got := <-g.entered; got != "blocker/only" {
		t.Fatalf("first start %s, want blocker/only", got)
	}
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		ids = append(ids, c.submit(named(name), nil))
	}
	if running, queued := s.Active(); running != 1 || queued != 3 {
		t.Fatalf("active = %d running, %d queued; want 1, 3", running, queued)
	}
	g.named["blocker"] <- struct{}{}
	var order []string
	for range 3 {
		order = append(order, <-g.entered) // the next queued run started
		g.release <- struct{}{}            // let it finish, which starts the one after it
	}
	if want := []string{"a/only", "b/only", "c/only"}; !slices.Equal(order, want) {
		t.Fatalf("queued runs started in order %v, want %v", order, want)
	}
	for _, id := range append([]string{blocker}, ids...) {
		c.events(id)
		if st := c.get(id); st.State != "success" {
			t.Errorf("%s: %s, want success", id, st.State)
		}
	}
}

// A 429 "queue is full" tells the client when to come back: Retry-After in seconds (RFC 9110 §10.2.3),
// the same number the message names.
func TestQueueFullSetsRetryAfter(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}, MaxRuns: 1, QueueSize: -1})
	a := c.submit(oneGatedYAML, nil)
	<-g.entered
	resp, err := c.ts.Client().Post(c.ts.URL+"/v1/runs", "application/json", strings.NewReader(body(oneGatedYAML, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(string(b), "retry in 5 seconds") {
		t.Fatalf("second run = %d, Retry-After %q, %s; want 429, Retry-After 5", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	// Only the queue-full refusal carries it: an accepted run does not.
	g.release <- struct{}{}
	c.events(a)
	resp, err = c.ts.Client().Post(c.ts.URL+"/v1/runs", "application/json", strings.NewReader(body(oneGatedYAML, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("after the slot freed = %d, Retry-After %q; want 202 without it", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	g.release <- struct{}{}
}
