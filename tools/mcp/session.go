package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/procgroup"
)

// One server's session: its lazy start (once for concurrent first calls, bounded by
// StartTimeout, abandoned by Close), its environment, its death, and its shutdown.

// errStartTimeout is the cause of a start abandoned at StartTimeout.
var errStartTimeout = errors.New("start timed out")

// protocolVersion is the version nika asks for: the initialize handshake every stdio server
// speaks, rather than the stateless discovery of later versions that many do not.
const protocolVersion = "2025-11-25"

// inherited are the variables a server gets from the engine's environment.
var inherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

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
