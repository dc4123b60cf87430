//go:build linux

package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/mcp/mcptest"
)

// The echo server of testdata/echoserver, built once per test binary.
var (
	echoOnce sync.Once
	echoBin  string
	echoErr  error
)

func echoServer(t *testing.T) string {
	t.Helper()
	echoOnce.Do(func() {
		echoDir, echoErr = os.MkdirTemp("", "nika-echoserver-")
		if echoErr != nil {
			return
		}
		echoBin = filepath.Join(echoDir, "echoserver")
		out, err := exec.Command("go", "build", "-o", echoBin, "./testdata/echoserver").CombinedOutput()
		if err != nil {
			echoErr = errors.New("building testdata/echoserver: " + err.Error() + "\n" + string(out))
		}
	})
	if echoErr != nil {
		t.Fatal(echoErr)
	}
	return echoBin
}

func echoClient(t *testing.T, env map[string]string) *Client {
	t.Helper()
	reg := &Registry{path: "reg.json", servers: map[string]Server{"echo": {Command: echoServer(t), Env: env}}, invalid: map[string]string{}}
	reg.servers["ghost"] = Server{Command: filepath.Join(t.TempDir(), "no-such-server")}
	c := NewClient(reg, Options{Getenv: func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return "sk-secret", true
		}
		return os.LookupEnv(k)
	}})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSubprocessCalls(t *testing.T) {
	c := echoClient(t, map[string]string{"ECHO_GREETING": "hello"})
	ctx := context.Background()
	cases := []struct {
		name, tool string
		args       map[string]any
		want       any
		code       string
		transient  bool
		message    string
	}{
		{name: "echo", tool: "mcp:echo/echo", args: map[string]any{"text": "hi there"}, want: "hi there"},
		{name: "registry env reaches the server", tool: "mcp:echo/env", args: map[string]any{"name": "ECHO_GREETING"}, want: "=hello"},
		{name: "engine secrets do not", tool: "mcp:echo/env", args: map[string]any{"name": "OPENAI_API_KEY"}, want: "unset"},
		{name: "structured output", tool: "mcp:echo/spawn", want: nil}, // checked below
		{name: "isError", tool: "mcp:echo/fail", code: CodeToolError, message: "boom: the tool failed"},
		{name: "schema", tool: "mcp:echo/echo", args: map[string]any{"text": 3}, code: CodeArgs, message: "invalid arguments for mcp:echo/echo: at /text:"},
		{name: "unlisted", tool: "mcp:echo/nope", code: CodeUnknown, message: `MCP server "echo" lists no tool "nope" — use one it lists: crash, echo, env, fail, progress, sleep, spawn, spawn_stdout`},
		{name: "command not found", tool: "mcp:ghost/x", code: CodeUnavailable, transient: false, message: `MCP server "ghost" is not configured:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Call(ctx, tc.tool, tc.args)
			if tc.code != "" {
				se := asError(t, err, tc.code)
				if !strings.Contains(se.Message, tc.message) {
					t.Errorf("message = %q, want it to contain %q", se.Message, tc.message)
				}
				if se.Transient != tc.transient {
					t.Errorf("transient = %v", se.Transient)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.tool == "mcp:echo/spawn" {
				m, ok := out.(map[string]any)
				if pid, isInt := m["pid"].(int); !ok || !isInt || pid <= 0 {
					t.Errorf("spawn output = %#v, want {pid: int}", out)
				}
				return
			}
			if out != tc.want {
				t.Errorf("output = %#v, want %#v", out, tc.want)
			}
		})
	}
}

// A call made with CallProgress carries a progress token unique in the run, and the server's
// notifications/progress under it reach the call's callback, in the order sent, with progress,
// total and message; one under another token reaches no call, nor do a concurrent call's. The
// callback is never called after CallProgress returns (the -race run reads what it collected
// without a lock), a panic in it is recovered, and a plain Call asks for no progress.
func TestSubprocessProgressReachesTheCall(t *testing.T) {
	c := echoClient(t, nil)
	ctx := context.Background()
	if out, err := c.Call(ctx, "mcp:echo/progress", map[string]any{"steps": 2}); err != nil || out != "no token" {
		t.Fatalf("plain Call: %v, %v; want no progress token sent", out, err)
	}
	type note struct {
		progress, total float64
		message         string
	}
	type result struct {
		notes []note
		out   any
		err   error
	}
	tags := []string{"a", "b", "c"}
	results := make([]result, len(tags))
	var wg sync.WaitGroup
	for i, tag := range tags {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.out, r.err = c.CallProgress(ctx, "mcp:echo/progress", map[string]any{"steps": 3 + i, "tag": tag},
				func(progress, total float64, message string) {
					r.notes = append(r.notes, note{progress, total, message})
				})
		}()
	}
	wg.Wait()
	tokens := map[string]string{}
	for i, tag := range tags {
		r := results[i]
		if r.err != nil {
			t.Fatalf("%s: %v", tag, r.err)
		}
		token, ok := strings.CutPrefix(fmt.Sprint(r.out), "token=")
		if !ok || !strings.HasPrefix(token, "nika-") {
			t.Fatalf("%s: the server got no nika progress token: %v", tag, r.out)
		}
		if other, dup := tokens[token]; dup {
			t.Fatalf("calls %s and %s got the same token %s", other, tag, token)
		}
		tokens[token] = tag
		var want []note
		for k := 1; k <= 3+i; k++ {
			want = append(want, note{float64(k), float64(3 + i), fmt.Sprintf("%s step %d", tag, k)})
		}
		if !slices.Equal(r.notes, want) {
			t.Errorf("%s (token %s): progress %v, want %v", tag, token, r.notes, want)
		}
	}
	out, err := c.CallProgress(ctx, "mcp:echo/progress", map[string]any{"steps": 2}, func(float64, float64, string) { panic("ui") })
	if err != nil || !strings.HasPrefix(fmt.Sprint(out), "token=nika-") {
		t.Fatalf("with a panicking callback: %v, %v", out, err)
	}
}

// A server that exits mid-call is NIKA-MCP-001, transient, with its last stderr line; the next
// call starts a new server process.
func TestSubprocessCrash(t *testing.T) {
	c := echoClient(t, nil)
	ctx := context.Background()
	if _, err := c.Call(ctx, "mcp:echo/echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	first := c.Pid("echo")
	_, err := c.Call(ctx, "mcp:echo/crash", nil)
	se := asError(t, err, CodeUnavailable)
	if !se.Transient {
		t.Error("a crash must be transient")
	}
	if !strings.Contains(se.Message, `MCP server "echo" stopped answering while running mcp:echo/crash`) {
		t.Errorf("message = %q", se.Message)
	}
	out, err := c.Call(ctx, "mcp:echo/echo", map[string]any{"text": "again"})
	if err != nil || out != "again" {
		t.Fatalf("after the crash: %v, %v", out, err)
	}
	if second := c.Pid("echo"); second == 0 || second == first {
		t.Errorf("server pid %d after the crash, %d before: want a new process", second, first)
	}
}

// Close kills the server's whole process group: the server and the grandchild it spawned are
// gone when Close returns.
func TestSubprocessCloseKillsGroup(t *testing.T) {
	c := echoClient(t, nil)
	out, err := c.Call(context.Background(), "mcp:echo/spawn", nil)
	if err != nil {
		t.Fatal(err)
	}
	child := out.(map[string]any)["pid"].(int)
	server := c.Pid("echo")
	if server == 0 || mcptest.ProcGone(server) || mcptest.ProcGone(child) {
		t.Fatalf("before Close: server %d gone=%v, grandchild %d gone=%v", server, mcptest.ProcGone(server), child, mcptest.ProcGone(child))
	}
	pgid := mcptest.Pgid(t, server)
	if got := mcptest.GroupMembers(t, pgid); !slices.Contains(got, server) || !slices.Contains(got, child) {
		t.Errorf("the server's group holds %v, want the server %d and its grandchild %d", got, server, child)
	}
	serverFD, childFD := mcptest.Pidfd(t, server), mcptest.Pidfd(t, child)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mcptest.AwaitExit(t, serverFD, "the server")
	mcptest.AwaitExit(t, childFD, "the grandchild")
	if !mcptest.ProcGone(server) || !mcptest.ProcGone(child) {
		t.Errorf("after Close: server %d gone=%v, grandchild %d gone=%v", server, mcptest.ProcGone(server), child, mcptest.ProcGone(child))
	}
	if got := mcptest.GroupMembers(t, pgid); len(got) != 0 {
		t.Errorf("after Close the server's group still holds %v", got)
	}
}

// A call cancelled while the tool runs returns at once (NIKA-CANCEL-001); the server stays up.
// A Close while a call runs fails that call and still leaves nothing behind.
func TestSubprocessCancelAndCloseMidCall(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := echoClient(t, map[string]string{"ECHO_READY": fifo})
	ready := func() string {
		f, err := os.Open(fifo) // blocks until the sleeping tool opens it
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		return line
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "mcp:echo/sleep", nil)
		errc <- err
	}()
	line := ready()
	if !strings.HasPrefix(line, "server=") {
		t.Fatalf("ready line %q", line)
	}
	cancel()
	asError(t, <-errc, codeCancelled)
	server := c.Pid("echo")
	if out, err := c.Call(context.Background(), "mcp:echo/echo", map[string]any{"text": "up"}); err != nil || out != "up" {
		t.Fatalf("after a cancelled call: %v, %v", out, err)
	}
	if c.Pid("echo") != server {
		t.Error("a cancelled call restarted the server")
	}

	go func() {
		_, err := c.Call(context.Background(), "mcp:echo/sleep", nil)
		errc <- err
	}()
	ready()
	pgid := mcptest.Pgid(t, server)
	serverFD := mcptest.Pidfd(t, server)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mcptest.AwaitExit(t, serverFD, "the server")
	asError(t, <-errc, CodeUnavailable)
	if got := mcptest.GroupMembers(t, pgid); len(got) != 0 {
		t.Errorf("after Close the server's group still holds %v", got)
	}
}

// A server that crashes while a grandchild still holds its stdout is seen to be gone: the call
// in flight is NIKA-MCP-001 at once, rather than wait for an end of file that the grandchild
// keeps from coming, and the grandchild dies with the server's group.
func TestSubprocessCrashWithGrandchildOnStdout(t *testing.T) {
	c := echoClient(t, nil)
	out, err := c.Call(context.Background(), "mcp:echo/spawn_stdout", nil)
	if err != nil {
		t.Fatal(err)
	}
	child := out.(map[string]any)["pid"].(int)
	childFD := mcptest.Pidfd(t, child)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Call(ctx, "mcp:echo/crash", nil)
	se := asError(t, err, CodeUnavailable)
	if !se.Transient {
		t.Error("a crash must be transient")
	}
	mcptest.AwaitExit(t, childFD, "the grandchild")
	if out, err := c.Call(ctx, "mcp:echo/echo", map[string]any{"text": "again"}); err != nil || out != "again" {
		t.Fatalf("after the crash: %v, %v", out, err)
	}
}

// A command that never speaks MCP fails its start at StartTimeout with a transient NIKA-MCP-001
// that says so, instead of holding its callers until their own contexts end; the process dies.
func TestSubprocessStartTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	reg := &Registry{path: "reg.json", invalid: map[string]string{}, servers: map[string]Server{
		"mute": {Command: "sh", Args: []string{"-c", "echo $$ > " + pidFile + "; exec sleep 300"}},
	}}
	c := NewClient(reg, Options{StartTimeout: 300 * time.Millisecond})
	defer c.Close()
	_, err := c.List(context.Background(), "mute")
	var se *spec.Error
	if !errors.As(err, &se) || se.Code != CodeUnavailable || !se.Transient || !strings.Contains(se.Message, "did not complete the MCP handshake within 300ms") {
		t.Fatalf("List = %v, want a transient NIKA-MCP-001 naming the handshake timeout", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	mcptest.AwaitGone(t, pid, "the mute server")
}
