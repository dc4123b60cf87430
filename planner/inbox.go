package planner

import "sync"

// inbox holds the jobs' reports and the timers that fired, in the order they
// were put, until the driver loop takes them. A job's goroutine hands its report over and ends without
// waiting for the loop: a wide for_each whose jobs finish faster than the
// loop takes their reports would otherwise keep every finished goroutine,
// and its stack, alive until then. One goroutine's reports (a prepared
// `with`, then the outcome) keep their order.
type inbox struct {
	mu    sync.Mutex
	queue []jobResult
	head  int
	ready chan struct{} // holds a token while reports wait
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

func (b *inbox) put(r jobResult) {
	b.mu.Lock()
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default: // a token is there already
	}
}

// take returns the oldest report (or fired timer), and leaves a token in
// ready while more wait (one per token, so that questions and the user's
// cancellation are taken between them).
func (b *inbox) take() (jobResult, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.queue) {
		return jobResult{}, false
	}
	r := b.queue[b.head]
	b.queue[b.head] = jobResult{}
	b.head++
	switch {
	case b.head == len(b.queue):
		b.queue, b.head = b.queue[:0], 0
	case b.head > len(b.queue)/2 && b.head >= 1024: // drop the taken half: O(1) amortized
		n := copy(b.queue, b.queue[b.head:])
		clear(b.queue[n:])
		b.queue, b.head = b.queue[:n], 0
	}
	if b.head < len(b.queue) {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	return r, true
}
