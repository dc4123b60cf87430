package jq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The programs of issue 11 (a binding collecting tens of millions of values,
// one quadratic over its input) stop when their context ends: the planner runs
// bindings under the attempt's context, so that the task timeout covers them.
func TestRunStopsExpensivePrograms(t *testing.T) {
	in := make([]any, 100_000)
	for i := range in {
		in[i] = i
	}
	for _, src := range []string{`[range(6e7)] | length`, `[.[] as $a | .[] | select(. == $a)] | length`} {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err = p.Run(ctx, in)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want the context's deadline", src, err)
		}
	}
}
