package planner

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// A paused attempt waits while everything that does not depend on it runs, a retry back-off
// included; then the run ends paused, with the question, the waiting task paused and its
// dependents pending.
func TestPauseAfterEverythingElseRan(t *testing.T) {
	src := header + `tasks:
  - id: ask
    exec: { command: ["pause", "name?"] }
  - id: after
    depends_on: [ask]
    exec: { command: ["echo", "after"] }
  - id: alone
    exec: { command: ["echo", "alone"] }
  - id: flaky
    retry: { max_attempts: 2, backoff_ms: 1, on_codes: ["NIKA-EXEC-001"] }
    exec: { command: ["flaky", "1", "NIKA-EXEC-001"] }
`
	r := execute(t, context.Background(), src, newScript(), Config{})
	if r.res.State != StatusPaused {
		t.Fatalf("state %s, want paused; events %v", r.res.State, r.kinds())
	}
	if len(r.res.Paused) != 1 || r.res.Paused[0].Task != "ask" || r.res.Paused[0].Question.Message != "name?" || r.res.Paused[0].Iteration != -1 {
		t.Fatalf("paused %+v", r.res.Paused)
	}
	for id, want := range map[string]Status{"ask": StatusPaused, "after": StatusPending, "alone": StatusSuccess, "flaky": StatusSuccess} {
		if got := r.task(id).Status; got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	last := r.events[len(r.events)-1]
	if last.Kind != event.WorkflowPaused || len(last.Fields["questions"].([]any)) != 1 {
		t.Fatalf("last event %+v", last)
	}
}

// A user cancellation of a run in which an attempt waits for an answer ends the run
// cancelled, not paused.
func TestCancelWhilePaused(t *testing.T) {
	src := header + `tasks:
  - id: ask
    exec: { command: ["pause", "name?"] }
  - id: hold
    exec: { command: ["block"] }
`
	ctx, cancel := context.WithCancel(context.Background())
	s := newScript()
	s.cancel = cancel
	r := execute(t, ctx, src+`  - id: stop
    exec: { command: ["cancel"] }
`, s, Config{})
	if r.res.State != StatusCancelled || len(r.res.Paused) != 0 {
		t.Fatalf("state %s, paused %+v", r.res.State, r.res.Paused)
	}
}

// fakeMemory restores the jobs of the tasks in restore and records every job it is told of.
type fakeMemory struct {
	restore map[string]any
	mu      sync.Mutex
	settled []string
}

func (m *fakeMemory) Job(id JobID, job *workflow.Job, with map[string]any) JobMemory {
	return &fakeJobMemory{m: m, id: id}
}

type fakeJobMemory struct {
	m  *fakeMemory
	id JobID
}

func (j *fakeJobMemory) Restore() (Recall, bool) {
	v, ok := j.m.restore[j.id.Task]
	return Recall{Outcome: workflow.Outcome{Output: v}, Restored: true}, ok
}
func (j *fakeJobMemory) Memo() workflow.Memo { return nil }
func (j *fakeJobMemory) Settled(rep *Report) {
	j.m.mu.Lock()
	j.m.settled = append(j.m.settled, j.id.Task)
	j.m.mu.Unlock()
}

// A job the memory restores does not run: its output comes from the memory, its events say
// task_restored, and its dependents read it; every other job runs and is recorded.
func TestMemoryRestoresJobs(t *testing.T) {
	src := header + `tasks:
  - id: a
    exec: { command: ["fail", "NIKA-EXEC-001"] }
  - id: b
    depends_on: [a]
    exec: { command: ["echo", "${{ tasks.a.output }}"] }
`
	w := compile(t, src)
	mem := event.NewMemory()
	m := &fakeMemory{restore: map[string]any{"a": "from the journal"}}
	res := Run(context.Background(), w, Inputs{Vars: map[string]any{}, Env: map[string]any{}, Secrets: map[string]any{}},
		Options{Verbs: map[string]Verb{"exec": newScript()}, Canonical: mem, Memory: m})
	if res.State != StatusSuccess || res.Tasks[1].Output != "from the journal" {
		t.Fatalf("state %s, b's output %v", res.State, res.Tasks[1].Output)
	}
	var kinds []string
	for _, e := range mem.Events() {
		kinds = append(kinds, e.Kind+" "+e.Task)
	}
	if !slices.Contains(kinds, "task_restored a") || slices.Contains(kinds, "task_restored b") {
		t.Fatalf("events %v", kinds)
	}
	if !slices.Equal(m.settled, []string{"b"}) {
		t.Fatalf("recorded %v, want b only (a was restored)", m.settled)
	}
}
