package planner

import (
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
)

func TestBackoffWithoutJitter(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		n        int
		want     time.Duration
	}{
		{"fixed", 1, 500 * time.Millisecond},
		{"fixed", 4, 500 * time.Millisecond},
		{"linear", 3, 1500 * time.Millisecond},
		{"exponential", 1, 500 * time.Millisecond},
		{"exponential", 3, 2000 * time.Millisecond},
		{"exponential", 10, 8000 * time.Millisecond}, // capped
		{"exponential", 200, 8000 * time.Millisecond},
	} {
		r := &spec.Retry{BackoffMS: 500, BackoffMaxMS: 8000, Strategy: tc.strategy}
		if got := backoff(r, 0, "t", -1, tc.n); got != tc.want {
			t.Errorf("%s n=%d: %v, want %v", tc.strategy, tc.n, got, tc.want)
		}
	}
}

// The seeded equal jitter stays in [d/2, d), is a pure function of its
// inputs, and changes with the seed, the task, the iteration and n.
func TestBackoffJitter(t *testing.T) {
	r := &spec.Retry{BackoffMS: 1000, BackoffMaxMS: 60000, Strategy: "fixed", Jitter: true}
	seen := map[time.Duration]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		d := backoff(r, seed, "fetch", -1, 1)
		if d < 500*time.Millisecond || d >= 1000*time.Millisecond {
			t.Fatalf("seed %d: %v outside [500ms, 1s)", seed, d)
		}
		if d != backoff(r, seed, "fetch", -1, 1) {
			t.Fatal("not deterministic")
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Errorf("only %d distinct delays over 50 seeds", len(seen))
	}
	a := backoff(r, 7, "fetch", -1, 1)
	if a == backoff(r, 7, "other", -1, 1) && a == backoff(r, 7, "fetch", 0, 1) && a == backoff(r, 7, "fetch", -1, 2) {
		t.Error("task, iteration and attempt do not change the delay")
	}
}

// A fixed vector computed by hand from the §3.8 formula pins the bytes:
// seed 0, task "a" (FNV-1a-64 0xaf63dc4c8601ec8c), iter 0, n 1, d 1000.
func TestBackoffVector(t *testing.T) {
	r := &spec.Retry{BackoffMS: 1000, BackoffMaxMS: 60000, Strategy: "fixed", Jitter: true}
	x := uint64(0xaf63dc4c8601ec8c) ^ 1
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	r64 := z ^ (z >> 31)
	u := float64(r64>>11) / float64(uint64(1)<<53)
	want := time.Duration(500+uint64(u*500)) * time.Millisecond
	if got := backoff(r, 0, "a", -1, 1); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
