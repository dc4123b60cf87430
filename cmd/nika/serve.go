package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/server"
	"github.com/nikahq/nika/server/temporalrun"
)

// stringList collects a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error {
	if s == "" {
		return errors.New("want a name")
	}
	*l = append(*l, s)
	return nil
}

// serveEnv is what `nika serve` needs from the process, injectable for tests.
type serveEnv struct {
	lookup  func(string) (string, bool)
	signals <-chan os.Signal
}

func cmdServe(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	signal.Ignore(syscall.SIGPIPE)
	return serveWith(args, stdout, stderr, serveEnv{lookup: os.LookupEnv, signals: sigs})
}

// serveFlags are what `nika serve` does beyond the server's options: where it listens and how
// long it lets runs drain.
type serveFlags struct {
	addr, traceDir  string
	shutdownTimeout time.Duration
	temporal        temporalFlags // --temporal: the runs are handed to Temporal
}

// serveOptions parses and validates the arguments of `nika serve` and builds the server's
// options from them and the environment; ok false means exit with code.
func serveOptions(args []string, stdout, stderr io.Writer, env serveEnv) (opts server.Options, sf serveFlags, code int, ok bool) {
	fs := newFlagSet("serve")
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `ADDR` (host:port); a non-loopback address requires --auth-token")
	token := fs.String("auth-token", "", "require `TOKEN` as a bearer token on every endpoint but /healthz and /readyz (default $NIKA_AUTH_TOKEN)")
	permitsPath := fs.String("permits", "", "the permits ceiling of every submitted workflow, a YAML `FILE` written like a workflow's permits block (default {}: pure compute)")
	var secretEnv stringList
	fs.Var(&secretEnv, "secret-env", "let env secrets read environment variable `NAME` (repeatable; none by default)")
	workflows := fs.String("workflows", "", "accept \"path\" submissions of files under `DIR`")
	maxRuns := fs.Int("max-runs", server.DefaultMaxRuns, "run at most `N` workflows at once")
	queue := fs.Int("queue", server.DefaultQueueSize, "queue at most `N` more runs; beyond that a submission gets 429")
	maxBody := fs.Int64("max-body", server.DefaultMaxBodyBytes, "refuse request bodies over `BYTES` with 413")
	keepRuns := fs.Int("keep-runs", server.DefaultKeepRuns, "keep the last `N` finished runs (reports and events) in memory")
	shutdownTimeout := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, let running runs finish for `DUR`, then cancel them")
	traceDir := fs.String("trace-dir", "", "write each run's canonical event stream to `DIR`/<time>-<run-id>.ndjson")
	stateDir := fs.String("state-dir", "", "keep every run (submission, journal, events, report) in `DIR`, and take its runs up again at start (default: a temporary directory)")
	model := fs.String("model", "", "default model `provider/name` for infer and agent tasks without one")
	maxTasks := fs.Int("max-parallel-tasks", 0, "run at most `N` tasks of one run at once (0: unbounded)")
	maxTools := fs.Int("max-parallel-tools", 0, "run at most `N` tool calls of one agent turn at once (1..1024; default 8)")
	maxProcs := fs.Int("max-processes", 0, "run at most `N` exec processes at once, over all runs; more wait (default $NIKA_MAX_PROCESSES, else derived from the open-file limit and the CPUs)")
	maxOutput := fs.Int64("max-exec-output", 0, "fail an exec task that writes more than `BYTES` to a captured stream (default $NIKA_MAX_EXEC_OUTPUT, else 16 MiB)")
	taskLabel := fs.Bool("metrics-task-label", false, "label the task metrics with the task id (high-cardinality)")
	var tf temporalFlags
	tf.add(fs)
	rest, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return opts, sf, code, false
	}
	if len(rest) != 0 {
		fmt.Fprint(stderr, "nika serve: takes no file arguments; workflows are submitted over HTTP\n"+usageOf(fs))
		return opts, sf, exitUsage, false
	}
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"--max-runs must be ≥ 1", *maxRuns < 1},
		{"--queue must be ≥ 0", *queue < 0},
		{"--max-body must be ≥ 1", *maxBody < 1},
		{"--keep-runs must be ≥ 1", *keepRuns < 1},
		{"--shutdown-timeout must be ≥ 0", *shutdownTimeout < 0},
	} {
		if c.bad {
			fmt.Fprintf(stderr, "nika serve: %s\n", c.name)
			return opts, sf, exitUsage, false
		}
	}
	if err := (engine.Limits{MaxParallelTasks: *maxTasks, MaxParallelTools: *maxTools, MaxProcesses: *maxProcs, MaxExecOutputBytes: *maxOutput}).Check(); err != nil {
		fmt.Fprintf(stderr, "nika serve: %v\n", err)
		return opts, sf, exitUsage, false
	}
	if code, ok := checkModelFlag("serve", *model, stderr); !ok {
		return opts, sf, code, false
	}
	if *token == "" {
		*token, _ = env.lookup("NIKA_AUTH_TOKEN")
	}
	// D35: without a token, only this machine may reach the server.
	if *token == "" && !server.IsLoopback(*addr) {
		fmt.Fprintf(stderr, "nika serve: refusing to listen on %s without --auth-token: anyone who can reach it could run workflows; bind a loopback address (127.0.0.1:8080) or set --auth-token (or NIKA_AUTH_TOKEN)\n", *addr)
		return opts, sf, exitUsage, false
	}
	opts = server.Options{
		MaxRuns: *maxRuns, QueueSize: *queue, MaxBodyBytes: *maxBody, KeepRuns: *keepRuns,
		AuthToken: *token, SecretEnv: secretEnv, Workflows: *workflows, TraceDir: *traceDir, StateDir: *stateDir, Logger: stderr,
		Engine: engine.Options{Env: env.lookup, Version: version},
	}
	if *queue == 0 {
		opts.QueueSize = -1 // Options reads 0 as its default; --queue 0 is no queue
	}
	if *permitsPath != "" {
		src, err := os.ReadFile(*permitsPath)
		if err != nil {
			fmt.Fprintf(stderr, "nika serve: cannot read the permits file: %v\n", err)
			return opts, sf, exitEnv, false
		}
		if opts.Permits, err = server.ParsePermits(src); err != nil {
			fmt.Fprintf(stderr, "nika serve: %s: %v\n", *permitsPath, err)
			return opts, sf, exitUsage, false
		}
	}
	limits := engine.Limits{MaxParallelTasks: *maxTasks, MaxParallelTools: *maxTools, MaxProcesses: *maxProcs, MaxExecOutputBytes: *maxOutput}
	if err := limits.FromEnv(env.lookup); err != nil {
		fmt.Fprintf(stderr, "nika serve: %v\n", err)
		return opts, sf, exitEnv, false
	}
	opts.Engine.Limits = limits
	// The engine's MCP registry (D7): each run gets its own client over it. A service must not
	// come up quietly without the servers it was configured with.
	opts.Engine.MCP = engine.LoadMCP("", env.lookup)
	if err := opts.Engine.MCP.Err; err != nil {
		fmt.Fprintf(stderr, "nika serve: the MCP registry %s cannot be used: %v\n", opts.Engine.MCP.Path, err)
		return opts, sf, exitEnv, false
	}
	opts.Check.Model, opts.Check.MCPServers = *model, opts.Engine.MCP.Names()
	providers := engine.AllProviders(env.lookup)
	opts.Engine.Providers = providers
	// One metrics registry for the process, fed by every run's live stream;
	// it caps the workflow and model label values that come from submitted
	// YAML (D35), and reads each provider's limiter at every scrape.
	m := metrics.New(metrics.Options{Version: version, TaskLabel: *taskLabel})
	for name, f := range providers.Fronts {
		m.AddProvider(name, f)
	}
	opts.Metrics, opts.Live = m.Handler(), m

	for _, name := range providers.Invalid {
		// A missing key is normal (most providers are unused); a bad engine variable is a
		// mistake the operator should hear of now, not at the first submission.
		fmt.Fprintf(stderr, "nika serve: warning: provider %s is left out: %s\n", name, providers.Unavailable[name])
	}
	return opts, serveFlags{addr: *addr, traceDir: *traceDir, shutdownTimeout: *shutdownTimeout, temporal: tf}, 0, true
}

func serveWith(args []string, stdout, stderr io.Writer, env serveEnv) int {
	opts, sf, code, ok := serveOptions(args, stdout, stderr, env)
	if !ok {
		return code
	}
	if sf.temporal.hostPort != "" {
		c, err := sf.temporal.dial(stderr)
		if err != nil {
			fmt.Fprintf(stderr, "nika serve: cannot reach Temporal at %s: %v\n", sf.temporal.hostPort, err)
			return exitEnv
		}
		defer c.Close()
		opts.Backend = &temporalrun.Backend{Client: c, Queue: sf.temporal.queue,
			Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "nika serve: "+format+"\n", args...) }}
		if wd, err := os.Getwd(); err == nil {
			opts.Engine.RunDir = wd
		}
		fmt.Fprintf(stderr, "nika serve: runs go to Temporal at %s (namespace %q, task queue %q); a nika worker --temporal runs them\n",
			sf.temporal.hostPort, sf.temporal.namespace, sf.temporal.queue)
	}
	srv, err := server.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "nika serve: %v\n", err)
		return exitEnv
	}
	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "nika serve: %v\n", err)
		return exitEnv
	}
	// A slow or idle client cannot hold a connection forever: the request (body included) must
	// arrive within a minute, and an idle keep-alive connection is closed after two. There is no
	// write timeout: GET …/events follows a run for as long as it lasts.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "nika serve: listening on http://%s\n", ln.Addr())

	var serveErr error
	select {
	case <-env.signals:
	case serveErr = <-served:
	}
	// The listener stays open while the runs drain (up to --shutdown-timeout), so that clients
	// hear why: /readyz answers 503 and a submission a 503 with a JSON error, rather than
	// connection refused. The line below is logged once that is so.
	running, queued := srv.StopAdmitting()
	fmt.Fprintf(stderr, "nika serve: shutting down: %d running runs may finish within %s, %d queued runs are cancelled; /readyz and new submissions answer 503 meanwhile\n", running, sf.shutdownTimeout, queued)
	ctx, cancel := context.WithTimeout(context.Background(), sf.shutdownTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- srv.Shutdown(ctx) }()
	select {
	case err = <-drained:
	case <-env.signals:
		fmt.Fprintln(stderr, "nika serve: signalled again; cancelling every run and abandoning on_finally steps")
		srv.Close()
		err = <-drained
	}
	if err != nil {
		fmt.Fprintf(stderr, "nika serve: %v\n", err)
	}
	// Every run has ended, so every event stream has: stop accepting now. A client that stops
	// reading does not hold the exit for long.
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(context.Background()) }()
	select {
	case <-httpDone:
	case <-time.After(5 * time.Second):
		hs.Close()
		<-httpDone
	}
	if sf.traceDir != "" {
		fmt.Fprintf(stderr, "nika serve: traces are in %s\n", sf.traceDir)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "nika serve: %v\n", serveErr)
		return exitEnv
	}
	fmt.Fprintln(stderr, "nika serve: stopped")
	return exitOK
}

var _ flag.Value = (*stringList)(nil)
