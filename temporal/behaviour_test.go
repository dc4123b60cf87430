package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

func kinds(lines []string, kind string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, `"kind":"`+kind+`"`) {
			n++
		}
	}
	return n
}

// Retries wait on Temporal timers, which the test environment skips: two back-offs of an hour
// each pass in the workflow's time, at once in the test's.
func TestRetryTimersAreTemporalTimers(t *testing.T) {
	rc := runCase{name: "retry-hours", src: head + `tasks:
  - id: flaky
    retry: { max_attempts: 3, backoff_ms: 3600000, backoff_max_ms: 3600000, backoff_strategy: fixed, on_codes: [NIKA-EXEC-001] }
    exec: { command: "` + strings.ReplaceAll(count(3), `"`, `\"`) + `" }
`}
	var begun time.Time
	out, env := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) { begun = env.Now() })
	if out.State != "success" || kinds(out.Events, "task_retrying") != 2 {
		t.Fatalf("state %s, %d retries; events:\n%s", out.State, kinds(out.Events, "task_retrying"), strings.Join(out.Events, "\n"))
	}
	var waited time.Duration // the back-offs the core decided (delay_ms, jitter included)
	for _, l := range out.Events {
		var e struct {
			Kind   string
			Fields struct {
				DelayMS int64 `json:"delay_ms"`
			}
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "task_retrying" {
			waited += time.Duration(e.Fields.DelayMS) * time.Millisecond
		}
	}
	if passed := env.Now().Sub(begun); waited < time.Hour || passed < waited {
		t.Errorf("the workflow's clock moved %s for back-offs of %s", passed, waited)
	}
}

// countingVerb is an exec verb that counts its calls and fails the first `fail` of them with a
// transient error nika's policy does not retry.
type countingVerb struct {
	calls atomic.Int32
}

func (v *countingVerb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	v.calls.Add(1)
	if cmd, _ := job.Fields["command"].(string); cmd == "fail" {
		e := spec.NewError(spec.CodeExecExit, "it failed", nil)
		e.Transient = true
		return workflow.Failed(e)
	}
	return workflow.Outcome{Output: job.Fields["command"]}
}

// A verb's failure is the activity's result: Temporal does not retry it (MaximumAttempts 1),
// and a task without a retry policy has one attempt.
func TestTemporalNeverRetriesAVerb(t *testing.T) {
	v := &countingVerb{}
	rc := runCase{name: "once", src: head + "tasks:\n  - id: a\n    exec: { command: fail }\n",
		verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"exec": v} }}
	out, _ := rc.onTemporal(t, nil)
	if out.State != "failure" || v.calls.Load() != 1 {
		t.Errorf("state %s after %d calls, want failure after 1", out.State, v.calls.Load())
	}
}

// A job whose worker was lost (its heartbeat timed out) is dispatched again as the same
// attempt: the trace has one attempt and no retry.
func TestLostWorkerDispatchesTheJobAgain(t *testing.T) {
	v := &countingVerb{}
	rc := runCase{name: "lost", src: head + "tasks:\n  - id: a\n    exec: { command: ok }\n",
		verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"exec": v} }}
	var lost atomic.Int32
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		acts := &Activities{Verbs: map[string]planner.Verb{"exec": v}, Heartbeat: testHeartbeat}
		env.OnActivity(JobActivity, mock.Anything, mock.Anything).Return(func(ctx context.Context, in JobInput) (JobOutcome, error) {
			if lost.Add(1) == 1 {
				return JobOutcome{}, temporal.NewHeartbeatTimeoutError()
			}
			return acts.RunJob(ctx, in)
		})
	})
	if out.State != "success" || lost.Load() != 2 || v.calls.Load() != 1 {
		t.Errorf("state %s, %d dispatches, %d verb calls; want success, 2, 1", out.State, lost.Load(), v.calls.Load())
	}
	if kinds(out.Events, "task_retrying") != 0 || kinds(out.Events, "task_started") != 1 {
		t.Errorf("events:\n%s", strings.Join(out.Events, "\n"))
	}
}

// A job whose worker stopped while it ran (its context ended with the worker's shutdown, not the
// workflow's cancellation) is no outcome: it is dispatched again as the same attempt, as after a
// lost worker, instead of ending cancelled.
func TestInterruptedJobRunsAgain(t *testing.T) {
	v := &countingVerb{}
	rc := runCase{name: "stopped", src: head + "tasks:\n  - id: a\n    exec: { command: ok }\n",
		verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"exec": v} }}
	var dispatches atomic.Int32
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		acts := &Activities{Verbs: map[string]planner.Verb{"exec": v}, Heartbeat: testHeartbeat}
		env.OnActivity(JobActivity, mock.Anything, mock.Anything).Return(func(ctx context.Context, in JobInput) (JobOutcome, error) {
			if dispatches.Add(1) == 1 {
				ctx, stop := context.WithCancelCause(ctx)
				stop(worker.ErrWorkerShutdown)
				return acts.RunJob(ctx, in)
			}
			return acts.RunJob(ctx, in)
		})
	})
	if out.State != "success" || dispatches.Load() != 2 || v.calls.Load() != 2 {
		t.Errorf("state %s, %d dispatches, %d verb calls; want success, 2, 2", out.State, dispatches.Load(), v.calls.Load())
	}
	if kinds(out.Events, "task_retrying") != 0 || kinds(out.Events, "task_started") != 1 {
		t.Errorf("events:\n%s", strings.Join(out.Events, "\n"))
	}
}

// blockVerb blocks every job whose command is "block" until its context ends, and tells the
// test once the first one runs; any other command succeeds with its text.
type blockVerb struct {
	once    sync.Once
	started chan struct{}
}

func (v *blockVerb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	cmd, _ := job.Fields["command"].(string)
	if cmd != "block" {
		return workflow.Outcome{Output: cmd}
	}
	v.once.Do(func() { close(v.started) })
	<-ctx.Done()
	return workflow.Failed(spec.NewError(spec.CodeCancel, "cancelled", nil))
}

// Cancelling the workflow is the user's cancellation: the running attempt ends cancelled,
// pending tasks are cancelled, the started task's on_finally still runs; the trace is the
// local run's cancelled at the same point.
func TestCancellationIsTemporalCancellation(t *testing.T) {
	src := head + `tasks:
  - id: long
    exec: { command: block }
    on_finally:
      - exec: { command: "finally ${{ tasks.long.status }} ${{ tasks.long.error.code }}" }
  - id: after
    depends_on: [long]
    exec: { command: after }
`
	local := &blockVerb{started: make(chan struct{})}
	rc := runCase{name: "cancel", src: src, verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"exec": local} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); <-local.started; cancel() }()
	want, res := rc.local(t, ctx)
	<-done

	remote := &blockVerb{started: make(chan struct{})}
	rc.verbs = func() map[string]planner.Verb { return map[string]planner.Verb{"exec": remote} }
	var wg sync.WaitGroup
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		wg.Add(1)
		go func() { defer wg.Done(); <-remote.started; env.CancelWorkflow() }()
	})
	wg.Wait()
	if res.State != planner.StatusCancelled || out.State != "cancelled" {
		t.Fatalf("states: local %s, temporal %s", res.State, out.State)
	}
	sameLines(t, want, out.Events)
	if !strings.Contains(strings.Join(out.Events, "\n"), "task_cancelled") {
		t.Errorf("no task_cancelled:\n%s", strings.Join(out.Events, "\n"))
	}
}

// A nika:prompt that nobody can answer waits for an answer signal: the question is queryable,
// and the answer is the task's output, as `--resume --answer` makes it locally.
func TestGateAnsweredBySignal(t *testing.T) {
	rc := runCase{name: "gate", src: head + `tasks:
  - id: ask
    invoke: { tool: "nika:prompt", args: { mode: confirm, message: "Deploy?" } }
  - id: deploy
    depends_on: [ask]
    when: ${{ tasks.ask.output }}
    exec: { command: "echo deploying" }
outputs:
  answer: ${{ tasks.ask.output }}
  deployed: ${{ tasks.deploy.status }}
`}
	var asked []Question
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(QueryQuestions)
			if err == nil {
				err = v.Get(&asked)
			}
			if err != nil {
				t.Errorf("query: %v", err)
			}
			env.SignalWorkflow(SignalAnswer, Answer{Name: "nosuch", Text: "yes"}) // dropped
			env.SignalWorkflow(SignalAnswer, Answer{Name: "ask", Text: "maybe"})  // no answer to a confirm: dropped
			env.SignalWorkflow(SignalAnswer, Answer{Name: "ask", Text: "yes"})
		}, time.Hour)
	})
	if len(asked) != 1 || asked[0].Task != "ask" || asked[0].Mode != "confirm" || asked[0].Message != "Deploy?" {
		t.Errorf("questions %+v", asked)
	}
	outs, _ := json.Marshal(out.Outputs)
	if out.State != "success" || string(outs) != `{"answer":true,"deployed":"success"}` {
		t.Errorf("state %s, outputs %s", out.State, outs)
	}
}

// Input.Ceiling is the server's permits ceiling (nika serve --temporal): the workflow is checked
// under it as nika serve checks a submission, so a run handed to Temporal cannot do more than it
// could in the server; without one, the workflow's own permits hold, as for `nika run`.
func TestCeilingBoundsTheRun(t *testing.T) {
	src := head + `tasks:
  - id: sh
    exec: { command: "echo hi" }
`
	for _, c := range []struct {
		name    string
		ceiling *spec.Permits
		fails   bool
	}{{"none", nil, false}, {"pure compute", &spec.Permits{}, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rc := runCase{name: "ceiling", src: src}
			in := rc.input(t, rc.engine(t, dir), dir)
			in.Ceiling = c.ceiling
			env := newEnv()
			Register(env, &Activities{})
			env.ExecuteWorkflow(WorkflowName, in)
			err := env.GetWorkflowError()
			if c.fails != (err != nil) || c.fails && !strings.Contains(err.Error(), "NIKA-SEC") {
				t.Errorf("ceiling %v: workflow error %v", c.ceiling, err)
			}
		})
	}
}

// CheckAnswers takes answers as the workflow does (TASK answers every iteration's question,
// TASK[i] one) and refuses, before anything is sent, a name that waits on nothing and a text
// that is no answer.
func TestCheckAnswers(t *testing.T) {
	qs := []Question{{Task: "ask", Iteration: -1, Mode: "confirm"}, {Task: "pick", Iteration: 2, Mode: "choice", Choices: []string{"a", "b"}}}
	for _, c := range []struct {
		texts      map[string]string
		ok         bool
		notWaiting bool
	}{
		{map[string]string{"ask": "yes", "pick[2]": "b"}, true, false},
		{map[string]string{"pick": "2"}, true, false},
		{map[string]string{"nosuch": "yes"}, false, true},
		{map[string]string{"pick[1]": "a"}, false, true},
		{map[string]string{"ask": "maybe"}, false, false},
		{map[string]string{"pick[2]": "c"}, false, false},
	} {
		err := CheckAnswers(qs, c.texts)
		var ae *AnswerError
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &ae) || ae.NotWaiting != c.notWaiting) {
			t.Errorf("%v: %v", c.texts, err)
		}
	}
}
