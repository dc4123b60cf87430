package workflow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/expr"
)

// EvalContext stops an expression once its context is done, with
// NIKA-CANCEL-001 and the position of the expression; an expression beyond the
// step budget is NIKA-VAR-006, whether or not it has a context.
func TestEvalContextStops(t *testing.T) {
	slow := value(t, `"${{ all(1..999999, toJSON(vars.list) != '' && count(1..999, true) > 0) }}"`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := EvalContext(ctx, slow, scope())
	if err == nil || err.Code != "NIKA-CANCEL-001" || err.Details["path"] == nil || err.Details["expression"] == nil {
		t.Fatalf("cancelled: %+v, want NIKA-CANCEL-001 with the expression and its path", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the error does not wrap the context's cause: %v", err)
	}

	// A running evaluation (about a minute of work otherwise) stops.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan *spec.Error, 1)
	go func() {
		_, err := EvalContext(ctx, slow, scope())
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || err.Code != "NIKA-CANCEL-001" {
			t.Fatalf("cancelled while running: %v, want NIKA-CANCEL-001", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the evaluation did not stop within 60s of its context's end")
	}

	// A million iterations of a predicate of some thirty steps: beyond the budget.
	costly := value(t, `"${{ count(1..999999, count(vars.list, true) > 0 && count(vars.list, true) > 0) }}"`)
	if _, err := Eval(costly, scope()); err == nil || err.Code != spec.CodeVarRuntime || !errors.Is(err, expr.ErrSteps) {
		t.Errorf("Eval: %v, want NIKA-VAR-006 for the exhausted step budget", err)
	}
	if _, err := EvalContext(context.Background(), costly, scope()); err == nil || err.Code != spec.CodeVarRuntime || !errors.Is(err, expr.ErrSteps) {
		t.Errorf("EvalContext: %v, want NIKA-VAR-006 for the exhausted step budget", err)
	}
}
