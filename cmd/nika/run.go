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

	"github.com/google/uuid"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools"
	nikamcp "github.com/nikahq/nika/tools/mcp"
	"github.com/nikahq/nika/verbs/agent"
	"github.com/nikahq/nika/verbs/exec"
	"github.com/nikahq/nika/verbs/infer"
	"github.com/nikahq/nika/verbs/invoke"
	"github.com/nikahq/nika/workflow"
)

const (
	exitFailure   = 1
	exitInterrupt = 130
	maxRunDepth   = 8
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

func runWith(args []string, stdout, stderr io.Writer, env runEnv) int {
	fs := newFlagSet("run")
	vars := varFlags{}
	fs.Var(vars, "var", "set a var: `name=value` (repeatable; the last one wins)")
	model := fs.String("model", "", "default model `provider/name` for infer and agent tasks without one")
	reportPath := fs.String("report", "", "write the run report (JSON) to `FILE`")
	tracePath := fs.String("trace", "", "write the canonical event stream (NDJSON) to `FILE` (default .nika/traces/<time>-<run-id>.ndjson)")
	noTrace := fs.Bool("no-trace", false, "write no trace file")
	seed := fs.Uint64("seed", 0, "retry jitter seed")
	maxTasks := fs.Int("max-parallel-tasks", 0, "run at most `N` tasks at once (0: unbounded)")
	maxTools := fs.Int("max-parallel-tools", 0, "run at most `N` tool calls of one agent turn at once (1..1024; default 8)")
	maxProcs := fs.Int("max-processes", 0, "run at most `N` exec processes at once; more wait (default $NIKA_MAX_PROCESSES, else derived from the open-file limit and the CPUs)")
	maxOutput := fs.Int64("max-exec-output", 0, "fail an exec task that writes more than `BYTES` to a captured stream (default $NIKA_MAX_EXEC_OUTPUT, else 16 MiB)")
	noProgress := fs.Bool("no-progress", false, "print a plain line log instead of the live view")
	quiet := fs.Bool("quiet", false, "print nothing on stderr but errors")
	yes := fs.Bool("yes", false, "confirm every nika:prompt")
	mflags := addMetricsFlags(fs)
	files, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(files) != 1 {
		fmt.Fprint(stderr, "nika run: give exactly one workflow file\n"+usageOf(fs))
		return exitUsage
	}
	if *maxTasks < 0 {
		fmt.Fprintf(stderr, "nika run: --max-parallel-tasks must be ≥ 0, got %d\n", *maxTasks)
		return exitUsage
	}
	if *maxTools != 0 && (*maxTools < 1 || *maxTools > 1024) {
		fmt.Fprintf(stderr, "nika run: --max-parallel-tools must be from 1 to 1024, got %d\n", *maxTools)
		return exitUsage
	}
	if *maxProcs < 0 {
		fmt.Fprintf(stderr, "nika run: --max-processes must be ≥ 0, got %d\n", *maxProcs)
		return exitUsage
	}
	if *maxOutput < 0 {
		fmt.Fprintf(stderr, "nika run: --max-exec-output must be ≥ 0, got %d\n", *maxOutput)
		return exitUsage
	}
	if code, ok := checkModelFlag("run", *model, stderr); !ok {
		return code
	}
	// max_parallel_tools: flag > NIKA_MAX_PARALLEL_TOOLS > 8 (D4).
	parallelTools := *maxTools
	if v, ok := env.lookup("NIKA_MAX_PARALLEL_TOOLS"); ok && *maxTools == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			fmt.Fprintf(stderr, "nika run: NIKA_MAX_PARALLEL_TOOLS must be from 1 to 1024, got %q\n", v)
			return exitEnv
		}
		parallelTools = n
	}
	// max_processes: flag > NIKA_MAX_PROCESSES > the exec verb's default (verbs/exec, D4).
	processes := *maxProcs
	if v, ok := env.lookup("NIKA_MAX_PROCESSES"); ok && *maxProcs == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "nika run: NIKA_MAX_PROCESSES must be a whole number ≥ 1, got %q\n", v)
			return exitEnv
		}
		processes = n
	}
	// max_exec_output: flag > NIKA_MAX_EXEC_OUTPUT > the exec verb's default (verbs/exec, D4).
	outputBound := *maxOutput
	if v, ok := env.lookup("NIKA_MAX_EXEC_OUTPUT"); ok && *maxOutput == 0 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "nika run: NIKA_MAX_EXEC_OUTPUT must be a whole number of bytes ≥ 1, got %q\n", v)
			return exitEnv
		}
		outputBound = n
	}
	depth, err := runDepth(env.lookup)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitEnv
	}
	if depth >= maxRunDepth {
		fmt.Fprintf(stderr, "nika run: error[NIKA-SEC-003] run recursion: nesting depth %d ≥ %d — A workflow is starting nika run inside itself; break the loop.\n", depth, maxRunDepth)
		return exitEnv
	}

	// 1. Check.
	results, analyses := checkFiles(files, *model, stderr)
	if !results[0].Valid() {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true})
		return exitUsage
	}
	if !*quiet {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true}) // warnings
	}
	w, err := workflow.Compile(analyses[0])
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitUsage
	}
	// 2. Inputs: vars (exit 2), then secrets and provider keys (exit 3).
	varValues, verr := workflow.ResolveVars(w, vars)
	if verr != nil {
		fmt.Fprintf(stderr, "nika run: error[%s] %s\n", verr.Code, verr.Message)
		return exitUsage
	}
	runDir, _ := os.Getwd()
	secrets, serr := workflow.ResolveSecrets(w, runDir, env.lookup)
	if serr != nil {
		fmt.Fprintf(stderr, "nika run: error[%s] %s\n", serr.Code, serr.Message)
		return exitEnv
	}
	mask := workflow.NewMasker(secrets)
	providers, msg := buildProviders(w, env.lookup)
	if msg != "" {
		fmt.Fprintf(stderr, "nika run: %s\n", mask(msg))
		return exitEnv
	}
	mrun, code, ok := mflags.start(w, providers, *quiet, stderr)
	if !ok {
		return code
	}
	defer mrun.finish(env.signals, stderr) // push and linger once the outputs are out
	envValues := map[string]any{}
	for _, e := range w.Env {
		envValues[e.Name] = e.Value
	}
	runID := "r-" + uuid.Must(uuid.NewV7()).String()
	start := env.now()

	// The report and trace files are opened before anything runs (D22): the report as a temporary
	// file beside its path, moved into place when the run ends (see the decisions above).
	var report *reportFile
	if *reportPath != "" {
		if report, err = openReport(*reportPath); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the report %s: %v\n", *reportPath, err)
			return exitEnv
		}
		defer report.discard() // a no-op once it is in place
	}
	var sinks event.Fanout
	var trace *event.File
	if !*noTrace {
		path := *tracePath
		if path == "" {
			path = filepath.Join(".nika", "traces", start.UTC().Format("20060102T150405Z")+"-"+runID+".ndjson")
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
	if !*quiet {
		ls := &logSink{mask: mask, println: func(s string) { fmt.Fprintln(stderr, s) }}
		if !*noProgress && isTerminal(stderr) {
			view = newProgress(stderr, env.now)
			ls.println, ls.settled, live = view.Println, view.Settled, maskedLive{view, mask}
		}
		sinks = append(sinks, ls)
	}

	live = mrun.sink(live)
	// The limiters of the providers the run built, as provider_state on the live stream (the view
	// shows them); the sampler stops, with a final snapshot, as workflow_finished passes.
	sampler := metrics.StartSampler(metrics.LimitersOf(providers), live, metrics.SamplerOptions{Workflow: w.Name, Now: env.now})
	defer sampler.Stop()
	live = sampler.StopAtFinish(live)

	// 3. Execute.
	builtins := tools.NewBuiltins()
	// nika:prompt asks on stdin and stderr, never stdout (the outputs JSON); --yes also
	// applies without a terminal.
	if tty := isTerminal(os.Stdin) && isTerminal(stderr); tty || *yes {
		builtins.Terminal = &tools.Terminal{Yes: *yes}
		if tty {
			builtins.Terminal.In, builtins.Terminal.Out = os.Stdin, stderr
			if view != nil { // the live view gives the line to a question while it is asked
				builtins.Terminal.In, builtins.Terminal.Out = promptIn{view, os.Stdin}, promptOut{view}
			}
		}
	}
	// The run's MCP client (D7, D37): a server starts on its first use, and every server is
	// shut down, process group and all, when this function returns. An interrupt only cancels
	// the run's context, so that holds for an interrupted run too.
	var mcpTools tools.Source
	mcpPath := nikamcp.Path(runDir, env.lookup)
	if reg, err := nikamcp.Load(mcpPath); err == nil {
		client := nikamcp.NewClient(reg, nikamcp.Options{RunDir: runDir, Getenv: env.lookup, Version: version})
		defer client.Close()
		mcpTools = client
	} else if _, named := env.lookup(nikamcp.EnvConfig); named || !errors.Is(err, iofs.ErrNotExist) {
		mcpTools = nikamcp.Unusable(mcpPath, err) // mcp: calls say what is wrong with the file
	}
	verbs := map[string]planner.Verb{
		"exec":   &exec.Verb{Depth: depth, MaxProcesses: processes, MaxOutputBytes: outputBound},
		"infer":  &infer.Verb{Providers: providers, Media: builtins},
		"invoke": &invoke.Verb{Builtins: builtins, Tools: mcpTools},
		"agent":  &agent.Verb{Providers: providers, Builtins: builtins, Tools: mcpTools, Config: agent.Config{MaxParallelTools: parallelTools}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finallyCtx, abandon := context.WithCancel(context.Background())
	defer abandon()
	var interrupted atomic.Bool
	stopSignals := make(chan struct{})
	signalsDone := make(chan struct{})
	if env.signals != nil {
		go func() {
			defer close(signalsDone)
			select {
			case <-env.signals:
			case <-stopSignals:
				return
			}
			interrupted.Store(true)
			fmt.Fprintln(stderr, "nika run: interrupted; finishing on_finally steps (interrupt again to abandon them)")
			cancel()
			select {
			case <-env.signals:
				// A second signal abandons on_finally (LANGUAGE.md §3.4):
				// their processes are killed, the report is still written.
				fmt.Fprintln(stderr, "nika run: interrupted again; abandoning on_finally steps")
				abandon()
			case <-stopSignals:
			}
		}()
	} else {
		close(signalsDone)
	}
	res := planner.Run(ctx, w, planner.Inputs{Vars: varValues, Env: envValues, Secrets: secrets}, planner.Options{
		Config:    planner.Config{RunID: runID, Seed: *seed, MaxParallelTasks: *maxTasks, RunDir: runDir},
		Verbs:     verbs,
		Canonical: sinks,
		Live:      live,
		Clock:     env.now,
		Finally:   finallyCtx,
	})
	close(stopSignals) // a signal from now on does not change the outcome
	<-signalsDone
	sampler.Stop() // done at workflow_finished; nothing may draw once the view is closed

	if view != nil {
		view.Close()
	}

	// 4. Trace, report, outputs, exit code. A file that could not be written is exit 3, after
	// the outputs are printed; an interrupted run still exits 130.
	lost := false // the trace, the report or the outputs could not be written
	if trace != nil {
		err := trace.Close()
		trace = nil
		if err != nil {
			fmt.Fprintf(stderr, "nika run: error: %v\n", err)
			lost = true
		}
	}
	if report != nil {
		rep := event.MaskReport(res.Report(runID, w.Name, *seed), event.Masker(mask))
		b, err := canon.Marshal(rep)
		if err != nil { // a task output holds NaN or ±Inf: written as null
			fmt.Fprintf(stderr, "nika run: the report holds a value JSON cannot carry (%v); writing it as null\n", err)
			b, err = canon.Marshal(canon.Finite(rep))
		}
		if err == nil {
			err = report.commit(append(b, '\n'))
		}
		if err != nil {
			fmt.Fprintf(stderr, "nika run: error: cannot write the report %s: %v\n", report.path, err)
			lost = true
		}
	}
	if interrupted.Load() || res.State == "cancelled" {
		return exitInterrupt
	}
	out, err := canon.Marshal(event.MaskValue(res.Outputs, event.Masker(mask)))
	if err != nil {
		fmt.Fprintf(stderr, "nika run: encoding the outputs: %v\n", err)
		return exitFailure
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		fmt.Fprintf(stderr, "nika run: error: cannot write the outputs to stdout: %v\n", err)
		lost = true
	}
	if res.State != "success" {
		if res.Error != nil { // an error is printed even with --quiet (D20)
			fmt.Fprintf(stderr, "nika run: error[%s] %s\n", res.Error.Code, mask(res.Error.Message))
		}
		if *quiet { // the per-task lines are off: say which tasks failed the run, and why
			for _, tr := range res.Tasks {
				if tr.Status == "failure" && tr.Error != nil {
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

// runDepth reads NIKA_RUN_DEPTH, the nesting depth nika passes to the runs its exec children
// start (NIKA-SEC-003). Unset is 0; a value that is not a whole number ≥ 0 is an error rather
// than 0, which would silently reset the recursion guard.
func runDepth(lookup func(string) (string, bool)) (int, error) {
	v, ok := lookup(exec.DepthVar)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a whole number ≥ 0 (nika sets it for the runs its exec tasks start; unset it at the top level), got %q", exec.DepthVar, v)
	}
	return n, nil
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
	case event.WorkflowCompleted, event.WorkflowFailed, event.WorkflowCancelled:
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
