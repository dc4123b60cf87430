package planner

import "sync"

// inbox holds the jobs' reports and the timers that fired, in the order they
// were put, until the driver loop takes them. A job's goroutine hands its report over and ends without
// waiting for the loop: a wide for_each whose jobs finish faster than the
// loop takes their reports would otherwise keep every finished goroutine,
// and its stack, alive until then. One goroutine's reports (a prepared
// `with`, then the outcome) keep their order.
type inbox struct {
	mu          sync.Mutex
	first, last *inboxBlock   // take from first, put into last; nil when empty
	spare       *inboxBlock   // one emptied block, kept for the next
	ready       chan struct{} // holds a token while reports wait
}

// inboxBlock is a fixed run of the queue: a backlog of n reports costs n
// slots once, never a copy into a larger array (a wide for_each's reports
// pile up while the driver starts its jobs).
type inboxBlock struct {
	items      [128]jobResult
	read, used int
	next       *inboxBlock
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

func (b *inbox) put(r jobResult) {
	b.mu.Lock()
	*b.slot() = r
	b.mu.Unlock()
	b.signal()
}

// putReport puts a job's report, written into its slot in place.
func (b *inbox) putReport(id JobID, rep *Report, step *liveJob) {
	b.mu.Lock()
	r := b.slot()
	r.id, r.rep, r.step = id, *rep, step
	b.mu.Unlock()
	b.signal()
}

// slot is the next free slot; called with mu held.
func (b *inbox) slot() *jobResult {
	if b.last == nil || b.last.used == len(b.last.items) {
		blk := b.spare
		if blk != nil {
			b.spare = nil
		} else {
			blk = &inboxBlock{}
		}
		if b.last == nil {
			b.first = blk
		} else {
			b.last.next = blk
		}
		b.last = blk
	}
	r := &b.last.items[b.last.used]
	b.last.used++
	return r
}

func (b *inbox) signal() {
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
	blk := b.first
	if blk == nil || blk.read == blk.used {
		return jobResult{}, false
	}
	r := blk.items[blk.read]
	blk.items[blk.read] = jobResult{}
	blk.read++
	if blk.read == blk.used && (blk.used == len(blk.items) || blk == b.last) { // emptied: recycle it
		b.first = blk.next
		if b.first == nil {
			b.last = nil
		}
		blk.read, blk.used, blk.next = 0, 0, nil // its items were cleared as they were taken
		b.spare = blk
	}
	if b.first != nil && b.first.read < b.first.used {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	return r, true
}
