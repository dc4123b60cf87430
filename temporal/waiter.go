package temporal

import (
	tw "go.temporal.io/sdk/workflow"

	"github.com/nikahq/nika/planner"
)

// Waiting on many futures at once.
//
// A job's activity and a core's timer are futures, and the driver must take whichever ends
// first. Neither obvious way scales to a wide for_each: a coroutine per future makes the SDK's
// dispatcher visit every coroutine each time one can move, and one selector holding every
// future visits every pending future at each Select; both are quadratic (a 10,000-iteration
// for_each took minutes, and a workflow task that does not yield for a second is ended by the
// SDK's deadlock detector). So the futures a step creates are split into shards of at most
// shardSize, each waited on by one coroutine with a selector of its own, which hands each ended
// future to the driver loop through one channel, in the order its selector took them. A shard's
// futures are all added before its coroutine first runs (workflow code is single-threaded: it
// runs when the loop yields), so a selector is never changed while it selects, and a coroutine
// ends with its last future. Everything is deterministic: coroutines run in creation order.

const shardSize = 64

// ended is a future that became ready: a job's activity or a timer.
type ended struct {
	job   *call
	f     tw.Future
	timer *planner.Timer
}

// shard is the open shard of the current step: the futures added since the loop last yielded.
type shard struct {
	sel     tw.Selector
	pending int
	got     ended // what the selector's last callback took
}

// await adds a future to the open shard, opening a new one (and its coroutine) when there is
// none or it is full.
func (d *driver) await(e ended) {
	s := d.open
	if s == nil || s.pending == shardSize {
		s = &shard{sel: tw.NewSelector(d.loop)}
		d.open = s
		tw.Go(d.loop, func(c tw.Context) {
			for s.pending > 0 {
				s.sel.Select(c)
				s.pending--
				d.ended.Send(c, s.got)
			}
		})
	}
	s.pending++
	s.sel.AddFuture(e.f, func(tw.Future) { s.got = e })
}
