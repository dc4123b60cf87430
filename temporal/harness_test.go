package temporal

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// runCase is one workflow run both ways: locally through engine, as `nika run` runs it, and on
// Temporal's test environment through the same engine's verbs.
type runCase struct {
	name  string
	src   string
	vars  map[string]string
	dir   string                         // the run directory; "": a temporary one
	verbs func() map[string]planner.Verb // nil: the engine's own
	env   map[string]string
	// heartbeat is the run's Input.HeartbeatTimeout; 0: testHeartbeatTimeout.
	heartbeat time.Duration
	seed      uint64         // the retry jitter seed (--seed)
	parallel  int            // the tasks in flight at most (--max-parallel-tasks); 0: unbounded
	live      event.LiveSink // the local run's live stream; nil: none
}

func (rc runCase) engine(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := rc.env[k]; return v, ok }
	eng, err := engine.New(engine.Options{RunDir: dir, Env: lookup, Verbs: rc.verbs, ExecEnv: os.Environ(),
		Limits: engine.Limits{MaxParallelTasks: rc.parallel}})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func (rc runCase) runDir(t *testing.T) string {
	if rc.dir != "" {
		abs, err := filepath.Abs(rc.dir)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	return t.TempDir()
}

func compileSrc(t *testing.T, name, src string) *workflow.Workflow {
	t.Helper()
	a := spec.CheckSource(name, []byte(src), spec.CheckOptions{})
	if !(spec.FileResult{Findings: a.Findings}).Valid() {
		t.Fatalf("%s: findings %+v", name, a.Findings)
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// local runs the case as `nika run` does and returns its canonical lines and result.
func (rc runCase) local(t *testing.T, ctx context.Context) ([]string, planner.Result) {
	t.Helper()
	dir := rc.runDir(t)
	eng := rc.engine(t, dir)
	p, perr := eng.Prepare(compileSrc(t, rc.name, rc.src), rc.vars)
	if perr != nil {
		t.Fatal(perr)
	}
	mem := event.NewMemory()
	res := eng.Execute(ctx, p, engine.RunOptions{Canonical: mem, Seed: rc.seed, Live: rc.live})
	var lines []string
	for _, l := range mem.Lines() {
		lines = append(lines, string(l))
	}
	return lines, res
}

// input prepares the case's Temporal input through engine (vars, secrets, env), as a
// submitter does.
func (rc runCase) input(t *testing.T, eng *engine.Engine, dir string) Input {
	t.Helper()
	p, perr := eng.Prepare(compileSrc(t, rc.name, rc.src), rc.vars)
	if perr != nil {
		t.Fatal(perr)
	}
	hb := rc.heartbeat
	if hb == 0 {
		hb = testHeartbeatTimeout
	}
	return Input{Name: rc.name, Source: rc.src, RunID: "r-test", RunDir: dir, HeartbeatTimeout: hb,
		Seed: rc.seed, MaxParallelTasks: rc.parallel,
		Vars: Value{p.Inputs.Vars}, Env: Value{p.Inputs.Env}, Secrets: Value{p.Inputs.Secrets}}
}

// onTemporal runs the case on a test environment; setup may register callbacks on it first.
func (rc runCase) onTemporal(t *testing.T, setup func(*testsuite.TestWorkflowEnvironment)) (Output, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	dir := rc.runDir(t)
	eng := rc.engine(t, dir)
	in := rc.input(t, eng, dir)
	verbs, release := eng.ActivityVerbs()
	defer release()
	env := newEnv()
	Register(env, &Activities{Verbs: verbs, Heartbeat: testHeartbeat})
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(WorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out, env
}

// deterministic is the lines as the determinism contract compares them (D17).
func deterministic(t *testing.T, lines []string) []string {
	t.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		b, err := event.Deterministic([]byte(l))
		if err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		out[i] = string(b)
	}
	return out
}

func sameLines(t *testing.T, want, got []string) {
	t.Helper()
	w, g := deterministic(t, want), deterministic(t, got)
	if strings.Join(w, "\n") == strings.Join(g, "\n") {
		return
	}
	t.Errorf("the Temporal run's canonical trace differs from the local run's:\nlocal:\n%s\ntemporal:\n%s", strings.Join(w, "\n"), strings.Join(g, "\n"))
}

// newEnv is a test environment that logs only warnings and errors.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := suite.NewTestWorkflowEnvironment()
	// Temporal's deadlock detector fails a workflow task that runs over 1 s of wall time: a guard by
	// the clock, which a -race build on a loaded 2-core CI machine passes for a wide step (TestWide
	// ForEach starts 1,000 jobs in one). The tests prove behaviour, not that speed.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return env
}

// testHeartbeat is how often the tests' jobs heartbeat: the test environment cancels a running
// activity's context through its heartbeat, so a cancelled job ends soon after the workflow
// let go of it (goleak checks that it does).
const testHeartbeat = 5 * time.Millisecond

// testHeartbeatTimeout is the tests' Input.HeartbeatTimeout: the SDK sends heartbeats at most
// every 0.8 of it, and a cancelled job learns of its cancellation from the next one sent.
const testHeartbeatTimeout = 500 * time.Millisecond
