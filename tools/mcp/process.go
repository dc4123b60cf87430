package mcp

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/tools/procgroup"
)

// The server process: its pid, its process group and its stderr tail.

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
