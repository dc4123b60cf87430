package main

// `nika run --resume RUN [--answer TASK=VALUE]...` and the journal every run keeps (issue 15).
// Decisions where the issue is silent:
//   - A resumed run takes the vars, seed and --model of the process before it (the journal's
//     last run or resume record); a --var, --seed or --model given again wins, and a task whose
//     inputs change because of it runs again.
//   - A resumed run keeps its run id and appends to its journal; it writes a trace of its own
//     (a new file under .nika/traces, the same run id), in which restored tasks say so
//     (task_restored).
//   - A paused run (exit 4) prints nothing on stdout (LANGUAGE.md §10: stdout is empty on any
//     exit code but 0 and 1); stderr names each question and the command that answers it. The
//     --report file is written, with workflow_state "paused" (and each waiting task "paused",
//     each one not settled "pending").
//   - A journal that cannot be found, read or verified (a chain mismatch: it was changed) is
//     exit 3; --answer without --resume, or for a task that does not wait, is exit 2.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/planner"
)

const exitPaused = 4

// resumeFlags are the flags of a resumed run.
type resumeFlags struct {
	resume  string   // --resume RUN: a run id, a trace or journal path, or `last`
	answers varFlags // --answer TASK=VALUE
	seedSet bool
}

// openResumed finds and reads the journal --resume names and fills in the inputs it ran with
// that the command line does not give again; ok false means exit with code.
func (f *runFlags) openResumed(runDir, file string, stderr io.Writer) (l *journal.Log, code int, ok bool) {
	if f.resume == "" {
		if len(f.answers) > 0 {
			fmt.Fprintln(stderr, "nika run: --answer answers a paused run: give --resume RUN too")
			return nil, exitUsage, false
		}
		return nil, 0, true
	}
	path, err := journal.Find(runDir, f.resume, file)
	if err == nil {
		l, err = journal.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nika run: cannot resume %s: %v\n", f.resume, err)
		return nil, exitEnv, false
	}
	in := l.Inputs()
	for k, v := range in.Vars {
		if _, given := f.vars[k]; !given {
			f.vars[k] = v
		}
	}
	if !f.seedSet {
		f.seed = in.Seed
	}
	if f.model == "" {
		f.model = in.Model
	}
	return l, 0, true
}

// openJournal starts the run's journal, or goes on with the resumed one.
func (f *runFlags) openJournal(eng *engine.Engine, p *engine.Prepared, file string, resumed *journal.Log, answers map[string]any) (*journal.Run, error) {
	abs, _ := filepath.Abs(file)
	src, _ := os.ReadFile(file) // it was just read to be checked; a failure now only leaves the hash of nothing
	h := journal.Header{File: abs, Source: src, Vars: map[string]string(f.vars), Seed: f.seed, Model: f.model, Version: version}
	if resumed != nil {
		return eng.ResumeJournal(p, resumed, h, answers)
	}
	return eng.CreateJournal("", p, h)
}

// printPaused tells the person what a paused run waits for and how to answer it.
func printPaused(res planner.Result, runID, file string, mask func(string) string, stderr io.Writer) {
	for _, q := range res.Paused {
		name := q.Task
		if q.Iteration >= 0 {
			name = fmt.Sprintf("%s[%d]", q.Task, q.Iteration)
		}
		what := q.Question.Mode
		if len(q.Question.Choices) > 0 {
			what += fmt.Sprintf(" %q", q.Question.Choices)
		}
		fmt.Fprintf(stderr, "nika run: paused: %s asks %q (%s)\n", name, mask(q.Question.Message), what)
		fmt.Fprintf(stderr, "  answer it: nika run %s --resume %s --answer %s=VALUE\n", file, runID, name)
	}
}
