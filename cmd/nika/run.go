package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
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

	// The report and trace files are opened before anything runs (D22).
	var report *os.File
	if *reportPath != "" {
		if report, err = os.Create(*reportPath); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the report: %v\n", err)
			return exitEnv
		}
		defer report.Close()
	}
	var sinks event.Fanout
	var trace *os.File
	if !*noTrace {
		path := *tracePath
		if path == "" {
			path = filepath.Join(".nika", "traces", start.UTC().Format("20060102T150405Z")+"-"+runID+".ndjson")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fmt.Fprintf(stderr, "nika run: cannot create the trace directory: %v\n", err)
				return exitEnv
			}
		}
		if trace, err = os.Create(path); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the trace: %v\n", err)
			return exitEnv
		}
		defer trace.Close()
		sinks = append(sinks, event.NewNDJSON(trace).WithMasker(event.Masker(mask)))
	}
	var live event.LiveSink
	var view *progress
	if !*quiet {
		ls := &logSink{mask: mask, println: func(s string) { fmt.Fprintln(stderr, s) }}
		if !*noProgress && isTerminal(stderr) {
			view = newProgress(stderr, env.now)
			ls.println, ls.settled, live = view.Println, view.Settled, view
		}
		sinks = append(sinks, ls)
	}

	live = mrun.sink(live)

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
		"exec":   &exec.Verb{Depth: depth, MaxProcesses: processes},
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

	if view != nil {
		view.Close()
	}

	// 4. Report, outputs, exit code.
	if report != nil {
		rep := event.MaskValue(res.Report(runID, w.Name, *seed), event.Masker(mask))
		b, err := canon.Marshal(rep)
		if err != nil { // a task output holds NaN or ±Inf: written as null
			fmt.Fprintf(stderr, "nika run: the report holds a value JSON cannot carry (%v); writing it as null\n", err)
			b, err = canon.Marshal(canon.Finite(rep))
		}
		if err == nil {
			_, err = report.Write(append(b, '\n'))
		}
		if err != nil {
			fmt.Fprintf(stderr, "nika run: writing the report: %v\n", err)
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
	stdout.Write(append(out, '\n'))
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
		return exitFailure
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

var _ flag.Value = varFlags{}
