package server

import (
	"slices"
	"strings"
	"testing"
)

// The queue is FIFO (package doc): with one slot held by a blocker, runs a, b and c queued in that
// order start in that order once the slot frees. Each run's only task reports itself on the gate and
// waits for one token, so with MaxRuns 1 the gate sees the runs exactly in their start order.
func TestQueueStartsRunsInSubmissionOrder(t *testing.T) {
	g := newGate()
	g.named = map[string]chan struct{}{"blocker": make(chan struct{}, 1)}
	s, c := start(t, Options{Verbs: g.verbs, MaxRuns: 1, QueueSize: 3})
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
