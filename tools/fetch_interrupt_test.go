package tools

import (
	"context"
	"errors"
	"testing"

	"github.com/nikahq/nika/spec"
)

// A conversion that cannot stop midway (markdown, article) does not hold a cancelled call: the
// call returns its cancellation while the conversion is still running, and the conversion's late
// result is dropped.
func TestInterruptibleConversion(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	finished := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	v, err := interruptible(ctx, func() any {
		defer close(finished)
		close(started)
		<-release // still converting when the call returns
		return "late"
	})
	var se *spec.Error
	if v != nil || !errors.As(err, &se) || se.Code != spec.CodeCancel {
		t.Fatalf("interruptible = %v, %v; want the cancellation", v, err)
	}
	close(release)
	<-finished

	v, err = interruptible(context.Background(), func() any { return "done" })
	if v != "done" || err != nil {
		t.Fatalf("interruptible = %v, %v; want the conversion's result", v, err)
	}
}
