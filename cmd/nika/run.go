package main

// `nika run`. Decisions where the documents are silent (issue 12):
//   - Nothing the run writes is lost silently. When the trace, the report or
//     the outputs on stdout cannot be written — at write, fsync or close — the
//     run exits 3 (an environment error) and stderr says which file and why.
//     The outputs are still printed when only the trace or the report failed
//     (LANGUAGE.md §10 keeps stdout empty on other exit codes; here the outputs
//     are the run's own and still worth having). Exit 3 wins over exit 1 (the
//     report saying why the workflow failed may be the file that is missing);
//     an interrupted run still exits 130 (D23) and prints the write failures
//     on stderr.
//   - A trace whose write fails (a full disk) is cut back to its last whole
//     line (event.File): it stays valid NDJSON, a prefix of the stream, and
//     stderr says how many events it holds.
//   - The report is written atomically. Before the run, a temporary file
//     ".<name>.tmp-<random>" is created beside the report's path (symbolic
//     links followed), so a missing directory or a permission error is still
//     exit 3 before anything runs (D22); when the run ends it is written,
//     fsynced, closed and renamed onto the path. The previous report at that
//     path stays as it was until then, and stays as it was if the write fails
//     (the temporary file is removed). A run killed with SIGKILL cannot clean
//     up: it leaves the previous report intact and its ".<name>.tmp-…" file
//     beside it, which nothing else removes (another run may be using one);
//     any other end, an interrupt included, leaves no temporary file. A path
//     that exists and is not a regular file (/dev/stdout, a pipe) is opened
//     and written directly, as before.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

const (
	exitFailure   = 1
	exitInterrupt = 130
)

// varFlags collects repeated --var k=v; the last one wins.
type varFlags map[string]string

func (v varFlags) String() string { return "" }
func (v varFlags) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[k] = val
	return nil
}

// runEnv is what `nika run` needs from the process, injectable for tests.
type runEnv struct {
	lookup  func(string) (string, bool)
	signals <-chan os.Signal // nil: no signal handling
	now     func() time.Time
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	// SIGHUP too: MCP servers and exec children live in their own process groups, so a closed
	// terminal never reaches them; the run must stop them itself, as on an interrupt.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A closed stderr must not kill the run before it has stopped its
	// processes and written its report: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	return runWith(args, stdout, stderr, runEnv{lookup: os.LookupEnv, signals: sigs, now: time.Now})
}

// runFlags are the flags of `nika run`.
type runFlags struct {
	vars                   varFlags
	model                  string
	reportPath, tracePath  string
	noTrace                bool
	seed                   uint64
	limits                 engine.Limits
	noProgress, quiet, yes bool
	metrics                *metricsFlags
	resumeFlags
}

// parseRunFlags parses and validates the arguments of `nika run`; ok false means exit with code.
func parseRunFlags(args []string, stdout, stderr io.Writer) (f runFlags, file string, code int, ok bool) {
	fs := newFlagSet("run")
	f.vars = varFlags{}
	fs.Var(f.vars, "var", "set a var: `name=value` (repeatable; the last one wins)")
	fs.StringVar(&f.model, "model", "", "default model `provider/name` for infer and agent tasks without one")
	fs.StringVar(&f.reportPath, "report", "", "write the run report (JSON) to `FILE`")
	fs.StringVar(&f.tracePath, "trace", "", "write the canonical event stream (NDJSON) to `FILE` (default .nika/traces/<time>-<run-id>.ndjson)")
	fs.BoolVar(&f.noTrace, "no-trace", false, "write no trace file")
	fs.Uint64Var(&f.seed, "seed", 0, "retry jitter seed")
	fs.IntVar(&f.limits.MaxParallelTasks, "max-parallel-tasks", 0, "run at most `N` tasks at once (0: unbounded)")
	fs.IntVar(&f.limits.MaxParallelTools, "max-parallel-tools", 0, "run at most `N` tool calls of one agent turn at once (1..1024; default 8)")
	fs.IntVar(&f.limits.MaxProcesses, "max-processes", 0, "run at most `N` exec processes at once; more wait (default $NIKA_MAX_PROCESSES, else derived from the open-file limit and the CPUs)")
	fs.Int64Var(&f.limits.MaxExecOutputBytes, "max-exec-output", 0, "fail an exec task that writes more than `BYTES` to a captured stream (default $NIKA_MAX_EXEC_OUTPUT, else 16 MiB)")
	fs.BoolVar(&f.noProgress, "no-progress", false, "print a plain line log instead of the live view")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing on stderr but errors")
	fs.BoolVar(&f.yes, "yes", false, "confirm every nika:prompt")
	fs.StringVar(&f.resume, "resume", "", "go on with an earlier run from its journal: a run id, its trace or journal file, or `last` (the newest run of FILE)")
	f.answers = varFlags{}
	fs.Var(f.answers, "answer", "answer a paused run's question: `TASK=VALUE` (or TASK[i]=VALUE in a for_each; repeatable; with --resume)")
	f.metrics = addMetricsFlags(fs)
	files, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return f, "", code, false
	}
	fs.Visit(func(fl *flag.Flag) { f.seedSet = f.seedSet || fl.Name == "seed" })
	if len(files) != 1 {
		fmt.Fprint(stderr, "nika run: give exactly one workflow file\n"+usageOf(fs))
		return f, "", exitUsage, false
	}
	if err := f.limits.Check(); err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return f, "", exitUsage, false
	}
	if code, ok := checkModelFlag("run", f.model, stderr); !ok {
		return f, "", code, false
	}
	return f, files[0], 0, true
}

func runWith(args []string, stdout, stderr io.Writer, env runEnv) int {
	f, file, code, ok := parseRunFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	if err := f.limits.FromEnv(env.lookup); err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitEnv
	}
	if f.limits.ExecDepth >= engine.MaxRunDepth {
		fmt.Fprintf(stderr, "nika run: error[%s] run recursion: nesting depth %d ≥ %d — A workflow is starting nika run inside itself; break the loop.\n", spec.CodeSecRecursion, f.limits.ExecDepth, engine.MaxRunDepth)
		return exitEnv
	}

	runDir, _ := os.Getwd()
	resumed, code, ok := f.openResumed(runDir, file, stderr)
	if !ok {
		return code
	}

	// 1. Check.
	results, analyses := checkFiles([]string{file}, f.model, stderr)
	if !results[0].Valid() {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true})
		return exitUsage
	}
	if !f.quiet {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true}) // warnings
	}
	w, err := workflow.Compile(analyses[0])
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitUsage
	}
	// 2. Inputs: vars (exit 2), then secrets and provider keys (exit 3).
	eng, err := engine.New(engine.Options{Env: env.lookup, RunDir: runDir, Version: version, Clock: env.now, Limits: f.limits,
		MCP: engine.LoadMCP(runDir, env.lookup), Terminal: f.terminal(stderr)})
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitEnv
	}
	p, perr := eng.Prepare(w, f.vars)
	if perr != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", perr)
		if perr.Stage == engine.StageVars {
			return exitUsage
		}
		return exitEnv
	}
	var answers map[string]any
	if resumed != nil {
		p.ID = resumed.Header().RunID // a resumed run goes on under its id
		if answers, err = engine.ParseAnswers(resumed, f.answers); err != nil {
			fmt.Fprintf(stderr, "nika run: %v\n", err)
			return exitUsage
		}
	}
	jr, err := f.openJournal(eng, p, file, resumed, answers)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: cannot write the journal: %v\n", err)
		return exitEnv
	}
	if resumed != nil && !f.quiet {
		fmt.Fprintf(stderr, "nika run: resuming run %s from its journal %s\n", p.ID, resumed.Path)
	}
	return f.execute(eng, p, jr, file, stdout, stderr, env)
}

// terminal is where nika:prompt asks: stdin and stderr, never stdout (the outputs JSON), when
// both are terminals; --yes also applies without a terminal. The live view, when there is one,
// takes over the line while a question is asked (execute wires it).
func (f *runFlags) terminal(stderr io.Writer) *tools.Terminal {
	tty := isTerminal(os.Stdin) && isTerminal(stderr)
	if !tty && !f.yes {
		return nil
	}
	t := &tools.Terminal{Yes: f.yes}
	if tty {
		t.In, t.Out = os.Stdin, stderr
	}
	return t
}

// execute runs a prepared run with its sinks (trace, line log or live view, metrics) and
// signal handling, then writes the trace, the report and the outputs and returns the exit code.
func (f *runFlags) execute(eng *engine.Engine, p *engine.Prepared, jr *journal.Run, file string, stdout, stderr io.Writer, env runEnv) int {
	w, mask := p.Workflow, p.Mask
	defer func() {
		if jr != nil { // an early return: the run did not start
			jr.Close()
		}
	}()
	providers := eng.Providers().Registry
	mrun, code, ok := f.metrics.start(w, providers, f.quiet, stderr)
	if !ok {
		return code
	}
	defer mrun.finish(env.signals, stderr) // push and linger once the outputs are out
	start := env.now()

	// The report and trace files are opened before anything runs (D22): the report as a temporary
	// file beside its path, moved into place when the run ends (see the decisions above).
	var report *reportFile
	var err error
	if f.reportPath != "" {
		if report, err = openReport(f.reportPath); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the report %s: %v\n", f.reportPath, err)
			return exitEnv
		}
		defer report.discard() // a no-op once it is in place
	}
	var sinks event.Fanout
	var trace *event.File
	if !f.noTrace {
		path := f.tracePath
		if path == "" {
			path = engine.DefaultTracePath(start, p.ID)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fmt.Fprintf(stderr, "nika run: cannot create the trace directory: %v\n", err)
				return exitEnv
			}
		}
		if trace, err = event.CreateFile(path); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the trace: %v\n", err)
			return exitEnv
		}
		defer func() {
			if trace != nil { // an early return: the error no longer matters
				trace.Close()
			}
		}()
		sinks = append(sinks, trace.WithMasker(event.Masker(mask)))
	}
	var live event.LiveSink
	var view *progress
	if !f.quiet {
		ls := &logSink{mask: mask, println: func(s string) { fmt.Fprintln(stderr, s) }}
		if !f.noProgress && isTerminal(stderr) {
			view = newProgress(stderr, env.now)
			ls.println, ls.settled, live = view.Println, view.Settled, maskedLive{view, mask}
		}
		sinks = append(sinks, ls)
	}
	if t := eng.Terminal(); t != nil && t.In != nil && view != nil {
		t.In, t.Out = promptIn{view, os.Stdin}, promptOut{view} // the live view gives the line to a question while it is asked
	}

	live = mrun.sink(live)
	// The limiters of the providers the run built, as provider_state on the live stream (the view
	// shows them); the sampler stops, with a final snapshot, as workflow_finished passes.
	sampler := metrics.StartSampler(metrics.LimitersOf(providers), live, metrics.SamplerOptions{Workflow: w.Name, Now: env.now})
	defer sampler.Stop()
	live = sampler.StopAtFinish(live)

	// 3. Execute.
	res, interrupted := runInterruptible(eng, p, engine.RunOptions{Seed: f.seed, Canonical: sinks, Live: live, Journal: jr}, env.signals, stderr)
	sampler.Stop() // done at workflow_finished; nothing may draw once the view is closed
	if view != nil {
		view.Close()
	}

	// 4. Trace, report, outputs, exit code. A file that could not be written is exit 3, after
	// the outputs are printed; an interrupted run still exits 130.
	lost := false // the journal, the trace, the report or the outputs could not be written
	err = jr.Close()
	jr = nil
	if err != nil {
		fmt.Fprintf(stderr, "nika run: error: %v\n", err)
		lost = true
	}
	if trace != nil {
		err := trace.Close()
		trace = nil
		if err != nil {
			fmt.Fprintf(stderr, "nika run: error: %v\n", err)
			lost = true
		}
	}
	if report != nil {
		b, warning, err := engine.EncodeReport(res, p.ID, w.Name, f.seed, mask)
		if warning != "" {
			fmt.Fprintf(stderr, "nika run: %s\n", warning)
		}
		if err == nil {
			err = report.commit(append(b, '\n'))
		}
		if err != nil {
			fmt.Fprintf(stderr, "nika run: error: cannot write the report %s: %v\n", report.path, err)
			lost = true
		}
	}
	if interrupted || res.State == planner.StatusCancelled {
		return exitInterrupt
	}
	if res.State == planner.StatusPaused {
		printPaused(res, p.ID, file, mask, stderr)
		if lost {
			return exitEnv
		}
		return exitPaused
	}
	return f.finish(res, mask, lost, stdout, stderr)
}

// finish prints the outputs and the run's error and returns the exit code of a run that was
// not interrupted; lost says that the trace or the report could not be written.
func (f *runFlags) finish(res planner.Result, mask func(string) string, lost bool, stdout, stderr io.Writer) int {
	out, err := engine.EncodeOutputs(res, mask)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: encoding the outputs: %v\n", err)
		return exitFailure
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		fmt.Fprintf(stderr, "nika run: error: cannot write the outputs to stdout: %v\n", err)
		lost = true
	}
	if res.State != planner.StatusSuccess {
		if res.Error != nil { // an error is printed even with --quiet (D20)
			fmt.Fprintf(stderr, "nika run: error[%s] %s\n", res.Error.Code, mask(res.Error.Message))
		}
		if f.quiet { // the per-task lines are off: say which tasks failed the run, and why
			for _, tr := range res.Tasks {
				if tr.Status == planner.StatusFailure && tr.Error != nil {
					fmt.Fprintf(stderr, "nika run: task %s failed: error[%s] %s\n", tr.ID, tr.Error.Code, mask(tr.Error.Message))
				}
			}
		}
		if lost {
			return exitEnv
		}
		return exitFailure
	}
	if lost {
		return exitEnv
	}
	return exitOK
}

// runInterruptible executes p, turning the first signal into the user's cancellation (started
// tasks still run on_finally) and a second one into abandoning on_finally (LANGUAGE.md §3.4:
// their processes are killed, the report is still written). It reports whether a signal came.
func runInterruptible(eng *engine.Engine, p *engine.Prepared, o engine.RunOptions, signals <-chan os.Signal, stderr io.Writer) (planner.Result, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finallyCtx, abandon := context.WithCancel(context.Background())
	defer abandon()
	o.Finally = finallyCtx
	var interrupted atomic.Bool
	stopSignals := make(chan struct{})
	signalsDone := make(chan struct{})
	if signals != nil {
		go func() {
			defer close(signalsDone)
			select {
			case <-signals:
			case <-stopSignals:
				return
			}
			interrupted.Store(true)
			fmt.Fprintln(stderr, "nika run: interrupted; finishing on_finally steps (interrupt again to abandon them)")
			cancel()
			select {
			case <-signals:
				fmt.Fprintln(stderr, "nika run: interrupted again; abandoning on_finally steps")
				abandon()
			case <-stopSignals:
			}
		}()
	} else {
		close(signalsDone)
	}
	res := eng.Execute(ctx, p, o)
	close(stopSignals) // a signal from now on does not change the outcome
	<-signalsDone
	return res, interrupted.Load()
}

// logSink prints the plain line log of settled tasks on stderr (above the
// live view on a terminal).
type logSink struct {
	println func(string)
	settled func(failed bool) // the live view's task counts; nil without it
	mask    func(string) string
}

func (s *logSink) Emit(e event.Event) {
	var line string
	switch e.Kind {
	case event.TaskCompleted:
		line = fmt.Sprintf("✓ %s", e.Task)
	case event.TaskFailed:
		line = fmt.Sprintf("✗ %s: error[%v] %v", e.Task, e.Fields["code"], e.Fields["message"])
	case event.TaskSkipped:
		line = fmt.Sprintf("- %s skipped (%v)", e.Task, e.Fields["reason"])
	case event.TaskCancelled:
		line = fmt.Sprintf("- %s cancelled (%v)", e.Task, e.Fields["reason"])
	case event.TaskRetrying:
		line = fmt.Sprintf("↻ %s: attempt %v failed with %v; retrying in %vms", e.Task, e.Fields["attempt"], e.Fields["code"], e.Fields["delay_ms"])
	case event.Log:
		line = fmt.Sprintf("[%v] %s: %v", e.Fields["level"], e.Task, e.Fields["message"])
	case event.WorkflowCompleted, event.WorkflowFailed, event.WorkflowCancelled, event.WorkflowPaused:
		line = fmt.Sprintf("workflow %v", e.Fields["state"])
	default:
		return
	}
	if s.settled != nil {
		switch e.Kind {
		case event.TaskCompleted, event.TaskSkipped, event.TaskCancelled:
			s.settled(false)
		case event.TaskFailed:
			s.settled(true)
		}
	}
	s.println(s.mask(line))
}

// maskedLive masks the free text of the live stream before the terminal view prints it (D24): a
// tool's progress message can repeat a secret the tool was given.
type maskedLive struct {
	next event.LiveSink
	mask func(string) string
}

func (m maskedLive) Observe(l event.Live) {
	l.Message = m.mask(l.Message)
	m.next.Observe(l)
}

var _ flag.Value = varFlags{}

// reportFile is the --report file of a run. A regular file (or a path that does not exist yet) is
// written atomically: openReport creates a temporary file beside it before the run, so a path
// that cannot be written is exit 3 before anything runs (D22), and commit moves it into place when
// the run ends. Until then the previous report at that path is untouched. A path that is not a
// regular file (a device, a pipe) is opened and written directly.
type reportFile struct {
	path   string   // as given
	target string   // where the report lands: path with its symbolic links followed
	f      *os.File // the temporary file, or the target itself when direct
	direct bool
	done   bool // committed or discarded
}

// reportTempPrefix starts the name of a report's temporary file: ".<name>.tmp-<random>" beside it.
func reportTempPrefix(target string) string {
	return "." + filepath.Base(target) + ".tmp-"
}

func openReport(path string) (*reportFile, error) {
	target, err := followLinks(path)
	if err != nil {
		return nil, err
	}
	r := &reportFile{path: path, target: target}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return nil, &iofs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	case err == nil && !fi.Mode().IsRegular():
		r.direct = true
		if r.f, err = os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0); err != nil {
			return nil, err
		}
		return r, nil
	case err != nil && !errors.Is(err, iofs.ErrNotExist):
		return nil, err
	}
	// O_EXCL with mode 0666, so the umask applies as it would to the report itself (os.CreateTemp
	// makes 0600); an existing report's mode is kept.
	dir, prefix := filepath.Dir(target), reportTempPrefix(target)
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64()&(1<<40-1), 36))
		r.f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if fi != nil {
			if err := r.f.Chmod(fi.Mode().Perm()); err != nil {
				r.discard()
				return nil, err
			}
		}
		return r, nil
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s: %w", dir, err)
}

// followLinks resolves the symbolic links of path's last element, so that a report written
// through a link replaces the file it points to, as writing through it did, not the link.
func followLinks(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&iofs.ModeSymlink == 0 {
			return path, nil // a missing path is created; other errors show when it is opened
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", &iofs.PathError{Op: "open", Path: path, Err: syscall.ELOOP}
}

// commit writes b and puts the report in place: write, fsync, close, rename. On any error the
// temporary file is removed and the previous report, if any, stays as it was.
func (r *reportFile) commit(b []byte) error {
	r.done = true
	if r.direct {
		_, err := r.f.Write(b)
		if cerr := r.f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tmp := r.f.Name()
	_, err := r.f.Write(b)
	if err == nil {
		err = r.f.Sync()
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, r.target)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// discard closes and removes the temporary file of a report that is not committed (an early
// return); it does nothing after commit.
func (r *reportFile) discard() {
	if r.done {
		return
	}
	r.done = true
	r.f.Close()
	if !r.direct {
		os.Remove(r.f.Name())
	}
}
