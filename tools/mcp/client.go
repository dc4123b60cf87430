package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
)

// Codes used by this package.
const (
	CodeUnknown     = spec.CodeInvokeUnknown  // unregistered server, unlisted tool
	CodeArgs        = spec.CodeInvokeArgs     // arguments fail the tool's input schema
	CodeFailed      = spec.CodeInvokeFailed   // an output with no JSON form
	CodeUnavailable = spec.CodeMCPUnavailable // not configured, cannot start, crashed, connection lost
	CodeToolError   = spec.CodeMCPToolError   // an isError result (or a JSON-RPC error answer)
	codeCancelled   = spec.CodeCancel
)

// DefaultGrace is how long Close lets a server exit after closing its stdin.
const DefaultGrace = time.Second

// DefaultStartTimeout is Options.StartTimeout's default.
const DefaultStartTimeout = 30 * time.Second

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
