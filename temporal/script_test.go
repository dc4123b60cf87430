package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/internal/scripts"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// scriptCase is one case of the planner's script tests (a `workflow` block of
// planner/testdata/*.txt and the commands after it) as a whole run: the workflow, and a verb
// that gives each job the outcome the script's `done` gave it. The script drives the core by
// hand; a run has a driver, which starts the jobs and fires the timers itself, so the script's
// order is kept where a driver's decisions depend on it:
//
//   - a job the script never completes, or completes only after the core cancelled it (a
//     `cancel JOB` line: a timeout, a fail-fast, the user's cancellation), blocks until its
//     context ends, so it cannot end before its cancellation;
//   - a job returns its outcome only after every job the script completed before it ended
//     (its report reached the driver): the script started them all before, so a run does too;
//   - the script's `cancel` is the user's cancellation, made once every job the script had
//     running then has started and every job it had completed before has ended. A job ends
//     when the driver takes its report: the local driver tells the live stream, in its loop,
//     just before it hands the report to the core; Temporal's test environment calls its
//     activity-completed listener on its loop as it delivers the result. A cancellation made
//     there is seen after that report, as the script's (retry.txt: during the back-off that
//     report armed; outputs.txt: while the outputs evaluate). A gate job the script had in flight has ended in a run (the
//     drivers run a gate's user code at once), so the cancellation waits for its task's
//     attempt to start instead (cancel.txt, whose gate passes): else whether that attempt
//     started first would be a race. `start cancelled` is a run cancelled before it began;
//   - `fire`, `advance`, `prepare` and `view` are the driver's own business (its timers, its
//     clock, its preparation of an attempt, a verb's nika:inspect): a run does them itself.
type scriptCase struct {
	name     string // FILE:LINE of the workflow block
	src      string
	seed     uint64
	parallel int
	vars     map[string]string
	// outcomes are the jobs' scripted outcomes by job name (task#attempt, task[i]#attempt,
	// task/finallyN); order is each one's place among the script's `done` commands.
	outcomes map[string]scriptOutcome
	order    map[string]int
	// finally names an on_finally step's job by its task and its evaluated fields, as the
	// script's `verb` lines print them: a verb's job does not carry the step's index.
	finally        map[string]string
	cancelled      bool     // the script has the user's cancellation
	startCancelled bool     // before the run began
	cancelWait     []string // the jobs running when it came
	cancelAfter    []string // the jobs completed before it
	state          string   // the script's `result` state; "": none
}

type scriptOutcome struct {
	output any
	code   string // an error code: the verb fails
	emit   string
	usage  []workflow.Usage
}

// isVerbJob: recover, gate and outputs jobs are user code, which the drivers run themselves.
func isVerbJob(name string) bool {
	return name != "outputs" && !strings.HasSuffix(name, "/recover") && !strings.HasSuffix(name, "/gate")
}

// readScriptCases reads the cases of one script file.
func readScriptCases(t *testing.T, path string) []*scriptCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _, err := scripts.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var cases []*scriptCase
	var c *scriptCase
	var running, cancelled map[string]bool
	var completed []string
	for _, b := range blocks {
		cmd, pos, args := scripts.Command(b.Cmd)
		if cmd == "workflow" {
			c = &scriptCase{name: fmt.Sprintf("%s:%d", filepath.Base(path), b.Line),
				src:      "nika: v1\nworkflow: t\n" + strings.Join(b.Input, "\n") + "\n",
				outcomes: map[string]scriptOutcome{}, order: map[string]int{}, finally: map[string]string{}}
			if s, ok := args["seed"]; ok {
				c.seed, _ = strconv.ParseUint(s, 10, 64)
			}
			if p, ok := args["parallel"]; ok {
				c.parallel, _ = strconv.Atoi(p)
			}
			if v, ok := args["vars"]; ok {
				var vars map[string]any
				if err := json.Unmarshal([]byte(v), &vars); err != nil {
					t.Fatalf("%s:%d: vars: %v", path, b.Line, err)
				}
				c.vars = map[string]string{}
				for k, x := range vars {
					if s, ok := x.(string); ok {
						c.vars[k] = s
					} else {
						j, _ := json.Marshal(x)
						c.vars[k] = string(j)
					}
				}
			}
			cases = append(cases, c)
			running, cancelled, completed = map[string]bool{}, map[string]bool{}, nil
			continue
		}
		if c == nil {
			t.Fatalf("%s:%d: %s before any workflow", path, b.Line, b.Cmd)
		}
		switch cmd {
		case "start":
			c.startCancelled = len(pos) > 0 && pos[0] == "cancelled"
		case "cancel":
			if c.cancelled {
				t.Fatalf("%s:%d: a second cancel", path, b.Line)
			}
			c.cancelled = true
			for n := range running {
				if isVerbJob(n) {
					c.cancelWait = append(c.cancelWait, n)
				} else if task, ok := strings.CutSuffix(n, "/gate"); ok {
					c.cancelWait = append(c.cancelWait, task+"#1")
				}
			}
			c.cancelAfter = append([]string(nil), completed...)
		case "done":
			name := pos[0]
			delete(running, name)
			ran := false // the script's verb ran: not a step whose when is false or fields fail
			for _, l := range b.Expected {
				ran = ran || strings.HasPrefix(l, "verb "+name+" ")
			}
			if !ran || cancelled[name] {
				break // user code, no verb, or a stale report of a cancelled job: it blocks
			}
			o := scriptOutcome{output: "ok", code: args["error"], emit: args["emit"]}
			if s, ok := args["output"]; ok {
				if err := json.Unmarshal([]byte(s), &o.output); err != nil {
					t.Fatalf("%s:%d: output: %v", path, b.Line, err)
				}
			}
			if u, ok := args["usage"]; ok {
				p := strings.Split(u, ":")
				in, _ := strconv.Atoi(p[1])
				out, _ := strconv.Atoi(p[2])
				o.usage = []workflow.Usage{{Model: p[0], InputTokens: in, OutputTokens: out, Reported: true}}
			}
			c.outcomes[name] = o
			c.order[name] = len(c.order)
			completed = append(completed, name)
		case "result":
			if len(b.Expected) > 0 {
				c.state = strings.TrimPrefix(b.Expected[0], "state ")
			}
		}
		for _, l := range b.Expected {
			switch f := strings.SplitN(l, " ", 4); f[0] {
			case "start":
				running[f[1]] = true
			case "cancel":
				cancelled[f[1]] = true
				delete(running, f[1])
			case "verb":
				if len(f) == 4 && strings.Contains(f[1], "/finally") {
					task, _, _ := strings.Cut(f[1], "/")
					c.finally[task+"\x00"+f[3]] = f[1]
				}
			}
		}
	}
	return cases
}

// scriptVerb plays the script's verbs in one run.
type scriptVerb struct {
	c      *scriptCase
	cancel func() // the user's cancellation of this run
	// onReturn marks an on_finally step ended when its verb returns (local: the live stream
	// does not name the step). Every other job is marked ended (mark) as its report reaches the
	// driver, by the run: what its end lets happen happens after.
	onReturn bool
	mu       sync.Mutex
	started  map[string]bool
	ended    map[string]bool
	changed  chan struct{} // closed and replaced when started or ended changes
	once     sync.Once
}

func newScriptVerb(c *scriptCase) *scriptVerb {
	return &scriptVerb{c: c, started: map[string]bool{}, ended: map[string]bool{}, changed: make(chan struct{})}
}

func (v *scriptVerb) verbs() map[string]planner.Verb {
	return map[string]planner.Verb{"exec": v, "infer": v, "invoke": v, "agent": v}
}

func (v *scriptVerb) jobName(job workflow.Job) string {
	if job.Attempt == 0 { // an on_finally step
		f, _ := canon.Marshal(job.Fields)
		if n, ok := v.c.finally[job.Task.ID+"\x00"+string(f)]; ok {
			return n
		}
		return job.Task.ID + "/finally?"
	}
	if job.Iteration >= 0 {
		return fmt.Sprintf("%s[%d]#%d", job.Task.ID, job.Iteration, job.Attempt)
	}
	return fmt.Sprintf("%s#%d", job.Task.ID, job.Attempt)
}

// mark records a change and makes the user's cancellation once its moment came.
func (v *scriptVerb) mark(m map[string]bool, name string) {
	v.mu.Lock()
	m[name] = true
	close(v.changed)
	v.changed = make(chan struct{})
	due := v.c.cancelled && !v.c.startCancelled
	for _, n := range v.c.cancelWait {
		due = due && v.started[n]
	}
	for _, n := range v.c.cancelAfter {
		due = due && v.ended[n]
	}
	v.mu.Unlock()
	if due {
		v.once.Do(v.cancel)
	}
}

func (v *scriptVerb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	name := v.jobName(job)
	v.mark(v.started, name)
	if v.onReturn && job.Attempt == 0 {
		defer v.mark(v.ended, name)
	}
	o, ok := v.c.outcomes[name]
	if !ok {
		<-ctx.Done()
		return workflow.Failed(spec.NewError(spec.CodeCancel, "cancelled", nil))
	}
	for { // the jobs the script completed before this one, that started, return first
		v.mu.Lock()
		wait, changed := false, v.changed
		for n, k := range v.c.order {
			wait = wait || (k < v.c.order[name] && !v.ended[n])
		}
		v.mu.Unlock()
		if !wait {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return workflow.Failed(spec.NewError(spec.CodeCancel, "cancelled", nil))
		}
	}
	if o.emit != "" {
		job.Emit("log", map[string]any{"level": "info", "message": o.emit})
	}
	if o.code != "" {
		return workflow.Outcome{Err: spec.NewError(o.code, "scripted failure", nil), Usage: o.usage}
	}
	return workflow.Outcome{Output: o.output, Usage: o.usage}
}

// TestPlannerScriptsEqualLocal: every case of the planner's script tests (planner/testdata/*.txt)
// has the same canonical trace on Temporal as in a local run (issue 16 item 3).
func TestPlannerScriptsEqualLocal(t *testing.T) {
	files, err := filepath.Glob("../planner/testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	n := 0
	for _, f := range files {
		for _, c := range readScriptCases(t, f) {
			n++
			t.Run(c.name, func(t *testing.T) { runScriptCase(t, c) })
		}
	}
	if n < 20 {
		t.Errorf("%d script cases; the planner's scripts have 20", n)
	}
}

func runScriptCase(t *testing.T, c *scriptCase) {
	lv := newScriptVerb(c)
	lv.onReturn = true
	// The local driver takes a job's report, tells the live stream (synchronously, in its loop)
	// and then hands the report to the core; a cancellation made here is seen after that.
	live := event.LiveFunc(func(l event.Live) {
		if l.Kind != event.LiveTaskFinished || l.Attempt == 0 {
			return
		}
		name := fmt.Sprintf("%s#%d", l.Task, l.Attempt)
		if l.Iteration >= 0 {
			name = fmt.Sprintf("%s[%d]#%d", l.Task, l.Iteration, l.Attempt)
		}
		lv.mark(lv.ended, name)
	})
	rc := runCase{name: c.name, src: c.src, vars: c.vars, seed: c.seed, parallel: c.parallel, verbs: lv.verbs, live: live}
	// A case that blocks for good fails here rather than hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lv.cancel = cancel
	if c.startCancelled {
		cancel()
	}
	want, res := rc.local(t, ctx)
	if kinds(want, "workflow_started") != 1 {
		t.Fatalf("the local run did not start:\n%s", strings.Join(want, "\n"))
	}

	tv := newScriptVerb(c)
	rc.verbs = tv.verbs
	out, _ := rc.onTemporal(t, func(env *testsuite.TestWorkflowEnvironment) {
		tv.cancel = env.CancelWorkflow
		// A job's report reaches the workflow as its activity completes, on the environment's
		// loop, which calls this listener next: what that job's end lets happen happens after.
		var mu sync.Mutex
		names := map[string]string{}
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
			var in JobInput
			if err := args.Get(&in); err != nil {
				t.Errorf("a job's input: %v", err)
				return
			}
			name := fmt.Sprintf("%s#%d", in.Task, in.Attempt)
			switch {
			case in.Finally >= 0:
				name = fmt.Sprintf("%s/finally%d", in.Task, in.Finally)
			case in.Iteration >= 0:
				name = fmt.Sprintf("%s[%d]#%d", in.Task, in.Iteration, in.Attempt)
			}
			mu.Lock()
			names[info.ActivityID] = name
			mu.Unlock()
		})
		env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
			mu.Lock()
			name := names[info.ActivityID]
			mu.Unlock()
			tv.mark(tv.ended, name)
		})
		if c.startCancelled {
			env.RegisterDelayedCallback(env.CancelWorkflow, 0)
		}
	})
	sameLines(t, want, out.Events)
	if out.State != string(res.State) {
		t.Errorf("state %s, local %s", out.State, res.State)
	}
	if c.state != "" && string(res.State) != c.state {
		t.Errorf("the run's state is %s, the script's result %s", res.State, c.state)
	}
}
