package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/workflow"
)

// stepAgent is the engine's agent verb with its tool calls watched: how many run at once, and
// around, when set, runs each call (it calls call for the real one).
type stepAgent struct {
	*agent.Verb
	around func(ctx context.Context, tc core.ToolCall, call func() core.Result) core.Result

	mu       sync.Mutex
	inflight int
	most     int
	calls    atomic.Int32
}

func (s *stepAgent) Call(ctx context.Context, job workflow.Job, tc core.ToolCall) core.Result {
	s.calls.Add(1)
	s.mu.Lock()
	s.inflight++
	s.most = max(s.most, s.inflight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	call := func() core.Result { return s.Verb.Call(ctx, job, tc) }
	if s.around != nil {
		return s.around(ctx, tc, call)
	}
	return call()
}

// stepAgents are agentVerbs(par) with the agent watched; last is the agent of the latest run.
func stepAgents(par int, around func(ctx context.Context, tc core.ToolCall, call func() core.Result) core.Result) (verbs func() map[string]planner.Verb, last func() *stepAgent) {
	var mu sync.Mutex
	var cur *stepAgent
	verbs = func() map[string]planner.Verb {
		s := &stepAgent{Verb: agentVerbs(par)()["agent"].(*agent.Verb), around: around}
		mu.Lock()
		cur = s
		mu.Unlock()
		return map[string]planner.Verb{"agent": s}
	}
	return verbs, func() *stepAgent { mu.Lock(); defer mu.Unlock(); return cur }
}

// started counts the activities the environment starts, by name.
func started(env *testsuite.TestWorkflowEnvironment) func() map[string]int {
	var mu sync.Mutex
	n := map[string]int{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		n[info.ActivityType.Name]++
		mu.Unlock()
	})
	return func() map[string]int { mu.Lock(); defer mu.Unlock(); return n }
}

// rendezvous returns a wait that blocks until k callers are in it (or fails t after a minute,
// rather than hang, when they never all come).
func rendezvous(t *testing.T, k int) func() {
	var mu sync.Mutex
	n := 0
	all := make(chan struct{})
	return func() {
		mu.Lock()
		n++
		if n == k {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(time.Minute):
			t.Errorf("only %d of %d calls were ever in flight at once", n, k)
		}
	}
}

// The agent core runs in the workflow: the attempt is one arming activity, one activity per
// model request (two turns) and one per tool call (eight), and never a whole-job activity. The
// calls of a batch run concurrently up to max_parallel_tools and no further (for 2, calls 0 and 1
// meet in flight; for 8, all eight do, then end in reverse order), and the trace is the local
// run's, the tool_invoked events in request order.
func TestAgentCoreStepsAreActivities(t *testing.T) {
	for _, par := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("max_parallel_tools=", par), func(t *testing.T) {
			var around func(context.Context, core.ToolCall, func() core.Result) core.Result
			switch par {
			case 2:
				meet := rendezvous(t, 2)
				around = func(_ context.Context, tc core.ToolCall, call func() core.Result) core.Result {
					if tc.Index < 2 {
						meet()
					}
					return call()
				}
			case 8:
				meet := rendezvous(t, 8)
				var done [8]chan struct{}
				for i := range done {
					done[i] = make(chan struct{})
				}
				around = func(_ context.Context, tc core.ToolCall, call func() core.Result) core.Result {
					meet()
					if tc.Index < 7 {
						<-done[tc.Index+1] // the later call ends first
					}
					defer close(done[tc.Index])
					return call()
				}
			}
			verbs, last := stepAgents(par, around)
			rc := runCase{name: "agent", src: agentSrc, verbs: verbs}
			want, _ := rc.local(t, context.Background())
			var count func() map[string]int
			out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) { count = started(env) })
			sameLines(t, want, out.Events)
			if out.State != "success" {
				t.Fatalf("state %s\n%s", out.State, strings.Join(out.Events, "\n"))
			}
			n := count()
			if n[AgentArmActivity] != 1 || n[AgentAskActivity] != 2 || n[AgentCallActivity] != 8 || n[JobActivity] != 0 {
				t.Errorf("activities started: %v; want 1 arm, 2 ask, 8 call, no whole job", n)
			}
			if s := last(); s.most != par || s.calls.Load() != 8 {
				t.Errorf("%d calls, at most %d in flight; want 8, %d", s.calls.Load(), s.most, par)
			}
		})
	}
}

// A worker lost during one tool call (its heartbeat timed out), or stopping during another (the
// call interrupted), costs that call only: it is dispatched again, the model is not asked again
// and no other call runs twice, and the trace is the local run's.
func TestAgentCoreLostWorkerRedoesOnlyItsStep(t *testing.T) {
	verbs, last := stepAgents(8, nil)
	rc := runCase{name: "agent", src: agentSrc, verbs: verbs}
	want, _ := rc.local(t, context.Background())
	var count func() map[string]int
	var lost, stopped atomic.Bool
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		count = started(env)
		acts := &Activities{Verbs: map[string]planner.Verb{"agent": last()}, Heartbeat: testHeartbeat}
		env.OnActivity(AgentCallActivity, mock.Anything, mock.Anything).Return(func(ctx context.Context, in CallInput) (CallOutcome, error) {
			if in.Call.Index == 3 && lost.CompareAndSwap(false, true) {
				return CallOutcome{}, temporal.NewHeartbeatTimeoutError()
			}
			if in.Call.Index == 5 && stopped.CompareAndSwap(false, true) {
				ctx, cancel := context.WithCancelCause(ctx)
				cancel(worker.ErrWorkerShutdown)
				return acts.CallAgent(ctx, in) // the tool sees its context end; the step is no answer
			}
			return acts.CallAgent(ctx, in)
		})
	})
	sameLines(t, want, out.Events)
	n := count()
	if out.State != "success" || n[AgentAskActivity] != 2 || n[AgentCallActivity] != 10 || last().calls.Load() != 9 {
		t.Errorf("state %s, activities %v, %d tool calls; want success, 2 ask and 10 call activities, 9 tool calls (the interrupted one twice)", out.State, n, last().calls.Load())
	}
}

// A security-boundary refusal stops the batch (AGENT.md §6.5): at max_parallel_tools 1 no call
// after it starts, and the attempt fails with the refusal.
func TestAgentCoreBoundaryStopsTheBatch(t *testing.T) {
	refuse := func(_ context.Context, tc core.ToolCall, call func() core.Result) core.Result {
		if tc.Index == 2 {
			return errResult(spec.NewError(spec.CodeSecPermits, "outside the permits", nil))
		}
		return call()
	}
	verbs, last := stepAgents(1, refuse)
	rc := runCase{name: "agent", src: agentSrc, verbs: verbs}
	var count func() map[string]int
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) { count = started(env) })
	if out.State != "failure" || !strings.Contains(strings.Join(out.Events, "\n"), spec.CodeSecPermits) {
		t.Fatalf("state %s, want failure with %s:\n%s", out.State, spec.CodeSecPermits, strings.Join(out.Events, "\n"))
	}
	if n := count(); n[AgentCallActivity] != 3 || last().calls.Load() != 3 || n[AgentAskActivity] != 1 {
		t.Errorf("activities %v, %d tool calls; want 1 ask, 3 calls (the refused one last)", n, last().calls.Load())
	}
}

// Cancelling the run while a batch's calls are in flight cancels their activities (the tools see
// their context end, and the workflow waits for them), the model is not asked again, and the
// task ends cancelled.
func TestAgentCoreCancelledMidBatch(t *testing.T) {
	inFlight := rendezvous(t, 8)
	var sawCancel atomic.Int32
	allSaw := make(chan struct{})
	block := func(ctx context.Context, tc core.ToolCall, call func() core.Result) core.Result {
		inFlight()
		<-ctx.Done()
		if sawCancel.Add(1) == 8 {
			close(allSaw)
		}
		return errResult(spec.NewError(spec.CodeCancel, "cancelled", nil))
	}
	verbs, last := stepAgents(8, block)
	rc := runCase{name: "agent", src: agentSrc, verbs: verbs}
	var count func() map[string]int
	var wg sync.WaitGroup
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		count = started(env)
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(time.Minute)
			for last() == nil || last().calls.Load() < 8 { // the calls are all in their rendezvous
				if time.Now().After(deadline) {
					t.Error("the eight calls never started")
					break
				}
				runtime.Gosched()
			}
			env.CancelWorkflow()
		}()
	})
	wg.Wait()
	if out.State != "cancelled" || kinds(out.Events, "task_cancelled") != 1 {
		t.Fatalf("state %s:\n%s", out.State, strings.Join(out.Events, "\n"))
	}
	select { // the test environment does not wait for a cancelled activity's end
	case <-allSaw:
	case <-time.After(time.Minute):
		t.Errorf("%d of 8 calls saw their cancellation", sawCancel.Load())
	}
	if n := count(); n[AgentAskActivity] != 1 {
		t.Errorf("activities %v; want 1 ask", n)
	}
}

// A tool result larger than a Temporal payload carries fails the attempt with an error that says
// so, instead of a payload the server refuses.
func TestAgentCoreTooLargeAResult(t *testing.T) {
	big := func(_ context.Context, tc core.ToolCall, call func() core.Result) core.Result {
		if tc.Index == 4 {
			return core.Result{Content: strings.Repeat("x", maxStepBytes+1)}
		}
		return call()
	}
	verbs, _ := stepAgents(8, big)
	rc := runCase{name: "agent", src: agentSrc, verbs: verbs}
	out, _ := rc.onTemporal(t, nil)
	if all := strings.Join(out.Events, "\n"); out.State != "failure" || !strings.Contains(all, "the result of nika:hash is") || !strings.Contains(all, "more than a Temporal payload carries") {
		t.Fatalf("state %s, want failure saying the result is too large:\n%s", out.State, all)
	}
}

// A step's context that ends for another reason than the workflow's cancellation (the worker
// stopping) is an interruption, which the workflow does again; the workflow's own cancellation
// is not.
func TestInterrupted(t *testing.T) {
	live := context.Background()
	stopping, stop := context.WithCancelCause(live)
	stop(worker.ErrWorkerShutdown)
	cancelled, cancel := context.WithCancelCause(live)
	cancel(temporal.NewCanceledError())
	if interrupted(live) != nil || interrupted(cancelled) != nil {
		t.Error("a live or cancelled step is not interrupted")
	}
	if err := interrupted(stopping); !workerLost(err) {
		t.Errorf("a stopping worker's step: %v, want an interruption the workflow does again", err)
	}
}

// What crosses the wire comes back as it went: the arming's schema with its integers, a tool
// definition without parameters without them (not as the JSON null).
func TestArmingRoundTrip(t *testing.T) {
	in := core.Arming{Model: "mock/echo", MaxTurns: 3, Schema: map[string]any{"type": "integer", "minimum": 1},
		Universe: []provider.ToolDef{{Name: "nika:log"}, {Name: "nika:hash", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	b, err := json.Marshal(Arming{Arming: in, Schema: Value{in.Schema}})
	if err != nil {
		t.Fatal(err)
	}
	var w Arming
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	got := w.core()
	if !reflect.DeepEqual(got, in) {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, in)
	}
}
