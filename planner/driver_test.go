package planner

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// callCount is a verb that counts its calls and answers "ok".
type callCount struct{ n atomic.Int32 }

func (c *callCount) Run(context.Context, workflow.Job) workflow.Outcome {
	c.n.Add(1)
	return workflow.Outcome{Output: "ok"}
}

// A user cancellation that happened before Run began (a signal during
// start-up) starts nothing (LANGUAGE.md §3.4: no new task starts, pending tasks
// become cancelled): no verb call, no task_started, no on_finally.
func TestCancelledBeforeStartStartsNothing(t *testing.T) {
	w := compile(t, header+`tasks:
  - id: a
    exec: { command: ["echo", "x"] }
    on_finally:
      - exec: { command: ["echo", "finally"] }
  - id: b
    depends_on: [a]
    when: true
    exec: { command: ["echo", "y"] }
`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := &callCount{}
	mem := event.NewMemory()
	var started atomic.Int32
	live := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveTaskStarted {
			started.Add(1)
		}
	})
	res := Run(ctx, w, Inputs{}, Options{Verbs: map[string]Verb{"exec": v}, Canonical: mem, Live: live})
	if res.State != "cancelled" {
		t.Errorf("state %s, want cancelled", res.State)
	}
	if n := v.n.Load(); n != 0 {
		t.Errorf("the verb ran %d times after the cancellation", n)
	}
	if n := started.Load(); n != 0 {
		t.Errorf("%d live task_started after the cancellation", n)
	}
	for _, e := range mem.Events() {
		if e.Kind == event.TaskStarted {
			t.Errorf("task_started %s after the cancellation", e.Task)
		}
	}
	for _, tr := range res.Tasks {
		if tr.Status != "cancelled" {
			t.Errorf("task %s is %s, want cancelled", tr.ID, tr.Status)
		}
	}
}

// A second signal (Options.Finally cancelled) abandons on_finally (LANGUAGE.md
// §3.4): the step it interrupts ends, and the steps after it are not run. Step 0
// gives the second signal itself and waits until its context ends; step 1 must
// never reach its verb.
func TestSecondSignalAbandonsLaterFinallySteps(t *testing.T) {
	w := compile(t, header+`tasks:
  - id: a
    exec: { command: ["echo", "x"] }
    on_finally:
      - exec: { command: ["cancel"] }
      - exec: { command: ["log", "after abandon"] }
`)
	fin, abandon := context.WithCancel(context.Background())
	defer abandon()
	s := newScript()
	s.cancel = abandon
	mem := event.NewMemory()
	res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"exec": s}, Canonical: mem, Finally: fin})
	for _, e := range mem.Events() {
		if e.Kind == event.Log && e.Fields["message"] == "after abandon" {
			t.Error("on_finally step 1 ran after the second signal abandoned on_finally")
		}
	}
	if a := res.Tasks[0]; a.Status != "success" {
		t.Errorf("a = %s, want success (on_finally does not change the outcome)", a.Status)
	}
}
