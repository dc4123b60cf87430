package expr

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/expr-lang/expr/ast"
)

// The step budget and cancellation of an evaluation.
//
// expr's VM has a memory budget (ranges and the results of map, filter, …
// are charged to it) but neither a step budget nor a way to stop a running
// program: its loop cannot be interrupted from outside, and a program whose
// loops iterate over data it was given (a task output) allocates nothing the
// memory budget sees. `count(xs, count(xs, # == 0) > 0)` over 10⁵ elements is
// 10¹⁰ iterations; `reduce(xs, #acc + "…", "")` copies a string that grows at
// each step.
//
// Every loop of an expr program is the loop of a builtin over its predicate
// (all, any, map, filter, count, reduce, sortBy, …; expr has no recursion and
// no other backward jump, and the optimizer, which could add loops, is off).
// Compile therefore rewrites each predicate body p into the sequence
//
//	%step(W, nil); p                    (reduce: %step(W, #acc); p)
//
// which keeps p's static type (a sequence has the type of its last
// expression) and makes every iteration call %step first. %step is a
// function of the evaluation's environment (EvalBudget binds it to the
// Budget; user code cannot name it: the lexer never accepts '%'), typed
// func(any, any) any so that expr calls it directly (OpCallTyped, no
// argument slice). It charges W, the weighted number of syntax nodes of p
// (see countNodes): a bound on the instructions one iteration runs outside
// its nested loops, which charge their own steps. In a reduce it also
// charges the size of the accumulator (a string's bytes / bytesPerStep, an
// array's or object's elements): the accumulator is the only value a loop
// carries from one iteration to the next, and `#acc + x` copies it, so a
// reduce that builds a long string pays for its copying. Once the budget's context is done or its steps are spent,
// %step panics with the reason; expr's VM turns the panic into its error, so
// the evaluation ends within one iteration.
//
// Why not the alternatives: expr offers no hook into its instruction loop
// (its debugger needs a build tag), so a budget inside the VM would need a
// fork of it; and running the evaluation in a goroutine that is abandoned on
// cancellation bounds nothing: the abandoned evaluation would go on burning
// a core and holding its memory for as long as it runs.
//
// What is not counted: one builtin call over data that already exists (sort,
// toJSON, ==, a predicate-less sum or count) runs to its end; its cost is
// linear (or n log n) in a value the run already holds, and a cancelled
// context stops the evaluation at the next iteration. Nor is the memory of
// the VM's loop scopes, which it keeps until the evaluation ends; the step
// budget bounds their number.

// MaxSteps is the step budget of one evaluation (a Budget made by
// NewBudget): measured, about half a second to a second of the loops that
// are cheapest per step (one comparison per iteration; a reduce that appends
// to a string; a nested count whose predicate is one call).
const MaxSteps = 25_000_000

// bytesPerStep is how many bytes of a string one step pays for.
const bytesPerStep = 16

// stepKey is the environment key of the function every predicate iteration
// calls (see above).
const stepKey = "%step"

// ErrSteps is the cause of an evaluation that ran out of steps.
var ErrSteps = fmt.Errorf("the expression took more than %d steps; it is too expensive to evaluate", MaxSteps)

// Budget bounds one or several evaluations: a context, whose end stops them,
// and a number of steps they may take together. A Budget is used by one
// goroutine at a time.
type Budget struct {
	ctx  context.Context
	done <-chan struct{}
	left int
}

// NewBudget returns a budget of MaxSteps steps whose evaluations stop when
// ctx is done; a nil ctx never ends.
func NewBudget(ctx context.Context) *Budget {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Budget{ctx: ctx, done: ctx.Done(), left: MaxSteps}
}

// stopped returns the error that ends an evaluation under b now, if any.
func (b *Budget) stopped() error {
	select {
	case <-b.done:
		return interrupted{context.Cause(b.ctx)}
	default:
	}
	if b.left < 0 {
		return ErrSteps
	}
	return nil
}

// charge takes n steps from the budget.
func (b *Budget) charge(n int) error {
	b.left -= n
	return b.stopped()
}

// interrupted is the error of an evaluation whose context ended; it unwraps
// to the context's cause (context.Canceled, context.DeadlineExceeded, …).
type interrupted struct{ cause error }

func (e interrupted) Error() string { return "the evaluation was interrupted: " + e.cause.Error() }
func (e interrupted) Unwrap() error { return e.cause }

// Interrupted reports whether err ended an evaluation because its context
// ended (as opposed to a failure of the expression itself, or ErrSteps).
func Interrupted(err error) bool {
	var i interrupted
	return errors.As(err, &i)
}

// stepFunc is the type of %step: unnamed, so that expr calls it with
// OpCallTyped.
type stepFunc = func(weight, acc any) any

// step is %step(weight, acc) bound to b: it charges the iteration, and
// panics with the reason to stop (expr's VM recovers it into its error).
func (b *Budget) step(weight, acc any) any {
	w, _ := weight.(int)
	if acc != nil {
		w += sizeSteps(acc)
	}
	if err := b.charge(w); err != nil {
		panic(err)
	}
	return nil
}

// sizeSteps is what producing v costs beyond its instructions.
func sizeSteps(v any) int {
	switch x := v.(type) {
	case nil, bool, int, float64:
		return 0
	case string:
		return len(x) / bytesPerStep
	case []byte:
		return len(x) / bytesPerStep
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.Len() / bytesPerStep
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return 0
}

// meter rewrites every predicate body under p to charge the budget (see
// above) and reports whether it found one. It runs after the D14 rewrites,
// before the final type check.
func (c *compilation) meter(p *ast.Node) bool {
	found := false
	eachChild(*p, func(q *ast.Node) { found = c.meter(q) || found })
	b, ok := (*p).(*ast.BuiltinNode)
	if !ok {
		return found
	}
	for _, arg := range b.Arguments {
		pred, ok := arg.(*ast.PredicateNode)
		if !ok || pred.Node == nil {
			continue
		}
		found = true
		body := pred.Node
		at := func(n ast.Node) ast.Node { n.SetLocation(body.Location()); return n }
		var acc ast.Node = &ast.NilNode{}
		if b.Name == "reduce" {
			acc = &ast.PointerNode{Name: "acc"}
		}
		step := call(body, stepKey, at(&ast.IntegerNode{Value: countNodes(body)}), at(acc))
		pred.Node = at(&ast.SequenceNode{Nodes: []ast.Node{step, body}})
	}
	return found
}

// callWeight is what a call costs against one other node: the arguments
// are copied into a slice, and the function runs (measured: a predicate of
// one call is about five times as slow as one of one operator).
const callWeight = 5

// loopWeight is what starting a loop costs against one other node: expr's VM
// takes a scope for it that it does not give back before the evaluation
// ends (measured: a nested loop over three elements costs about a hundred
// times one operator per start).
const loopWeight = 100

// countNodes weighs the syntax nodes of a tree: one each, callWeight a
// call, loopWeight a builtin with a predicate.
func countNodes(n ast.Node) int {
	count := 1
	switch x := n.(type) {
	case *ast.CallNode:
		count = callWeight
	case *ast.BuiltinNode:
		count = callWeight
		for _, a := range x.Arguments {
			if _, ok := a.(*ast.PredicateNode); ok {
				count = loopWeight
			}
		}
	}
	eachChild(n, func(p *ast.Node) { count += countNodes(*p) })
	return count
}
