package planner

// Script tests of the core (testdata/*.txt), in the style of etcd raft's
// data-driven tests: each file compiles a small workflow, then feeds the
// core one input per command (job outcomes, timer firings, the user's
// cancellation, time) and prints every Step it returns. The test plays the
// driver by hand: no goroutine, no clock, no timer. A job's user code (its
// Eval: with, fields, bindings, a gate, a recover, the outputs) is run for
// real, synchronously; only the verb's outcome is scripted. A change in any
// decision of the core changes a printed step and fails the test;
// `go test ./planner -run TestScripts -rewrite` writes the new output into
// the files instead, for review in the diff.
//
// A file (read by internal/scripts, which temporal's tests share) is a sequence of blocks,
// separated by blank lines:
//
//	command arg key=value ...
//	input lines (the workflow's YAML, for `workflow`)
//	----
//	expected output
//
// Lines starting with # between blocks are comments. Commands:
//
//	workflow [seed=N] [parallel=N] [vars=JSON]   compile the input (after "nika: v1\nworkflow: t\n")
//	start [cancelled]                           Core.Start (StartCancelled)
//	done JOB [output=JSON] [error=CODE] [emit=MSG] [usage=MODEL:IN:OUT]
//	                                            run JOB's user code with that verb outcome
//	                                            (default output "ok"), then Core.Finished
//	prepare JOB                                 evaluate an attempt's with, then Core.Prepared
//	fire TASK[ITER] backoff|deadline            the earliest armed timer of that kind: time
//	                                            moves to when it is due, then Core.TimerFired
//	advance DURATION                            the clock moves on
//	cancel                                      Core.Cancel (the user's cancellation)
//	result                                      Core.Result
//	view cost|records|dag_info                  Core.View (nika:inspect)
//
// Jobs are named task#attempt, task[iteration]#attempt, task#attempt/recover,
// task/finallyN, task/gate and outputs.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/internal/scripts"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the script tests (testdata/*.txt)")

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no script in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScriptFile(t, f) })
	}
}

func parseScript(t *testing.T, path string) ([]scripts.Block, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailer, err := scripts.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return blocks, trailer
}

func runScriptFile(t *testing.T, path string) {
	blocks, trailer := parseScript(t, path)
	h := &scriptHarness{t: t, pending: map[string]Work{}}
	var out strings.Builder
	failed := false
	for _, b := range blocks {
		got := h.run(b)
		for _, p := range b.Pre {
			out.WriteString(p + "\n")
		}
		out.WriteString(b.Cmd + "\n")
		for _, in := range b.Input {
			out.WriteString(in + "\n")
		}
		out.WriteString("----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(b.Expected, "\n") {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, b.Line, b.Cmd, strings.Join(got, "\n"), strings.Join(b.Expected, "\n"))
			failed = true
		}
	}
	for _, p := range trailer {
		out.WriteString(p + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if failed {
		t.Log("run with -rewrite to accept the new output")
	}
}

// scriptHarness plays the driver of one script.
type scriptHarness struct {
	t       *testing.T
	w       *workflow.Workflow
	core    *Core
	t0, now time.Time
	pending map[string]Work // started, not yet reported
	armed   []armedTimer
}

type armedTimer struct {
	Timer
	due time.Time
}

func (h *scriptHarness) run(b scripts.Block) []string {
	h.t.Helper()
	cmd, pos, args := scripts.Command(b.Cmd)
	fail := func(format string, a ...any) []string {
		h.t.Fatalf("line %d: %s: %s", b.Line, b.Cmd, fmt.Sprintf(format, a...))
		return nil
	}
	switch cmd {
	case "workflow":
		src := "nika: v1\nworkflow: t\n" + strings.Join(b.Input, "\n") + "\n"
		h.w = compile(h.t, src)
		cfg := Config{RunID: "r"}
		if s, ok := args["seed"]; ok {
			n, _ := strconv.ParseUint(s, 10, 64)
			cfg.Seed = n
		}
		if p, ok := args["parallel"]; ok {
			cfg.MaxParallelTasks, _ = strconv.Atoi(p)
		}
		in := Inputs{Vars: map[string]any{}, Env: map[string]any{}, Secrets: map[string]any{}}
		if v, ok := args["vars"]; ok {
			if err := json.Unmarshal([]byte(v), &in.Vars); err != nil {
				return fail("vars: %v", err)
			}
		}
		h.core = NewCore(h.w, in, cfg)
		h.t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		h.now = h.t0
		return []string{"ok"}
	case "start":
		if len(pos) > 0 && pos[0] == "cancelled" {
			return h.step(h.core.StartCancelled(h.now))
		}
		return h.step(h.core.Start(h.now))
	case "cancel":
		return h.step(h.core.Cancel(h.now))
	case "advance":
		d, err := time.ParseDuration(pos[0])
		if err != nil {
			return fail("%v", err)
		}
		h.now = h.now.Add(d)
		return []string{"now +" + h.now.Sub(h.t0).String()}
	case "fire":
		return h.fire(pos, fail)
	case "prepare":
		wk, ok := h.pending[pos[0]]
		if !ok || wk.ID.Kind != JobAttempt {
			return fail("no pending attempt %s", pos[0])
		}
		job := wk.Job
		with, err := wk.Eval.evalFields(context.Background(), &job)
		if err != nil {
			return fail("its with does not evaluate: %v", err)
		}
		return h.step(h.core.Prepared(wk.ID, with, h.now))
	case "done":
		return h.done(pos, args, fail)
	case "result":
		return h.result()
	case "view":
		v, err := canon.Marshal(h.core.View(pos[0]))
		if err != nil {
			return fail("%v", err)
		}
		return []string{string(v)}
	}
	return fail("unknown command")
}

// done runs a job's user code with the scripted verb outcome and reports it.
func (h *scriptHarness) done(pos []string, args map[string]string, fail func(string, ...any) []string) []string {
	if len(pos) != 1 {
		return fail("done takes one job")
	}
	name := pos[0]
	wk, ok := h.pending[name]
	if !ok {
		return fail("no pending job %s (pending: %s)", name, strings.Join(h.pendingNames(), " "))
	}
	delete(h.pending, name)
	var out []string
	var usage []workflow.Usage // usage=MODEL:IN:OUT, one provider request
	if u, ok := args["usage"]; ok {
		p := strings.Split(u, ":")
		if len(p) != 3 {
			return fail("usage=MODEL:IN:OUT")
		}
		in, _ := strconv.Atoi(p[1])
		o, _ := strconv.Atoi(p[2])
		usage = []workflow.Usage{{Model: p[0], InputTokens: in, OutputTokens: o, Reported: true}}
	}
	verb := func(job *workflow.Job) workflow.Outcome {
		f, _ := canon.Marshal(job.Fields)
		out = append(out, fmt.Sprintf("verb %s %s %s", name, job.Verb, f))
		if code, ok := args["error"]; ok {
			return workflow.Outcome{Err: spec.NewError(code, "scripted failure", nil), Usage: usage}
		}
		var v any = "ok"
		if o, ok := args["output"]; ok {
			if err := json.Unmarshal([]byte(o), &v); err != nil {
				h.t.Fatalf("%s: output: %v", name, err)
			}
		}
		return workflow.Outcome{Output: v, Usage: usage}
	}
	ctx := context.Background()
	var rep Report
	switch wk.ID.Kind {
	case JobAttempt:
		var with map[string]any
		job := wk.Job
		wk.Eval.runAttempt(ctx, &job, false, func(w map[string]any) { with = w }, noRecall, verb, &rep)
		if wk.Eval.KeepWith && with != nil {
			if s := h.step(h.core.Prepared(wk.ID, with, h.now)); len(s) > 1 || s[0] != "(nothing)" {
				out = append(out, s...)
			}
		}
	case JobFinally:
		job := wk.Job
		rep = wk.Eval.runStep(ctx, &job, verb)
	case JobRecover:
		rep = wk.Eval.runRecover(ctx)
	case JobGate:
		rep = wk.Eval.runGate(ctx)
	case JobOutputs:
		rep = wk.Eval.runOutputs()
	}
	if msg, ok := args["emit"]; ok {
		rep.Emitted = append(rep.Emitted, Emitted{Kind: "log", Fields: map[string]any{"level": "info", "message": msg}})
	}
	if rep.Outcome.Err != nil && wk.ID.Kind != JobAttempt && wk.ID.Kind != JobFinally {
		out = append(out, fmt.Sprintf("error %s %s", name, errLine(rep.Outcome.Err)))
	}
	return append(out, h.step(h.core.Finished(wk.ID, rep, h.now))...)
}

func (h *scriptHarness) fire(pos []string, fail func(string, ...any) []string) []string {
	if len(pos) != 2 {
		return fail("fire takes TASK[ITER] and a kind")
	}
	best := -1
	for i, a := range h.armed {
		if timerName(a.Timer) == pos[0] && kindName(a.Kind) == pos[1] && (best < 0 || a.due.Before(h.armed[best].due)) {
			best = i
		}
	}
	if best < 0 {
		return fail("no armed %s timer of %s", pos[1], pos[0])
	}
	a := h.armed[best]
	h.armed = append(h.armed[:best], h.armed[best+1:]...)
	if a.due.After(h.now) {
		h.now = a.due
	}
	return append([]string{"now +" + h.now.Sub(h.t0).String()}, h.step(h.core.TimerFired(a.Timer, h.now))...)
}

// step prints a Step in the order a driver carries it out (Step's doc).
func (h *scriptHarness) step(s Step) []string {
	var out []string
	for _, e := range s.Events {
		who := ""
		if e.Task != "" {
			who = " " + e.Task
			if e.Iteration >= 0 {
				who += fmt.Sprintf("[%d]", e.Iteration)
			}
			if e.Attempt > 0 {
				who += fmt.Sprintf("#%d", e.Attempt)
			}
		}
		f, err := canon.Marshal(e.Fields)
		if err != nil {
			f = []byte(fmt.Sprint(e.Fields))
		}
		out = append(out, fmt.Sprintf("event %d %s%s %s", e.Seq, e.Kind, who, f))
	}
	for _, id := range s.Cancel {
		out = append(out, "cancel "+jobName(id))
	}
	for _, wk := range s.Start {
		n := jobName(wk.ID)
		h.pending[n] = wk
		line := "start " + n
		if wk.Timeout > 0 {
			line += " timeout=" + wk.Timeout.String()
		}
		if wk.Eval.KeepWith {
			line += " keep-with"
		}
		out = append(out, line)
	}
	for _, tm := range s.Timers {
		h.armed = append(h.armed, armedTimer{Timer: tm, due: h.now.Add(tm.Delay)})
		out = append(out, fmt.Sprintf("timer %s %s seq=%d delay=%s", timerName(tm), kindName(tm.Kind), tm.Seq, tm.Delay))
	}
	for _, r := range s.Retrying {
		it := ""
		if r.Iteration >= 0 {
			it = fmt.Sprintf("[%d]", r.Iteration)
		}
		out = append(out, fmt.Sprintf("retrying %s%s#%d %s %s", r.Task, it, r.Attempt, r.Verb, r.Code))
	}
	if s.Done {
		out = append(out, "done")
	}
	if len(out) == 0 {
		out = []string{"(nothing)"}
	}
	return out
}

func (h *scriptHarness) result() []string {
	r := h.core.Result()
	out := []string{"state " + string(r.State)}
	for _, tr := range r.Tasks {
		o, _ := canon.Marshal(tr.Output)
		line := fmt.Sprintf("task %s %s output=%s", tr.ID, tr.Status, o)
		if tr.Error != nil {
			line += " error=" + errLine(tr.Error)
		}
		out = append(out, line)
	}
	if len(r.Outputs) > 0 {
		o, _ := canon.Marshal(r.Outputs)
		out = append(out, "outputs "+string(o))
	}
	if r.Error != nil {
		out = append(out, "error "+errLine(r.Error))
	}
	if p := h.pendingNames(); len(p) > 0 {
		out = append(out, "still running "+strings.Join(p, " "))
	}
	return out
}

func (h *scriptHarness) pendingNames() []string {
	var names []string
	for n := range h.pending {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// errLine is an error as the scripts print it: code, attempt, details, message.
func errLine(e *spec.Error) string {
	d, _ := canon.Marshal(e.Details)
	s := e.Code
	if s == "" {
		s = e.Category
	}
	if e.Attempt > 0 {
		s += fmt.Sprintf(" attempt=%d", e.Attempt)
	}
	if e.Transient {
		s += " transient"
	}
	if len(e.Details) > 0 {
		s += " details=" + string(d)
	}
	return s + " " + strconv.Quote(e.Message)
}

func jobName(id JobID) string {
	it := ""
	if id.Iteration >= 0 {
		it = fmt.Sprintf("[%d]", id.Iteration)
	}
	switch id.Kind {
	case JobRecover:
		return fmt.Sprintf("%s%s#%d/recover", id.Task, it, id.Attempt)
	case JobFinally:
		return fmt.Sprintf("%s/finally%d", id.Task, id.Finally)
	case JobGate:
		return id.Task + "/gate"
	case JobOutputs:
		return "outputs"
	}
	return fmt.Sprintf("%s%s#%d", id.Task, it, id.Attempt)
}

func timerName(t Timer) string {
	if t.Iteration >= 0 {
		return fmt.Sprintf("%s[%d]", t.Task, t.Iteration)
	}
	return t.Task
}

func kindName(k TimerKind) string {
	if k == TimerBackoff {
		return "backoff"
	}
	return "deadline"
}

// noRecall is a run without a journal: nothing is restored.
func noRecall(*workflow.Job, map[string]any, *Report) bool { return false }
