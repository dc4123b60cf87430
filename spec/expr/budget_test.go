package expr

import (
	"context"
	"errors"
	"testing"
	"time"
)

func compileOK(t *testing.T, src string) *Program {
	t.Helper()
	p, issues := Compile(src, testEnv)
	if issues != nil {
		t.Fatalf("Compile(%q) = %v", src, issues)
	}
	return p
}

// Every iteration of a predicate charges its weight, and a reduce also the
// size of its accumulator; an expression without loops takes no step.
func TestBudgetCharges(t *testing.T) {
	for _, tc := range []struct {
		src   string
		steps int
	}{
		{"1 + 2", 0},
		{"count(1..10, true)", 10}, // weight 1: the literal
		// The outer predicate weighs 116 (> 1, the count loop 100, 1..3 3, 0 1,
		// and the inner predicate as rewritten: predicate 1, sequence 1,
		// %step(1, nil) 8, true 1); the inner one 1.
		{"count(1..10, count(1..3, true) > 0)", 10*116 + 30},
		{"reduce(1..3, #acc + 'x', '')", 3 * 3}, // acc "" "x" "xx": under bytesPerStep, free
		{"reduce(1..3, #acc + repeat('x', 32), '')", 3*(1+1+5+2) + 0 + 2 + 4},
	} {
		b := NewBudget(nil)
		if _, err := compileOK(t, tc.src).EvalBudget(evalValues, b); err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := MaxSteps - b.left; got != tc.steps {
			t.Errorf("%s: %d steps, want %d", tc.src, got, tc.steps)
		}
	}
}

// A loop beyond the budget fails with ErrSteps, a run-time error, and not an
// interruption.
func TestBudgetExhausted(t *testing.T) {
	b := NewBudget(nil)
	b.left = 1000
	_, err := compileOK(t, "count(1..100, count(1..100, true) > 0)").EvalBudget(evalValues, b)
	var ee *EvalError
	if !errors.As(err, &ee) || !errors.Is(err, ErrSteps) || Interrupted(err) {
		t.Fatalf("err = %v (%T), want an *EvalError wrapping ErrSteps", err, err)
	}
	// The budget is shared: the next evaluation under it fails at once.
	if _, err := compileOK(t, "1").EvalBudget(evalValues, b); !errors.Is(err, ErrSteps) {
		t.Errorf("after exhaustion: %v, want ErrSteps", err)
	}
	// An expensive reduce is charged for the string it grows.
	b = NewBudget(nil)
	_, err = compileOK(t, "reduce(1..100000, #acc + repeat('x', 1000), '')").EvalBudget(evalValues, b)
	if !errors.Is(err, ErrSteps) {
		t.Errorf("growing reduce: %v, want ErrSteps", err)
	}
}

// A done context stops an evaluation: before it starts, and at the next
// iteration of any loop (the step function, which every iteration calls,
// stops it).
func TestBudgetInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := compileOK(t, "1 + 2").EvalBudget(evalValues, NewBudget(ctx))
	if !Interrupted(err) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrSteps) {
		t.Errorf("cancelled before: %v, want an interruption wrapping context.Canceled", err)
	}
	func() {
		defer func() {
			r := recover()
			if err, _ := r.(error); !Interrupted(err) {
				t.Errorf("step under a done context panicked with %v, want the interruption", r)
			}
		}()
		NewBudget(ctx).step(1, nil)
	}()
	// A running evaluation: it never ends by itself (a million renderings of
	// a list of 100,000 numbers), so its returning proves it stopped.
	big := make([]any, 100_000)
	for i := range big {
		big[i] = i
	}
	values := map[string]any{"with": map[string]any{"big": big}}
	p := compileOK(t, "all(1..999999, toJSON(with.big) != '')")
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.EvalBudget(values, NewBudget(ctx))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !Interrupted(err) {
			t.Errorf("cancelled while running: %v, want an interruption", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the evaluation did not stop within 60s of its context's end")
	}
}

// The step rewrite keeps the static type of the predicate, and so of the
// result and of what is built on it (types as they were before the rewrite).
func TestBudgetKeepsTypes(t *testing.T) {
	for src, want := range map[string]Type{
		"map(1..3, # * 2)":               Array,
		"filter(vars.list, # > 1)":       Array,
		"count(vars.list, # > 1)":        Int,
		"all(vars.list, # > 0)":          Bool,
		"sum(1..3, # * 1.5)":             Float,
		"groupBy(vars.list, # % 2)":      Object,
		"none(vars.list, # == 'x')":      Bool,
		"findIndex(vars.list, # == 2)":   Int,
		"reduce(vars.list, #acc, 0) + 1": Any,
	} {
		if got := compileOK(t, src).Type; got != want {
			t.Errorf("%s: type %v, want %v", src, got, want)
		}
	}
	for _, src := range []string{
		"filter(vars.list, 1)",  // predicate should return boolean
		"map(1..3, #)[0] + 'x'", // the element type is still int
		"sum(1..3, #) + 'x'",
	} {
		if _, issues := Compile(src, testEnv); len(issues) == 0 || issues[0].Code != CodeInvalid {
			t.Errorf("%s: issues %v, want the static type error", src, issues)
		}
	}
	if _, err := compileOK(t, "filter(vars.list, with.s)").Eval(evalValues); err == nil {
		t.Error("a non-boolean predicate value of filter still fails at run time (D14)")
	}
}
