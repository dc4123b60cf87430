package tools

import (
	"context"
	"errors"
	"testing"

	"github.com/nikahq/nika/spec"
)

// nika:inspect forwards its view to Call.Inspect (the planner) and returns the answer as it is;
// without a planner it fails with NIKA-INVOKE-003, a bad view never reaches the planner, and a
// cancelled wait is NIKA-CANCEL-001.
func TestInspect(t *testing.T) {
	b := NewBuiltins()
	entered := make(chan struct{})
	inspect := func(ctx context.Context, view string) (any, error) {
		if view == "threads" {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]any{"view": view}, nil
	}
	out, err := b.Execute(context.Background(), Call{Name: "nika:inspect", Args: map[string]any{"view": "cost"}, Inspect: inspect})
	if err != nil || out.(map[string]any)["view"] != "cost" {
		t.Fatalf("cost: %v %v", out, err)
	}
	_, err = b.Execute(context.Background(), Call{Name: "nika:inspect", Args: map[string]any{"view": "costs"}, Inspect: inspect})
	if code(err) != "NIKA-INVOKE-002" {
		t.Errorf("bad view: %v, want NIKA-INVOKE-002", err)
	}
	_, err = b.Execute(context.Background(), Call{Name: "nika:inspect", Args: map[string]any{"view": "records"}})
	if code(err) != "NIKA-INVOKE-003" {
		t.Errorf("no planner: %v, want NIKA-INVOKE-003", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := b.Execute(ctx, Call{Name: "nika:inspect", Args: map[string]any{"view": "threads"}, Inspect: inspect})
		done <- err
	}()
	<-entered // the planner holds the question: cancel while it waits
	cancel()
	if err := <-done; code(err) != "NIKA-CANCEL-001" || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want NIKA-CANCEL-001 wrapping context.Canceled", err)
	}
}

func code(err error) string {
	var se *spec.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}
