//go:build linux

package procgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/tools/mcp/mcptest"
)

// engineVar makes the test binary an "engine" (see engine): it is how a test kills an engine
// with SIGKILL without killing itself.
const engineVar = "PROCGROUP_TEST_ENGINE"

func TestMain(m *testing.M) {
	if fifo := os.Getenv(engineVar); fifo != "" {
		engine(fifo)
		return
	}
	goleak.VerifyTestMain(m)
}

// engine starts a watched group whose job (`sh -c 'sleep 300 & …; sleep 300'`) writes its own
// pid and its background child's to fifo, then waits to be killed.
func engine(fifo string) {
	g, err := New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cmd := osexec.Command("/bin/sh", "-c", `sleep 300 & echo "$$ $!" > "$FIFO"; sleep 300`)
	cmd.Env = append(os.Environ(), "FIFO="+fifo)
	g.Join(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	select {} // until SIGKILL
}

// readPids reads one line of pids from a FIFO (blocking until a writer comes).
func readPids(t *testing.T, fifo string) []int {
	t.Helper()
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the pids: %v (%q)", err, line)
	}
	var pids []int
	for _, w := range strings.Fields(line) {
		n, err := strconv.Atoi(w)
		if err != nil {
			t.Fatalf("pid line %q", line)
		}
		pids = append(pids, n)
	}
	return pids
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pids")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An engine killed with SIGKILL takes its job and the job's grandchild with it: the watcher
// sees its pipe end and kills the group.
func TestSIGKILLedEngineTakesTheGroup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fifo := mkfifo(t)
	eng := osexec.Command(exe, "-test.run=^$")
	eng.Env = append(os.Environ(), engineVar+"="+fifo)
	eng.Stderr = os.Stderr
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, fifo)
	fds := make([]int, len(pids))
	for i, pid := range pids {
		fds[i] = mcptest.Pidfd(t, pid)
	}
	if err := eng.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = eng.Wait()
	for i, pid := range pids {
		mcptest.AwaitExit(t, fds[i], fmt.Sprintf("process %d of the dead engine's job", pid))
		if !mcptest.ProcGone(pid) {
			t.Errorf("process %d survived the engine's SIGKILL", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// start runs `sh -c script` in g and returns it started; script gets FIFO in its environment.
func start(t *testing.T, g *Group, script, fifo string) *osexec.Cmd {
	t.Helper()
	cmd := osexec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "FIFO="+fifo)
	g.Join(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// Members are in the watcher's group from birth; Others sees them, and not the watcher; after a
// SIGTERM to the group (which the watcher ignores) the group is still watched, and Kill ends
// everything.
func TestJoinOthersKill(t *testing.T) {
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if g.Others() {
		t.Error("Others with only the watcher in the group")
	}
	fifo := mkfifo(t)
	// The trap comes after the sleep starts: an ignored signal would survive its exec.
	cmd := start(t, g, `sleep 300 & trap '' TERM; echo "$$ $!" > "$FIFO"; wait`, fifo)
	pids := readPids(t, fifo)
	for _, pid := range pids {
		if pg, err := syscall.Getpgid(pid); err != nil || pg != g.ID() {
			t.Errorf("process %d is in group %d (%v), want the watcher's %d", pid, pg, err, g.ID())
		}
	}
	if !g.Others() {
		t.Error("Others is false with the job running")
	}
	_ = syscall.Kill(-g.ID(), syscall.SIGTERM) // the shell ignores it; the sleep dies
	mcptest.AwaitGone(t, pids[1], "the background sleep")
	if mcptest.ProcGone(g.ID()) {
		t.Fatal("the watcher died of the group's SIGTERM")
	}
	if !g.Others() {
		t.Error("Others is false with the shell still running")
	}
	watcher := g.ID()
	g.Kill() // reaps the watcher
	_ = cmd.Wait()
	if !mcptest.ProcGone(watcher) || !mcptest.ProcGone(pids[0]) {
		t.Error("the watcher or the shell survived Kill")
	}
	if err := syscall.Kill(-watcher, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the group still exists after Kill and the reaps: %v", err)
	}
	if g.Others() {
		t.Error("Others after Kill")
	}
	g.Release() // after Kill: nothing
}

// Release lets the watcher go without killing: what the job left running keeps running.
func TestReleaseKeepsLeftovers(t *testing.T) {
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	fifo := mkfifo(t)
	cmd := start(t, g, `sleep 300 >/dev/null 2>&1 & echo "$!" > "$FIFO"`, fifo)
	pids := readPids(t, fifo)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	watcher := g.ID()
	g.Release()
	if !mcptest.ProcGone(watcher) {
		t.Error("the watcher still runs after Release")
	}
	if mcptest.ProcGone(pids[0]) {
		t.Error("Release killed the job's background process")
	}
	_ = syscall.Kill(pids[0], syscall.SIGKILL)
	mcptest.AwaitGone(t, pids[0], "the leftover sleep")
	g.Kill() // after Release: nothing
}

// The nil Group is what a caller holds when New failed: every method is safe, and Join makes a
// group of the child's own.
func TestNilGroup(t *testing.T) {
	var g *Group
	if g.ID() != 0 || g.Others() {
		t.Error("nil Group has an id or members")
	}
	g.Release()
	g.Kill()
	cmd := osexec.Command("/bin/sh", "-c", "exit 0")
	g.Join(cmd)
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid || cmd.SysProcAttr.Pgid != 0 {
		t.Errorf("SysProcAttr %+v, want a new group", cmd.SysProcAttr)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
}
