package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/temporal"
)

// temporalFlags are the flags that name a Temporal service: `nika worker` and `nika run --temporal`.
type temporalFlags struct {
	hostPort, namespace, queue string
}

func (t *temporalFlags) add(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&t.hostPort, "temporal", "", "the Temporal frontend `HOST:PORT`")
	fs.StringVar(&t.namespace, "namespace", "default", "the Temporal `NAMESPACE`")
	fs.StringVar(&t.queue, "task-queue", "nika", "the task `QUEUE` of nika's workflows and jobs")
}

// dial connects to the service; the SDK's own log lines go to logTo from level warn up (nil:
// nowhere).
func (t *temporalFlags) dial(logTo io.Writer) (client.Client, error) {
	var l log.Logger = quietTemporalLogger{}
	if logTo != nil {
		l = log.NewStructuredLogger(slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	return client.Dial(client.Options{HostPort: t.hostPort, Namespace: t.namespace, Logger: l})
}

// cmdWorker is `nika worker --temporal HOST:PORT`: it serves nika's run workflow and its job
// activity on a task queue until interrupted. The jobs' verbs are built through engine, as for
// a local run, from this process's environment (provider keys, MCP registry, limits): a worker
// holds the keys, a submitter needs none of its own.
func cmdWorker(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("worker")
	var tf temporalFlags
	tf.add(fs)
	var limits engine.Limits
	fs.IntVar(&limits.MaxParallelTools, "max-parallel-tools", 0, "run at most `N` tool calls of one agent turn at once (1..1024; default 8)")
	fs.IntVar(&limits.MaxProcesses, "max-processes", 0, "run at most `N` exec processes at once; more wait (default $NIKA_MAX_PROCESSES, else derived from the open-file limit and the CPUs)")
	fs.Int64Var(&limits.MaxExecOutputBytes, "max-exec-output", 0, "keep at most `BYTES` of each exec stream (default $NIKA_MAX_EXEC_OUTPUT, else 16 MiB)")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics while the worker runs (port 0: a free port, named on stderr)")
	pos, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || tf.hostPort == "" {
		fmt.Fprint(stderr, "nika worker: give --temporal HOST:PORT and no file\n"+usageOf(fs))
		return exitUsage
	}
	if err := limits.Check(); err != nil {
		fmt.Fprintf(stderr, "nika worker: %v\n", err)
		return exitUsage
	}
	if err := limits.FromEnv(os.LookupEnv); err != nil {
		fmt.Fprintf(stderr, "nika worker: %v\n", err)
		return exitEnv
	}
	runDir, _ := os.Getwd()
	eng, err := engine.New(engine.Options{RunDir: runDir, Version: version, Limits: limits,
		MCP: engine.LoadMCP(runDir, os.LookupEnv), Providers: engine.AllProviders(os.LookupEnv)})
	if err != nil {
		fmt.Fprintf(stderr, "nika worker: %v\n", err)
		return exitEnv
	}
	verbs, release := eng.ActivityVerbs()
	defer release()
	if *metricsAddr != "" {
		stop, err := serveWorkerMetrics(*metricsAddr, eng.Providers().Registry, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "nika worker: cannot serve metrics on %s: %v; choose another --metrics-addr (port 0 picks a free one)\n", *metricsAddr, err)
			return exitEnv
		}
		defer stop()
	}
	c, err := tf.dial(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nika worker: cannot reach Temporal at %s: %v\n", tf.hostPort, err)
		return exitEnv
	}
	defer c.Close()
	// A wide for_each's first step evaluates every iteration's user code and schedules every job
	// in one workflow task, which takes more than the SDK's default second of deadlock detection
	// on a busy machine: it is a long task, not a deadlock.
	w := worker.New(c, tf.queue, worker.Options{DeadlockDetectionTimeout: 5 * time.Second})
	temporal.Register(w, &temporal.Activities{Verbs: verbs})
	fmt.Fprintf(stderr, "nika worker: serving task queue %q of namespace %q at %s\n", tf.queue, tf.namespace, tf.hostPort)
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintf(stderr, "nika worker: %v\n", err)
		return exitEnv
	}
	return exitOK
}

// quietTemporalLogger drops the SDK's own log lines: the commands report what matters on stderr.
type quietTemporalLogger struct{}

func (quietTemporalLogger) Debug(string, ...any) {}
func (quietTemporalLogger) Info(string, ...any)  {}
func (quietTemporalLogger) Warn(string, ...any)  {}
func (quietTemporalLogger) Error(string, ...any) {}

// serveWorkerMetrics serves a worker's /metrics: the build info, the Go and process collectors,
// and the adaptive limiter of each provider the worker built (its limit, requests in flight and
// waiting, rate-limited answers). In a Temporal deployment the limiter is the worker's: every job
// of every run the worker serves shares it, so this is where a user sees why model calls go as
// fast as they do. The run and task metrics are a run's (its canonical events), not a worker's.
func serveWorkerMetrics(addr string, providers *provider.Registry, stderr io.Writer) (stop func(), err error) {
	m := metrics.New(metrics.Options{Version: version})
	for name, l := range metrics.LimitersOf(providers) {
		m.AddProvider(name, l)
	}
	url, stop, err := serveMetrics(addr, m, "nika worker", stderr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "nika worker: serving metrics at %s\n", url)
	return stop, nil
}
