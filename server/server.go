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

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
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
	// Engine configures the engine every run executes on (engine.Options): the environment
	// (keys, secrets), the run directory, the providers (nil: the mock only; `nika serve` passes
	// engine.AllProviders), the MCP registry, the builtins, the limits, the verbs. Its zero
	// fields get the server's defaults: Clock from Clock below, and exec children an
	// environment of PATH and the like only (never the server's keys).
	Engine engine.Options

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
	// SecretEnv lists the environment variables env secrets may read (from Engine.Env).
	SecretEnv []string
	// Workflows is the directory "path" submissions are read from (no
	// escape); "": path submissions are refused.
	Workflows string
	// Check is passed to spec.CheckSource (default model, MCP servers).
	Check spec.CheckOptions

	Metrics  http.Handler   // served at /metrics; nil: 404
	Live     event.LiveSink // every run's live stream; nil: discarded
	TraceDir string         // "": no trace files; else one NDJSON file per run
	// StateDir keeps every run's submission, journal, events and report (durable.go): a server
	// started on it again takes its runs up. "": a private temporary directory, removed when the
	// server stops (runs still pause and take answers, but do not outlive the process).
	StateDir string
	Clock    func() time.Time
	Logger   io.Writer // one line per run transition; nil: discarded
	// Backend runs the admitted runs instead of Engine (backend.go); nil: in-process.
	Backend Backend
}

// Server runs submitted workflows. Create it with New; it is safe for
// concurrent use. Its goroutines end by Shutdown or Close.
type Server struct {
	opts    Options
	ceiling *spec.Permits
	secrets map[string]bool
	token   [32]byte // SHA-256 of AuthToken
	log     *lockedWriter

	// engine runs every run: its providers, builtins and exec verb are
	// shared, so its limiters and process bound hold for the whole server.
	engine *engine.Engine

	// finally is the context on_finally steps run under; Close cancels it.
	finally context.Context
	abandon context.CancelFunc

	// changes wakes the runs page's followers when a run is admitted, moves or ends.
	changes notifier
	// session signs the web view's session cookies (web_session.go).
	session sessionKey

	mu       sync.Mutex
	admitted int64 // runs admitted so far: each run's seq
	runs     map[string]*run
	queue    []*run   // FIFO of queued runs
	finished []string // ids of finished runs, oldest first
	retained int64    // bytes of events and reports the finished runs hold
	running  int
	draining bool
	wg       sync.WaitGroup // one per executing run

	state    string // the state directory (durable.go)
	ownState bool   // a temporary one of this server's, removed when it stops
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
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	eo := opts.Engine
	if eo.Env == nil {
		eo.Env = os.LookupEnv
	}
	if eo.Clock == nil {
		eo.Clock = opts.Clock
	}
	if eo.Providers == nil {
		eo.Providers = engine.MockProviders()
	}
	if eo.ExecEnv == nil {
		eo.ExecEnv = childEnv(eo.Env)
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
	s := &Server{opts: opts, ceiling: opts.Permits, secrets: map[string]bool{}, runs: map[string]*run{}}
	eo.AllowSecret = s.allowSecret
	eng, err := engine.New(eo)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.engine = eng
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
	s.changes.ch = make(chan struct{})
	if err := s.session.init(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.finally, s.abandon = context.WithCancel(context.Background())
	if s.state, s.ownState, err = openState(opts.StateDir); err != nil {
		return nil, fmt.Errorf("server: the state directory: %w", err)
	}
	if !s.ownState {
		if err := s.recover(); err != nil {
			return nil, fmt.Errorf("server: taking up the runs of the state directory: %w", err)
		}
	}
	return s, nil
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
	s.changes.poke() // the runs pages' streams end once nothing runs
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
	defer s.removeOwnState()
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

// removeOwnState removes a temporary state directory once every run has stopped.
func (s *Server) removeOwnState() {
	if s.ownState {
		os.RemoveAll(s.state)
	}
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

// notifier wakes everyone waiting on it at once: poke closes the current channel and makes the
// next. Followers re-read what they follow after every wake, so pokes coalesce.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) poke() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
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
