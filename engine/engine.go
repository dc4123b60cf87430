package engine

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent"
	"github.com/nikahq/nika/verbs/exec"
	"github.com/nikahq/nika/verbs/infer"
	"github.com/nikahq/nika/verbs/invoke"
)

// Options configure an Engine. The zero value runs on the mock provider only, with no MCP
// servers, in the working directory, reading the process environment.
type Options struct {
	// Env reads the environment: keys and base URLs (through Providers), secrets, the MCP
	// servers' inherited variables. Nil: os.LookupEnv.
	Env func(string) (string, bool)
	// RunDir is every run's directory (permits.fs anchors, MCP servers' working directory);
	// "": the working directory.
	RunDir string
	// Version is announced to MCP servers; "": "dev".
	Version string
	// Clock is the time of the planner and of the invoke verb's builtins; nil: time.Now.
	Clock func() time.Time

	// Providers is the provider set every run shares (its limiters see the whole load):
	// AllProviders for a service, OnDemandProviders (the default when nil) for one run.
	Providers *Providers
	// MCP is the engine's MCP registry (LoadMCP); the zero value: no MCP servers (their tools
	// are NIKA-INVOKE-001).
	MCP MCP
	// Builtins runs the nika: tools; nil: tools.NewBuiltins().
	Builtins *tools.Builtins
	// Terminal is where nika:prompt asks (set on Builtins); nil: no terminal, prompts answer their
	// default.
	Terminal *tools.Terminal

	Limits Limits
	// ExecEnv is the base environment of exec children as "KEY=value" entries; nil: the
	// process's own (os.Environ at each start).
	ExecEnv []string

	// AllowSecret, when set, is a service's rule on which secrets a workflow may read: a
	// non-nil error refuses the run (Prepare, StageSecrets) before any secret is read.
	AllowSecret func(*spec.SecretDecl) *spec.Error

	// Verbs, when set, builds the verbs of one run instead of the standard ones (tests).
	Verbs func() map[string]planner.Verb
}

// Engine runs prepared workflows. It is safe for concurrent use over distinct compiled workflows
// (see Prepare): runs share its providers, builtins and exec verb (whose process bound thus holds
// for all of them).
type Engine struct {
	opts Options
	exec *exec.Verb
}

// New returns an Engine over opts, filling the defaults of the fields left zero.
func New(opts Options) (*Engine, error) {
	if err := opts.Limits.Check(); err != nil {
		return nil, err
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
			return nil, fmt.Errorf("engine: the run directory: %w", err)
		}
		opts.RunDir = wd
	}
	if opts.Providers == nil {
		opts.Providers = OnDemandProviders()
	}
	if opts.Builtins == nil {
		opts.Builtins = tools.NewBuiltins()
	}
	if opts.Terminal != nil {
		opts.Builtins.Terminal = opts.Terminal
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	l := opts.Limits
	return &Engine{opts: opts, exec: &exec.Verb{Depth: l.ExecDepth, Env: opts.ExecEnv, MaxProcesses: l.MaxProcesses, MaxOutputBytes: l.MaxExecOutputBytes}}, nil
}

// Providers is the engine's provider set.
func (e *Engine) Providers() *Providers { return e.opts.Providers }

// RunDir is the engine's run directory.
func (e *Engine) RunDir() string { return e.opts.RunDir }

// verbs returns the verbs of one run and what to release when it ends (the run's MCP client).
func (e *Engine) verbs() (map[string]planner.Verb, func()) {
	o := e.opts
	if o.Verbs != nil {
		return o.Verbs(), func() {}
	}
	source, release := o.MCP.source(o.RunDir, o.Version, o.Env)
	reg := o.Providers.Registry
	return map[string]planner.Verb{
		"exec":   e.exec,
		"infer":  &infer.Verb{Providers: reg, Media: o.Builtins},
		"invoke": &invoke.Verb{Builtins: o.Builtins, Tools: source, Now: o.Clock},
		"agent":  &agent.Verb{Providers: reg, Builtins: o.Builtins, Tools: source, Config: agent.Config{MaxParallelTools: o.Limits.MaxParallelTools}},
	}, release
}

// RunOptions are what one execution adds to a prepared run.
type RunOptions struct {
	Seed uint64 // retry jitter seed (--seed)
	// Canonical receives the canonical stream (already masked by the caller's sinks, see
	// Prepared.Mask); Live the live stream; both may be nil.
	Canonical event.Sink
	Live      event.LiveSink
	// Finally is the context on_finally steps run under (a second interrupt cancels it);
	// nil: they are bounded by their timeout only.
	Finally context.Context
	// Journal records the run and remembers what an earlier process of it journaled
	// (durable.go); nil: none. Execute records the run's end in it; the caller closes it.
	Journal *journal.Run
}

// Execute runs p to its end under ctx and returns the planner's result. The run's MCP servers
// are stopped before it returns, an interrupted run's included.
func (e *Engine) Execute(ctx context.Context, p *Prepared, o RunOptions) planner.Result {
	verbs, release := e.verbs()
	defer release()
	opts := planner.Options{
		Config:    planner.Config{RunID: p.ID, Seed: o.Seed, MaxParallelTasks: e.opts.Limits.MaxParallelTasks, RunDir: e.opts.RunDir},
		Verbs:     verbs,
		Canonical: o.Canonical,
		Live:      o.Live,
		Clock:     e.opts.Clock,
		Finally:   o.Finally,
	}
	if o.Journal != nil {
		opts.Memory = o.Journal
	}
	res := planner.Run(ctx, p.Workflow, p.Inputs, opts)
	if o.Journal != nil {
		o.Journal.End(res.State, res.Paused, e.opts.Clock())
	}
	return res
}

// Terminal is where nika:prompt asks (Options.Terminal); nil without one. A caller may redirect
// its In and Out before the first run (the live view takes the line while a question is asked).
func (e *Engine) Terminal() *tools.Terminal { return e.opts.Builtins.Terminal }
