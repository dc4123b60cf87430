// Package mcp is nika's MCP client (LANGUAGE.md §5.3, DECISIONS.md D7, D37) on the official Go SDK:
// the server registry (Registry, read from .nika/mcp_servers.json or NIKA_MCP_CONFIG) and one
// Client per run that starts the registry's stdio servers lazily, lists and calls their tools, and
// shuts every server down, process group and all, when the run ends. *Client is the run's
// tools.Source: `invoke: {tool: mcp:…}` and the agent universe both go through it.
//
// # Decisions taken where the design is silent
//
//   - A server runs with a small inherited environment (HOME, LOGNAME, PATH, SHELL, TERM, USER,
//     TMPDIR, LANG, LC_ALL, LC_CTYPE, TZ), then its registry `env` on top, as other MCP clients do:
//     the engine's own environment holds provider keys that a third-party server has no business
//     reading. Its working directory is the run directory; its stderr is kept (the last 4 KiB)
//     for NIKA-MCP-001 messages, never printed.
//   - "Not configured" (NIKA-MCP-001, not transient) is a registry entry without a `command`, an
//     entry that does not decode, or a command that does not exist; so is a server that answers
//     tools/list with an error, or with a list nika cannot read (its session is kept). Every
//     other failure to start, a crash and a dropped connection are NIKA-MCP-001, transient.
//   - One session per server per run, shared by every task; a session that dies is dropped, and
//     the next call starts the server again (this is what makes NIKA-MCP-001 worth a retry).
//     Concurrent first calls start a server once; a start that fails is reported to the calls
//     that waited for it, and a later call tries again.
//   - tools/list is read once per session (every page) and kept; a tool whose name is not a valid
//     nika tool segment ([A-Za-z0-9_-]+) cannot be named in a workflow and is left out.
//   - Arguments are checked against the tool's input schema with spec/schema; a schema that does
//     not compile there (an external $ref, an unknown $schema) is not checked by nika, and the
//     server remains the judge.
//   - A JSON-RPC error answer to tools/call (as opposed to an `isError` result) is NIKA-MCP-002
//     too: the server understood the call and refused it. A result the SDK cannot decode (a
//     content type it does not know, say) from a server that still answers a ping is
//     NIKA-INVOKE-003, not transient, and the session is kept: the server has not crashed.
//   - Output: with no content blocks at all, "all blocks are text" holds and the output is "".
//   - Progress (CallProgress): a tools/call carries a progress token ("nika-<n>", unique in the
//     run) only when the caller takes progress; a call made through Call asks for none. A
//     notifications/progress is delivered only to the call whose token it names, from the
//     session that call went to, and only until the call returns: the SDK hands the answer to
//     the call as soon as it is read, so notifications a server sends right before its answer
//     may still be queued then, and they are dropped rather than reported after the call ended.
//   - Close lets each server exit by itself for Options.Grace after closing its stdin (the MCP
//     stdio shutdown), then kills its process group whatever happened, so grandchildren die too.
//     On Linux a server that exits by itself has its group killed at once: a grandchild that
//     holds its stdout would otherwise keep its session, and the calls in flight, waiting.
//   - On Linux a server's group is a watched one (tools/procgroup): when the engine dies, even
//     by SIGKILL, the group's watcher kills the server and its grandchildren. The group id is
//     then the watcher's pid, not the server's. Elsewhere a SIGKILLed engine leaves its
//     servers running (see tools/procgroup, "Limits").
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/procgroup"
)

// Codes used by this package.
const (
	CodeUnknown     = "NIKA-INVOKE-001" // unregistered server, unlisted tool
	CodeArgs        = "NIKA-INVOKE-002" // arguments fail the tool's input schema
	CodeFailed      = "NIKA-INVOKE-003" // an output with no JSON form
	CodeUnavailable = "NIKA-MCP-001"    // not configured, cannot start, crashed, connection lost
	CodeToolError   = "NIKA-MCP-002"    // an isError result (or a JSON-RPC error answer)
	codeCancelled   = "NIKA-CANCEL-001"
)

// DefaultGrace is how long Close lets a server exit after closing its stdin.
const DefaultGrace = time.Second

// DefaultStartTimeout is Options.StartTimeout's default.
const DefaultStartTimeout = 30 * time.Second

// errStartTimeout is the cause of a start abandoned at StartTimeout.
var errStartTimeout = errors.New("start timed out")

// protocolVersion is the version nika asks for: the initialize handshake every stdio server
// speaks, rather than the stateless discovery of later versions that many do not.
const protocolVersion = "2025-11-25"

// inherited are the variables a server gets from the engine's environment.
var inherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// Options configure a Client. The zero value starts the registry's commands in the working
// directory with the process environment.
type Options struct {
	// RunDir is the servers' working directory; "" means the process's.
	RunDir string
	// Getenv reads the engine's environment for the inherited variables; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Grace is how long Close waits for a server to exit by itself once its stdin is closed,
	// before it kills the server's process group; 0 means DefaultGrace.
	Grace time.Duration
	// Version is the client version announced to servers; "" means "dev".
	Version string
	// StartTimeout bounds a server's start, up to the end of the MCP handshake; 0 means
	// DefaultStartTimeout. A command that never speaks MCP would otherwise hold every call
	// waiting for it until their own contexts end (forever for a task without a timeout).
	StartTimeout time.Duration
	// Dial, when set, replaces starting the registry's command: it returns the transport to one
	// registered server (tests use in-memory transports; an embedding program may speak to
	// servers it runs itself). There is then no process for Close to kill.
	Dial func(ctx context.Context, name string, s Server) (sdk.Transport, error)
}

// Client is the MCP client of one run (a tools.Source). It is safe for concurrent use; Close it
// when the run ends.
type Client struct {
	reg      *Registry
	opts     Options
	sdk      *sdk.Client
	closing  context.Context // done once Close starts: starts in flight are abandoned
	stopping context.CancelFunc

	mu      sync.Mutex
	closed  bool
	servers map[string]*server
	wg      sync.WaitGroup // starts, watchers and shutdowns in flight

	progMu   sync.Mutex
	progSeq  uint64
	progress map[string]*progressSink // by progress token, for the calls in flight that take progress
}

// progressSink is where the progress notifications of one call in flight go.
type progressSink struct {
	sess *sdk.ClientSession // the session the call went to: no other may report on it
	mu   sync.Mutex
	f    func(progress, total float64, message string) // nil once the call has returned
}

// server is the per-run state of one registered server.
type server struct {
	sem      chan struct{} // held by the one call that is starting the server
	conn     *conn         // the live session, nil before the first start or after a death
	attempts int           // starts finished, for waiters to tell a fresh failure from an old one
	lastErr  *spec.Error   // the failure of the last start, nil after a success or a cancellation
}

var _ tools.Source = (*Client)(nil)

// NewClient returns the client of one run over a registry (nil means an empty one). It starts
// nothing.
func NewClient(reg *Registry, opts Options) *Client {
	if reg == nil {
		reg = &Registry{path: DefaultPath, servers: map[string]Server{}, invalid: map[string]string{}}
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	closing, stopping := context.WithCancel(context.Background())
	c := &Client{
		reg:      reg,
		opts:     opts,
		closing:  closing,
		stopping: stopping,
		servers:  map[string]*server{},
		progress: map[string]*progressSink{},
	}
	// No capabilities: nika serves no roots, sampling or elicitation. A server that sees a
	// roots capability may replace its own configured roots with the client's (none).
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "nika", Version: opts.Version},
		&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}, ProgressNotificationHandler: c.onProgress})
	return c
}

// Servers returns the registry's server names, sorted. It starts nothing.
func (c *Client) Servers() []string { return c.reg.Names() }

// List returns the tools of one server, with canonical names, sorted by name. It starts the
// server if it is not running.
func (c *Client) List(ctx context.Context, server string) ([]tools.Def, error) {
	cn, err := c.connFor(ctx, server, "")
	if err != nil {
		return nil, err
	}
	ts, err := cn.list(ctx)
	if err != nil {
		if err.Code == CodeUnavailable && err.Transient { // the session is gone
			c.lost(server, cn)
		}
		return nil, err
	}
	defs := make([]tools.Def, len(ts.order))
	for i, name := range ts.order {
		defs[i] = ts.byName[name].def
	}
	return defs, nil
}

// Call calls one MCP tool by canonical name (see tools.Source).
func (c *Client) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return c.CallProgress(ctx, name, args, nil)
}

// CallProgress is Call that also asks the server for progress (a progress token in the request's
// _meta) and passes each notifications/progress the server sends for this call to progress:
// the progress so far, the total (0 when unknown) and the server's message, as sent. progress
// is called from the session's handler goroutine, in the order the server sent them, never
// concurrently and never after CallProgress returns; it must not block (the session handles
// nothing else the server sends meanwhile), and a panic in it is recovered and ignored. A nil
// progress is Call.
func (c *Client) CallProgress(ctx context.Context, name string, args map[string]any, progress func(progress, total float64, message string)) (any, error) {
	server, tool, ok := splitName(name)
	if !ok {
		return nil, spec.NewError(CodeUnknown, fmt.Sprintf("unknown tool %q: an MCP tool is named mcp:<server>/<tool>", name), map[string]any{"tool": name})
	}
	if ctx.Err() != nil {
		return nil, tools.CancelError(ctx)
	}
	cn, serr := c.connFor(ctx, server, name)
	if serr != nil {
		return nil, serr
	}
	ts, serr := cn.list(ctx)
	if serr != nil {
		if serr.Code == CodeUnavailable && serr.Transient { // the session is gone
			c.lost(server, cn)
		}
		return nil, serr
	}
	t, ok := ts.byName[tool]
	if !ok {
		return nil, spec.NewError(CodeUnknown, fmt.Sprintf("MCP server %q lists no tool %q — use one it lists: %s", server, tool, listed(ts.order)),
			map[string]any{"tool": name, "server": server})
	}
	if args == nil {
		args = map[string]any{}
	}
	plain, err := tools.JSONValue(args)
	if err != nil {
		return nil, spec.NewError(CodeArgs, fmt.Sprintf("invalid arguments for %s: %v", name, err),
			map[string]any{"tool": name, "violations": []any{map[string]any{"path": "", "message": err.Error()}}})
	}
	if sch := t.schema(); sch != nil {
		if vs := sch.Validate(plain); len(vs) > 0 {
			return nil, argsError(name, vs)
		}
	}
	params := &sdk.CallToolParams{Name: tool, Arguments: plain}
	var stop func()
	if progress != nil {
		stop = c.watchProgress(params, cn.sess, progress)
	}
	res, err := cn.sess.CallTool(ctx, params)
	if stop != nil {
		stop()
	}
	if err != nil {
		e := cn.callError(ctx, name, err, c.opts.Grace)
		if e.Code == CodeUnavailable {
			c.lost(server, cn)
		}
		return nil, e
	}
	if res.IsError {
		full, line := errorText(res)
		return nil, spec.NewError(CodeToolError, line, map[string]any{"tool": name, "text": full})
	}
	out, err := output(res)
	if err != nil {
		return nil, spec.NewError(CodeFailed, fmt.Sprintf("%s returned a value with no JSON form: %v", name, err), map[string]any{"tool": name}).Wrap(err)
	}
	return out, nil
}

// watchProgress gives a call's params a fresh progress token and routes the notifications that
// name it, from sess, to f until the returned stop is called.
func (c *Client) watchProgress(params *sdk.CallToolParams, sess *sdk.ClientSession, f func(progress, total float64, message string)) (stop func()) {
	s := &progressSink{sess: sess, f: f}
	c.progMu.Lock()
	c.progSeq++
	token := fmt.Sprintf("nika-%d", c.progSeq)
	c.progress[token] = s
	c.progMu.Unlock()
	params.SetProgressToken(token)
	return func() {
		c.progMu.Lock()
		delete(c.progress, token)
		c.progMu.Unlock()
		s.mu.Lock() // waits for a delivery in progress
		s.f = nil
		s.mu.Unlock()
	}
}

// onProgress is the SDK's progress handler: it runs on the session's handler goroutine, one
// notification at a time, in the order the server sent them.
func (c *Client) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return // nika's tokens are strings: not one of its calls
	}
	c.progMu.Lock()
	s := c.progress[token]
	c.progMu.Unlock()
	if s == nil || s.sess != req.Session {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	defer func() { _ = recover() }()
	s.f(req.Params.Progress, req.Params.Total, req.Params.Message)
}

// Close shuts down every server of the run: it abandons starts in flight, closes each session
// (the server's stdin), waits up to Options.Grace for the server to exit, then kills the
// server's whole process group with SIGKILL (D37). It returns once every server process has
// been reaped and every group has been sent the kill, which cannot be caught: what the servers
// started dies with them. Calls made after it fail with NIKA-MCP-001. It is safe to call more
// than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	var live []*conn
	for _, s := range c.servers {
		if s.conn != nil {
			live = append(live, s.conn)
			s.conn = nil
		}
	}
	c.mu.Unlock()
	c.stopping()
	var wg sync.WaitGroup
	for _, cn := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn.shutdown(c.opts.Grace)
		}()
	}
	wg.Wait()
	c.wg.Wait()
	return nil
}

// splitName splits "mcp:<server>/<tool>" at the last "/": a tool name never holds one, a
// registry's server name may.
func splitName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp:")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", "", false
	}
	server, tool = rest[:i], rest[i+1:]
	return server, tool, server != "" && tool != ""
}

// connFor returns the live session of a server, starting the server when there is none. tool
// is the canonical tool name for error details ("" from List).
func (c *Client) connFor(ctx context.Context, name, tool string) (*conn, *spec.Error) {
	details := func() map[string]any {
		d := map[string]any{"server": name}
		if tool != "" {
			d["tool"] = tool
		}
		return d
	}
	cfg, ok, problem := c.reg.Lookup(name)
	if !ok {
		msg := fmt.Sprintf("MCP server %q is not registered in %s — register it there", name, c.reg.Path())
		if names := c.reg.Names(); len(names) > 0 {
			msg += ", or use one of: " + strings.Join(names, ", ")
		}
		return nil, spec.NewError(CodeUnknown, msg, details())
	}
	if problem != "" {
		e := spec.NewError(CodeUnavailable, fmt.Sprintf("MCP server %q is not configured: %s — fix its entry in %s", name, problem, c.reg.Path()), details())
		e.Transient = false
		return nil, e
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, closedError(name, details())
	}
	sv := c.servers[name]
	if sv == nil {
		sv = &server{sem: make(chan struct{}, 1)}
		c.servers[name] = sv
	}
	if cn := sv.conn; cn != nil {
		c.mu.Unlock()
		return cn, nil
	}
	seen := sv.attempts
	c.mu.Unlock()

	select {
	case sv.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, tools.CancelError(ctx)
	}
	defer func() { <-sv.sem }()
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, closedError(name, details())
	case sv.conn != nil: // another call started it while this one waited
		cn := sv.conn
		c.mu.Unlock()
		return cn, nil
	case sv.attempts != seen && sv.lastErr != nil: // the start this call waited for failed
		e := *sv.lastErr
		e.Details = maps.Clone(e.Details)
		c.mu.Unlock()
		if tool != "" {
			e.Details["tool"] = tool
		}
		return nil, &e
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()

	cn, err := c.start(ctx, name, cfg)
	c.mu.Lock()
	sv.attempts++
	sv.lastErr = nil
	if err != nil {
		if err.Code != codeCancelled {
			// Waiters get copies of this one; the caller's own copy gets its tool name.
			keep := *err
			keep.Details = maps.Clone(err.Details)
			sv.lastErr = &keep
		}
		c.mu.Unlock()
		if tool != "" {
			err.Details["tool"] = tool
		}
		return nil, err
	}
	if c.closed {
		c.mu.Unlock()
		cn.shutdown(c.opts.Grace)
		return nil, closedError(name, details())
	}
	sv.conn = cn
	c.wg.Add(1)
	c.mu.Unlock()
	go c.watch(sv, cn)
	return cn, nil
}

func closedError(name string, details map[string]any) *spec.Error {
	e := spec.NewError(CodeUnavailable, fmt.Sprintf("MCP server %q is not available: the run's MCP client is closed", name), details)
	e.Transient = false
	return e
}

// lost drops a session that failed under a call (NIKA-MCP-001), so the next call starts the
// server again at once rather than meet the corpse before watch has seen it.
func (c *Client) lost(name string, cn *conn) {
	c.mu.Lock()
	sv := c.servers[name]
	own := sv != nil && sv.conn == cn
	if own {
		sv.conn = nil
		c.wg.Add(1) // Close sets closed under c.mu before it waits
	}
	c.mu.Unlock()
	if own {
		go func() {
			defer c.wg.Done()
			cn.shutdown(c.opts.Grace)
		}()
	}
}

// watch drops a session once it ends by itself (the server exited or closed its stdout), so the
// next call starts the server again, and reaps what is left of it.
func (c *Client) watch(sv *server, cn *conn) {
	defer c.wg.Done()
	_ = cn.sess.Wait()
	close(cn.gone)
	c.mu.Lock()
	own := sv.conn == cn
	if own {
		sv.conn = nil
	}
	c.mu.Unlock()
	if own {
		cn.shutdown(c.opts.Grace)
	}
}

// start starts one server and opens its session. ctx bounds the start (the handshake
// included); so does Close.
func (c *Client) start(ctx context.Context, name string, cfg Server) (*conn, *spec.Error) {
	timeout := c.opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	startCtx, cancel := context.WithTimeoutCause(ctx, timeout, errStartTimeout)
	defer cancel()
	defer context.AfterFunc(c.closing, cancel)()
	cn := &conn{name: name, grace: c.opts.Grace, gone: make(chan struct{}), listSem: make(chan struct{}, 1)}
	var tr sdk.Transport
	if c.opts.Dial != nil {
		var err error
		if tr, err = c.opts.Dial(startCtx, name, cfg); err != nil {
			return nil, c.startError(ctx, cn, name, err)
		}
	} else {
		cn.stderr = &tail{}
		cn.proc = &proc{}
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Dir = c.opts.RunDir
		cmd.Env = c.environ(cfg.Env)
		cmd.Stderr = cn.stderr
		// A grandchild holding stderr open must not keep Wait (and so Close) blocked.
		cmd.WaitDelay = c.opts.Grace
		// The server's group is a watched one, so it dies with the engine even after a SIGKILL
		// (tools/procgroup); where there is no watcher, a group of the server's own.
		if grp, err := procgroup.New(); err == nil {
			grp.Join(cmd)
			cn.proc.grp = grp
		} else {
			setGroup(cmd)
		}
		tr = &procTransport{inner: &sdk.CommandTransport{Command: cmd, TerminateDuration: c.opts.Grace}, proc: cn.proc}
		// An abandoned start kills the server at once, so the handshake returns now rather
		// than after the SDK's own shutdown grace.
		defer context.AfterFunc(startCtx, cn.proc.kill)()
	}
	sess, err := c.sdk.Connect(startCtx, tr, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		if cn.proc != nil {
			cn.proc.kill() // whatever the half-started server left behind
		}
		if ctx.Err() == nil && errors.Is(context.Cause(startCtx), errStartTimeout) {
			err = fmt.Errorf("it did not complete the MCP handshake within %s (is its command an MCP server on stdio?): %w", timeout, err)
		}
		return nil, c.startError(ctx, cn, name, err)
	}
	cn.sess = sess
	return cn, nil
}

func (c *Client) startError(ctx context.Context, cn *conn, name string, err error) *spec.Error {
	if ctx.Err() != nil {
		return tools.CancelError(ctx)
	}
	if c.closing.Err() != nil {
		return closedError(name, map[string]any{"server": name})
	}
	d := map[string]any{"server": name}
	msg := fmt.Sprintf("MCP server %q could not start: %v", name, err)
	notFound := errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
	if notFound {
		msg = fmt.Sprintf("MCP server %q is not configured: %v — fix its command in %s", name, err, c.reg.Path())
	}
	msg += cn.stderrNote(d)
	e := unavailable(msg, d).Wrap(err)
	e.Transient = !notFound
	return e
}

// unavailable is a NIKA-MCP-001 that a retry may cure. The registry marks the code "transient
// unless not configured", so NewError alone leaves it non-transient.
func unavailable(msg string, details map[string]any) *spec.Error {
	e := spec.NewError(CodeUnavailable, msg, details)
	e.Transient = true
	return e
}

// environ is a server's environment: the inherited variables, then its registry env.
func (c *Client) environ(extra map[string]string) []string {
	env := make([]string, 0, len(inherited)+len(extra))
	for _, k := range inherited {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := c.opts.Getenv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// conn is one session with one server.
type conn struct {
	name   string
	sess   *sdk.ClientSession
	proc   *proc // nil for a Dial transport
	stderr *tail // nil for a Dial transport
	gone   chan struct{}
	down   sync.Once
	grace  time.Duration // how long a probe waits for the server's answer

	listSem chan struct{} // held by the one call listing the tools
	mu      sync.Mutex
	tools   *toolSet // nil until listed
}

// toolSet is a server's tools/list, kept for the session.
type toolSet struct {
	order  []string // tool names, sorted
	byName map[string]*tool
}

// tool is one listed tool and its compiled input schema.
type tool struct {
	def  tools.Def
	doc  any
	once sync.Once
	sch  *schema.Schema
}

// schema returns the compiled input schema, nil when there is none nika can apply.
func (t *tool) schema() *schema.Schema {
	t.once.Do(func() {
		if t.doc == nil {
			return
		}
		if s, err := schema.Compile(t.doc); err == nil {
			t.sch = s
		}
	})
	return t.sch
}

// list returns the server's tools, reading every page of tools/list once per session.
func (cn *conn) list(ctx context.Context) (*toolSet, *spec.Error) {
	cn.mu.Lock()
	ts := cn.tools
	cn.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	select {
	case cn.listSem <- struct{}{}:
	case <-ctx.Done():
		return nil, tools.CancelError(ctx)
	}
	defer func() { <-cn.listSem }()
	cn.mu.Lock()
	ts = cn.tools
	cn.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	ts = &toolSet{byName: map[string]*tool{}}
	seen := map[string]bool{}
	cursor := ""
	for {
		res, err := cn.sess.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			if ctx.Err() != nil {
				return nil, tools.CancelError(ctx)
			}
			d := map[string]any{"server": cn.name}
			if !errors.Is(err, sdk.ErrConnectionClosed) {
				// A server that still answers refused the list, or sent one nika cannot read: a
				// retry would meet the same answer.
				answered, _ := cn.probe(ctx, cn.grace)
				if ctx.Err() != nil {
					return nil, tools.CancelError(ctx)
				}
				if answered {
					return nil, spec.NewError(CodeUnavailable, fmt.Sprintf("MCP server %q cannot list its tools: %v", cn.name, err), d).Wrap(err)
				}
			}
			return nil, unavailable(fmt.Sprintf("MCP server %q failed to list its tools: %v%s", cn.name, err, cn.stderrNote(d)), d).Wrap(err)
		}
		for _, t := range res.Tools {
			if t == nil || !validTool(t.Name) {
				continue
			}
			if _, dup := ts.byName[t.Name]; dup {
				continue
			}
			params, doc, err := inputSchema(t.InputSchema)
			if err != nil {
				continue
			}
			ts.byName[t.Name] = &tool{def: tools.Def{Name: "mcp:" + cn.name + "/" + t.Name, Description: t.Description, Params: params}, doc: doc}
			ts.order = append(ts.order, t.Name)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return nil, unavailable(fmt.Sprintf("MCP server %q returned the tools/list cursor %q twice", cn.name, res.NextCursor),
				map[string]any{"server": cn.name})
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	sort.Strings(ts.order)
	cn.mu.Lock()
	cn.tools = ts
	cn.mu.Unlock()
	return ts, nil
}

// inputSchema returns a tool's input schema as raw JSON (for the model) and as plain values
// (for the validator). A missing schema is an empty object schema.
func inputSchema(s any) (json.RawMessage, any, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	doc, err := tools.JSONValue(s)
	if err != nil {
		return nil, nil, err
	}
	return b, doc, nil
}

// validTool reports whether a server's tool name can be the tool segment of a nika name.
func validTool(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// callError maps a failed tools/call. An error that is not the session closing can be the
// server's answer (a JSON-RPC error, or a result the SDK cannot decode) or the session breaking
// under the call (the SDK fails the calls in flight with whatever stopped its reading); a ping
// tells them apart, waiting at most wait for the answer.
func (cn *conn) callError(ctx context.Context, name string, err error, wait time.Duration) *spec.Error {
	d := map[string]any{"tool": name, "server": cn.name}
	var wire *jsonrpc.Error
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed):
	case ctx.Err() != nil:
		return tools.CancelError(ctx)
	default:
		answered, broken := cn.probe(ctx, wait)
		if ctx.Err() != nil {
			return tools.CancelError(ctx)
		}
		if errors.As(err, &wire) && !broken {
			d["rpc_code"] = wire.Code
			return spec.NewError(CodeToolError, fmt.Sprintf("%s failed: %s", name, wire.Message), d).Wrap(err)
		}
		if answered {
			return spec.NewError(CodeFailed, fmt.Sprintf("%s returned a result nika cannot read: %v", name, err), d).Wrap(err)
		}
	}
	msg := fmt.Sprintf("MCP server %q stopped answering while running %s: %v", cn.name, name, err)
	return unavailable(msg+cn.stderrNote(d), d).Wrap(err)
}

// probe pings the server: answered when it answers (a JSON-RPC error included), broken when the
// session cannot carry a request any more. Neither means no answer within wait.
func (cn *conn) probe(ctx context.Context, wait time.Duration) (answered, broken bool) {
	if cn.dead() {
		return false, true
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := cn.sess.Ping(pctx, nil)
	var wire *jsonrpc.Error
	switch {
	case err == nil, errors.As(err, &wire) && !errors.Is(err, sdk.ErrConnectionClosed):
		return true, false
	case pctx.Err() != nil:
		return false, false
	}
	return false, true
}

// dead reports whether the session has ended.
func (cn *conn) dead() bool {
	select {
	case <-cn.gone:
		return true
	default:
		return false
	}
}

// stderrNote is the last line the server wrote on stderr, for a message, and puts the kept tail
// in details.stderr.
func (cn *conn) stderrNote(d map[string]any) string {
	if cn.stderr == nil {
		return ""
	}
	all := strings.TrimSpace(cn.stderr.String())
	if all == "" {
		return ""
	}
	d["stderr"] = all
	last := all[strings.LastIndexByte(all, '\n')+1:]
	if r := []rune(last); len(r) > 200 {
		last = string(r[:200]) + "…"
	}
	return fmt.Sprintf(" (its stderr ends: %s)", strings.TrimSpace(last))
}

// shutdown closes the session, gives the server the grace to exit, then kills its process
// group. It runs once per session.
func (cn *conn) shutdown(grace time.Duration) {
	cn.down.Do(func() {
		done := make(chan struct{})
		go func() {
			_ = cn.sess.Close()
			close(done)
		}()
		if cn.proc != nil {
			t := time.NewTimer(grace)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
			cn.proc.kill()
		}
		<-done
	})
}

// listed names a server's tools for a message (the first 20).
func listed(names []string) string {
	if len(names) == 0 {
		return "(it lists none)"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(", … (%d more)", len(names)-20)
	}
	return strings.Join(names, ", ")
}

// argsError is the NIKA-INVOKE-002 of arguments that fail the input schema.
func argsError(name string, vs []schema.Violation) *spec.Error {
	list := make([]any, len(vs))
	for i, v := range vs {
		list[i] = map[string]any{"path": v.Path, "message": v.Message}
	}
	first := vs[0].Message
	if vs[0].Path != "" {
		first = "at " + vs[0].Path + ": " + first
	}
	msg := fmt.Sprintf("invalid arguments for %s: %s", name, first)
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return spec.NewError(CodeArgs, msg, map[string]any{"tool": name, "violations": list})
}

// output applies LANGUAGE.md §5.3: structuredContent when present; otherwise, when every block
// is text, the texts joined with "\n"; otherwise the content blocks as JSON.
func output(res *sdk.CallToolResult) (any, error) {
	if res.StructuredContent != nil {
		return tools.JSONValue(res.StructuredContent)
	}
	if texts, ok := allText(res.Content); ok {
		return strings.Join(texts, "\n"), nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, err
	}
	var blocks any
	if err := json.Unmarshal(b, &blocks); err != nil {
		return nil, err
	}
	return tools.JSONValue(blocks)
}

func allText(content []sdk.Content) ([]string, bool) {
	texts := make([]string, 0, len(content))
	for _, c := range content {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			return nil, false
		}
		texts = append(texts, t.Text)
	}
	return texts, true
}

// errorText is the text of an isError result (its texts joined with "\n", else its blocks as
// JSON), whole, for details.text, and on one line for the message.
func errorText(res *sdk.CallToolResult) (full, line string) {
	if texts, ok := allText(res.Content); ok {
		full = strings.Join(texts, "\n")
	} else if b, err := json.Marshal(res.Content); err == nil {
		full = string(b)
	}
	line = strings.Join(strings.Fields(full), " ")
	if line == "" {
		line = "the tool reported an error without a message"
	}
	return full, line
}

// tail keeps the last bytes a server wrote on stderr.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append([]byte(nil), t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// procTransport is the SDK's command transport that also records the server's pid, so Close
// (and an abandoned start) can kill its process group.
type procTransport struct {
	inner *sdk.CommandTransport
	proc  *proc
}

func (t *procTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if p := t.inner.Command.Process; p != nil {
		t.proc.set(p.Pid)
		onExit(p.Pid, t.proc.kill)
	}
	return conn, err
}

// proc is a started server process and its process group: the watched group grp, or (grp nil)
// a group of its own that it leads.
type proc struct {
	grp *procgroup.Group // set before the start, never changed
	mu  sync.Mutex
	pid int // 0 until started
}

func (p *proc) set(pid int) {
	p.mu.Lock()
	p.pid = pid
	p.mu.Unlock()
}

// kill kills the whole process group (D37), and reaps the group's watcher. A watched group is
// killed even before the server started (its watcher is there from the start), once.
func (p *proc) kill() {
	if p.grp != nil {
		p.grp.Kill()
		return
	}
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid > 0 {
		killGroup(pid)
	}
}

// Pid returns the server process id of a running session, 0 when the server is not running or
// has no process. For tests and diagnostics. Its process group is its watcher's (see
// tools/procgroup), or its own where there is no watcher.
func (c *Client) Pid(server string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sv := c.servers[server]; sv != nil && sv.conn != nil && sv.conn.proc != nil {
		sv.conn.proc.mu.Lock()
		defer sv.conn.proc.mu.Unlock()
		return sv.conn.proc.pid
	}
	return 0
}
