package planner

import (
	"hash/fnv"
	"time"

	"github.com/nikahq/nika/spec"
)

// backoff is the delay before attempt n+1 after attempt n failed (LANGUAGE.md
// §3.8): the strategy's base, capped, then the seeded equal jitter.
// iteration is the 0-based for_each index, or -1 outside for_each.
func backoff(r *spec.Retry, seed uint64, taskID string, iteration, n int) time.Duration {
	b := uint64(r.BackoffMS)
	var base uint64
	switch r.Strategy {
	case "fixed":
		base = b
	case "linear":
		base = b * uint64(n)
	default: // exponential
		shift := n - 1
		if shift > 62 {
			shift = 62
		}
		base = b << uint(shift)
		if shift > 0 && base>>uint(shift) != b { // overflow: the cap applies
			base = ^uint64(0)
		}
	}
	d := min(base, uint64(r.BackoffMaxMS))
	if !r.Jitter {
		return time.Duration(d) * time.Millisecond
	}
	h := fnv.New64a()
	h.Write([]byte(taskID))
	iter := uint64(0)
	if iteration >= 0 {
		iter = uint64(iteration) + 1
	}
	x := seed ^ h.Sum64() ^ (iter * 0x9E3779B97F4A7C15) ^ uint64(n)
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	r64 := z ^ (z >> 31)
	u := float64(r64>>11) / float64(uint64(1)<<53)
	half := d / 2
	delay := half + uint64(u*float64(d-half))
	return time.Duration(delay) * time.Millisecond
}
