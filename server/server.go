package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/mcp"
	"github.com/nikahq/nika/verbs/agent"
	"github.com/nikahq/nika/verbs/exec"
	"github.com/nikahq/nika/verbs/infer"
	"github.com/nikahq/nika/verbs/invoke"
)

// Defaults of the Options left zero.
const (
	DefaultMaxRuns      = 4
	DefaultQueueSize    = 64
	DefaultMaxBodyBytes = 1 << 20
	DefaultKeepRuns     = 1000
	DefaultKeepBytes    = 256 << 20
)

// Options configure a Server. The zero value serves the mock provider only,
// under the `{}` ceiling, without authentication.
type Options struct {
	// Verbs builds the verbs of one run; it is called once per run. Nil: the
	// standard verbs (exec, infer, invoke, agent) over Providers and Builtins.
	Verbs func() map[string]planner.Verb
	// Providers is the one registry every run shares (its limiters see the
	// whole load); nil: the mock provider only. Unavailable names, per
	// provider, why it is not in the registry (EnvProviders fills both); a
	// submission using such a provider is refused with that reason.
	Providers   *provider.Registry
	Unavailable map[string]string
	// Builtins runs the nika: tools of every run; nil: tools.NewBuiltins().
	Builtins *tools.Builtins
	// MCP is the engine's MCP registry (D7, D25): each run gets its own
	// client over it, closed (process groups killed, D37) when the run
	// ends. Nil: no MCP servers; their tools are NIKA-INVOKE-001.
	MCP *mcp.Registry
	// Version is announced to MCP servers; "": "dev".
	Version string
	// MaxParallelTools bounds one agent batch (D4); 0: the agent's default.
	MaxParallelTools int
	// MaxParallelTasks bounds the tasks of one run (D4); 0: unbounded.
	MaxParallelTasks int
	// ExecDepth is NIKA_RUN_DEPTH of this process; exec children get one more.
	ExecDepth int
	// MaxProcesses bounds the exec children of all runs together (the
	// descriptor limit is the process's); 0: exec.DefaultMaxProcesses().
	MaxProcesses int
	// MaxExecOutputBytes bounds what an exec task captures from each stream; 0:
	// exec.DefaultMaxOutputBytes (16 MiB).
	MaxExecOutputBytes int64

	MaxRuns      int   // runs executing at once; 0: DefaultMaxRuns
	QueueSize    int   // runs waiting beyond MaxRuns; 0: DefaultQueueSize, <0: none
	MaxBodyBytes int64 // request body limit; 0: DefaultMaxBodyBytes
	KeepRuns     int   // finished runs kept in memory; 0: DefaultKeepRuns
	// KeepBytes bounds the events and reports finished runs keep in
	// memory (the oldest are forgotten first; the newest is always kept);
	// 0: DefaultKeepBytes.
	KeepBytes int64

	// AuthToken, when set, is the bearer token every endpoint but the
	// health checks requires.
	AuthToken string
	// Permits is the ceiling every submitted workflow runs under,
	// intersected with its own permits (D35); nil: `{}`, pure compute.
	Permits *spec.Permits
	// SecretEnv lists the environment variables env secrets may read.
	SecretEnv []string
	// Env reads the environment for secrets; nil: os.LookupEnv.
	Env func(string) (string, bool)
	// Workflows is the directory "path" submissions are read from (no
	// escape); "": path submissions are refused.
	Workflows string
	// RunDir is every run's directory (permits.fs anchors); "": the
	// working directory.
	RunDir string
	// Check is passed to spec.CheckSource (default model, MCP servers).
	Check spec.CheckOptions

	Metrics  http.Handler   // served at /metrics; nil: 404
	Live     event.LiveSink // every run's live stream; nil: discarded
	TraceDir string         // "": no trace files; else one NDJSON file per run
	Clock    func() time.Time
	Logger   io.Writer // one line per run transition; nil: discarded
}

// Server runs submitted workflows. Create it with New; it is safe for
// concurrent use. Its goroutines end by Shutdown or Close.
type Server struct {
	opts    Options
	ceiling *spec.Permits
	secrets map[string]bool
	token   [32]byte // SHA-256 of AuthToken
	log     *lockedWriter

	// exec is the exec verb every run shares, so that its process bound
	// holds for the whole server.
	exec *exec.Verb

	// finally is the context on_finally steps run under; Close cancels it.
	finally context.Context
	abandon context.CancelFunc

	mu       sync.Mutex
	runs     map[string]*run
	queue    []*run   // FIFO of queued runs
	finished []string // ids of finished runs, oldest first
	retained int64    // bytes of events and reports the finished runs hold
	running  int
	draining bool
	wg       sync.WaitGroup // one per executing run
}

// New validates opts and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.MaxRuns < 0 || opts.MaxBodyBytes < 0 || opts.KeepRuns < 0 || opts.KeepBytes < 0 {
		return nil, errors.New("server: MaxRuns, MaxBodyBytes, KeepRuns and KeepBytes must not be negative")
	}
	if opts.MaxRuns == 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	switch {
	case opts.QueueSize == 0:
		opts.QueueSize = DefaultQueueSize
	case opts.QueueSize < 0:
		opts.QueueSize = 0
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.KeepRuns == 0 {
		opts.KeepRuns = DefaultKeepRuns
	}
	if opts.KeepBytes == 0 {
		opts.KeepBytes = DefaultKeepBytes
	}
	if opts.Env == nil {
		opts.Env = os.LookupEnv
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.RunDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("server: the run directory: %w", err)
		}
		opts.RunDir = wd
	}
	if opts.Workflows != "" {
		if fi, err := os.Stat(opts.Workflows); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("server: the workflows root %q is not a readable directory", opts.Workflows)
		}
	}
	if opts.TraceDir != "" {
		if err := os.MkdirAll(opts.TraceDir, 0o755); err != nil {
			return nil, fmt.Errorf("server: the trace directory: %w", err)
		}
	}
	if opts.Providers == nil {
		opts.Providers = provider.NewRegistry()
		opts.Providers.Register("mock", provider.NewMock())
	}
	if opts.Builtins == nil {
		opts.Builtins = tools.NewBuiltins()
	}
	s := &Server{opts: opts, ceiling: opts.Permits, secrets: map[string]bool{}, runs: map[string]*run{}}
	s.exec = &exec.Verb{Depth: opts.ExecDepth, Env: childEnv(opts.Env), MaxProcesses: opts.MaxProcesses, MaxOutputBytes: opts.MaxExecOutputBytes}
	if s.ceiling == nil {
		s.ceiling = &spec.Permits{}
	}
	for _, n := range opts.SecretEnv {
		s.secrets[n] = true
	}
	if opts.AuthToken != "" {
		s.token = digest(opts.AuthToken)
	}
	s.log = &lockedWriter{w: opts.Logger}
	s.finally, s.abandon = context.WithCancel(context.Background())
	return s, nil
}

// runVerbs returns the verbs of one run and what to release when it ends:
// Options.Verbs when set, else the verbs of `nika run` over the shared
// registry, with the run's own MCP client.
func (s *Server) runVerbs() (map[string]planner.Verb, func()) {
	o := s.opts
	if o.Verbs != nil {
		return o.Verbs(), func() {}
	}
	var source tools.Source
	release := func() {}
	if o.MCP != nil {
		c := mcp.NewClient(o.MCP, mcp.Options{RunDir: o.RunDir, Getenv: o.Env, Version: o.Version})
		source, release = c, func() { c.Close() }
	}
	inf := &infer.Verb{Providers: o.Providers}
	if o.Builtins != nil {
		inf.Media = o.Builtins
	}
	return map[string]planner.Verb{
		"exec":   s.exec,
		"infer":  inf,
		"invoke": &invoke.Verb{Builtins: o.Builtins, Tools: source, Now: o.Clock},
		"agent":  &agent.Verb{Providers: o.Providers, Builtins: o.Builtins, Tools: source, Config: agent.Config{MaxParallelTools: o.MaxParallelTools}},
	}, release
}

// childEnv is the environment of exec children: enough to find programs
// and behave, and none of the server's keys.
func childEnv(lookup func(string) (string, bool)) []string {
	env := []string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ"} {
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// StopAdmitting is the first step of Shutdown, on its own so that a caller
// knows when it has happened: from its return, /readyz is 503 and every
// submission 503, and the queued runs are cancelled. It returns how many
// runs were running and how many queued runs it cancelled. Calling it again
// does nothing more.
func (s *Server) StopAdmitting() (running, cancelled int) {
	s.mu.Lock()
	s.draining = true
	queued := s.queue
	s.queue = nil
	for _, r := range queued {
		s.finishUnstarted(r)
	}
	running = s.running
	s.mu.Unlock()
	for _, r := range queued {
		s.logf("run %s cancelled while queued (shutting down)", r.id)
	}
	return running, len(queued)
}

// Shutdown stops the server: it refuses new runs, cancels queued ones,
// lets running ones finish until ctx ends, then cancels them and waits for
// them. It returns nil when every run drained, else an error wrapping
// ctx.Err(). HTTP handlers of finished runs keep working.
func (s *Server) Shutdown(ctx context.Context) error {
	s.StopAdmitting()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	n := 0
	for _, r := range s.runs {
		if r.state == stateRunning {
			r.cancel()
			n++
		}
	}
	s.mu.Unlock()
	s.logf("shutdown deadline reached; cancelling %d running runs", n)
	<-done
	return fmt.Errorf("server: %d runs cancelled at the shutdown deadline: %w", n, ctx.Err())
}

// Close cancels every run at once, abandoning their on_finally steps, and
// waits for them.
func (s *Server) Close() error {
	s.abandon()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Draining reports whether Shutdown or Close was called.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Active returns the number of running and queued runs.
func (s *Server) Active() (running, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.queue)
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "nika serve: "+format+"\n", args...)
}

// lockedWriter serialises the log lines of concurrent runs.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	if l.w == nil {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
