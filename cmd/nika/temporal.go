package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/temporal"
	"github.com/nikahq/nika/workflow"
)

// hasTemporal reports whether `nika run` was given --temporal (then cmdRunTemporal runs it).
func hasTemporal(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--temporal" || a == "-temporal" || strings.HasPrefix(a, "--temporal=") || strings.HasPrefix(a, "-temporal=") {
			return true
		}
	}
	return false
}

// progressEvery is how often `nika run --temporal` asks the workflow for its new canonical
// events while it runs.
const progressEvery = 250 * time.Millisecond

// cmdRunTemporal is `nika run --temporal HOST:PORT FILE`: it checks and prepares the run here
// (vars, secrets and provider keys, as a local run), submits it to Temporal as nika's run
// workflow under its run id, shows the tasks as the workflow's canonical events come, writes the
// same trace, and prints the same outputs with the same exit code as a local run (0, 1, 130). An
// interrupt cancels the workflow (its started tasks still run on_finally) and waits for its end.
func cmdRunTemporal(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run --temporal")
	var tf temporalFlags
	tf.add(fs)
	vars := varFlags{}
	fs.Var(vars, "var", "set a var: `name=value` (repeatable; the last one wins)")
	var model, tracePath string
	var noTrace, quiet bool
	var seed uint64
	var maxTasks int
	fs.StringVar(&model, "model", "", "default model `provider/name` for infer and agent tasks without one")
	fs.StringVar(&tracePath, "trace", "", "write the canonical event stream (NDJSON) to `FILE` (default .nika/traces/<time>-<run-id>.ndjson)")
	fs.BoolVar(&noTrace, "no-trace", false, "write no trace file")
	fs.BoolVar(&quiet, "quiet", false, "print nothing on stderr but errors")
	fs.Uint64Var(&seed, "seed", 0, "retry jitter seed")
	fs.IntVar(&maxTasks, "max-parallel-tasks", 0, "run at most `N` tasks at once (0: unbounded)")
	var heartbeat time.Duration
	fs.DurationVar(&heartbeat, "heartbeat-timeout", temporal.DefaultHeartbeatTimeout,
		"take a job's worker for lost after `DURATION` without a heartbeat, and run the job on another")
	files, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(files) != 1 || tf.hostPort == "" {
		fmt.Fprint(stderr, "nika run: give exactly one workflow file and --temporal HOST:PORT\n"+usageOf(fs))
		return exitUsage
	}
	if heartbeat <= 0 {
		fmt.Fprint(stderr, "nika run: --heartbeat-timeout must be positive\n"+usageOf(fs))
		return exitUsage
	}
	file := files[0]
	if code, ok := checkModelFlag("run", model, stderr); !ok {
		return code
	}
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitUsage
	}
	servers := mcpServers(stderr)
	results, analyses := checkFiles([]string{file}, model, stderr)
	if !results[0].Valid() || !quiet {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true})
	}
	if !results[0].Valid() {
		return exitUsage
	}
	w, err := workflow.Compile(analyses[0])
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitUsage
	}
	runDir, _ := os.Getwd()
	eng, err := engine.New(engine.Options{RunDir: runDir, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitEnv
	}
	p, perr := eng.Prepare(w, vars)
	if perr != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", perr)
		if perr.Stage == engine.StageVars {
			return exitUsage
		}
		return exitEnv
	}
	in := temporal.Input{Name: file, Source: string(src), Model: model, MCPServers: servers, RunID: p.ID, Seed: seed,
		RunDir: runDir, MaxParallelTasks: maxTasks, HeartbeatTimeout: heartbeat,
		Vars: temporal.Value{V: p.Inputs.Vars}, Env: temporal.Value{V: p.Inputs.Env}, Secrets: temporal.Value{V: p.Inputs.Secrets}}
	c, err := tf.dial(nil)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: cannot reach Temporal at %s: %v\n", tf.hostPort, err)
		return exitEnv
	}
	defer c.Close()
	sinks := event.Fanout{}
	var trace *event.File
	if !noTrace {
		if tracePath == "" {
			tracePath = engine.DefaultTracePath(time.Now(), p.ID)
			if err := os.MkdirAll(filepath.Dir(tracePath), 0o755); err != nil {
				fmt.Fprintf(stderr, "nika run: cannot create the trace directory: %v\n", err)
				return exitEnv
			}
		}
		if trace, err = event.CreateFile(tracePath); err != nil {
			fmt.Fprintf(stderr, "nika run: cannot write the trace: %v\n", err)
			return exitEnv
		}
		sinks = append(sinks, trace.WithMasker(event.Masker(p.Mask)))
	}
	if !quiet {
		sinks = append(sinks, &logSink{mask: p.Mask, println: func(s string) { fmt.Fprintln(stderr, s) }})
	}
	out, interrupted, err := submit(c, tf, in, sinks, stderr)
	lost := false
	if trace != nil {
		if cerr := trace.Close(); cerr != nil {
			fmt.Fprintf(stderr, "nika run: error: %v\n", cerr)
			lost = true
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "nika run: %v\n", err)
		return exitEnv
	}
	return finishTemporal(out, p.Mask, quiet, interrupted, lost, stdout, stderr)
}

// submit starts the workflow and follows it to its end (temporal.Follow), emitting its canonical
// events to sinks as they come and showing each question it waits on; the first interrupt
// cancels it.
func submit(c client.Client, tf temporalFlags, in temporal.Input, sinks event.Sink, stderr io.Writer) (temporal.Output, bool, error) {
	ctx := context.Background()
	run, err := temporal.Start(ctx, c, tf.queue, in)
	if err != nil {
		return temporal.Output{}, false, fmt.Errorf("cannot start the run on Temporal: %v", err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	type result struct {
		out temporal.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := temporal.Follow(ctx, c, run, 0, progressEvery, func(lines []string) { emitLines(lines, sinks, stderr) })
		done <- result{out, err}
	}()
	interrupted := false
	asked := map[string]bool{} // the questions shown already
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.out, interrupted, r.err
		case <-sigs:
			if !interrupted {
				interrupted = true
				fmt.Fprintln(stderr, "nika run: interrupted; cancelling the run on Temporal (its started tasks still run on_finally)")
				if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
					fmt.Fprintf(stderr, "nika run: cannot cancel the run: %v\n", err)
				}
			}
		case <-tick.C:
			showQuestions(ctx, c, tf, run.GetID(), asked, stderr)
		}
	}
}

// showQuestions prints each question the run waits on once, with the `nika answer` command
// that answers it.
func showQuestions(ctx context.Context, c client.Client, tf temporalFlags, runID string, asked map[string]bool, stderr io.Writer) {
	qs, err := temporal.Questions(ctx, c, runID)
	if err != nil {
		return
	}
	ns := ""
	if tf.namespace != "default" {
		ns = " --namespace " + tf.namespace
	}
	for _, q := range qs {
		key := fmt.Sprintf("%s#%d", q.Name(), q.Attempt)
		if asked[key] {
			continue
		}
		asked[key] = true
		fmt.Fprintf(stderr, "nika run: %s asks (%s): %s\n  answer with: nika answer --temporal %s%s %s %s=VALUE\n",
			q.Name(), q.Mode, q.Message, tf.hostPort, ns, runID, q.Name())
	}
}

// emitLines decodes canonical lines back into events for the sinks (the trace file writes them
// again, masked and chained, as a local run's).
func emitLines(lines []string, sinks event.Sink, stderr io.Writer) {
	for _, l := range lines {
		e, err := temporal.DecodeEvent(l)
		if err != nil {
			fmt.Fprintf(stderr, "nika run: a canonical event could not be read: %v\n", err)
			continue
		}
		sinks.Emit(e)
	}
}

// finishTemporal prints the outputs and returns the exit code, as a local run's finish does.
func finishTemporal(out temporal.Output, mask func(string) string, quiet, interrupted, lost bool, stdout, stderr io.Writer) int {
	if interrupted || out.State == "cancelled" {
		return exitInterrupt
	}
	b, err := canon.Marshal(event.MaskValue(out.Outputs.V, event.Masker(mask)))
	if err != nil {
		fmt.Fprintf(stderr, "nika run: encoding the outputs: %v\n", err)
		return exitFailure
	}
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(stderr, "nika run: error: cannot write the outputs to stdout: %v\n", err)
		lost = true
	}
	type codeMessage struct{ Code, Message string }
	var rep struct {
		Error *codeMessage `json:"error"`
		Tasks map[string]struct {
			Status string       `json:"status"`
			Error  *codeMessage `json:"error"`
		} `json:"tasks"`
	}
	if out.State != "success" && json.Unmarshal(out.Report, &rep) == nil {
		if rep.Error != nil { // an error is printed even with --quiet (D20)
			fmt.Fprintf(stderr, "nika run: error[%s] %s\n", rep.Error.Code, mask(rep.Error.Message))
		}
		if quiet { // the per-task lines are off: say which tasks failed the run, and why
			ids := make([]string, 0, len(rep.Tasks))
			for id := range rep.Tasks {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				if tr := rep.Tasks[id]; tr.Status == "failure" && tr.Error != nil {
					fmt.Fprintf(stderr, "nika run: task %s failed: error[%s] %s\n", id, tr.Error.Code, mask(tr.Error.Message))
				}
			}
		}
	}
	switch {
	case lost:
		return exitEnv
	case out.State != "success":
		return exitFailure
	}
	return exitOK
}
