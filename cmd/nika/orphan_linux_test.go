//go:build linux

package main

// Black-box tests of issue 12 item 4: a `nika run` or `nika serve` killed with SIGKILL leaves no
// process behind — not its exec children, not their grandchildren, not its MCP servers nor
// theirs (tools/procgroup). The run's processes tell the test their pids through FIFOs, so the
// test acts exactly once they all run.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nikahq/nika/tools/mcp/mcptest"
)

// orphanYAML is a workflow whose exec task runs `sleep 300` in the background and in the
// foreground, after writing "<shell pid> <background pid>" to the FIFO $EXEC_PIDS, while an MCP
// server spawns a grandchild and then sleeps in a tool call (writing its pids to ECHO_READY).
// With execPids set, the FIFO's path is written into the task (nika serve's runs do not see the
// test's environment).
func orphanYAML(execPids string) string {
	env := ""
	if execPids != "" {
		env = fmt.Sprintf(", env: { EXEC_PIDS: %q }", execPids)
	}
	return fmt.Sprintf(`nika: v1
workflow: orphans
tasks:
  - id: shell
    exec: { command: 'sleep 300 & echo "$$ $!" > "$EXEC_PIDS"; sleep 300'%s }
  - id: spawn
    invoke: { tool: mcp:echo/spawn }
  - id: nap
    depends_on: [spawn]
    invoke: { tool: mcp:echo/sleep }
`, env)
}

// readLine opens a FIFO for reading (which waits for its writer) and returns the line written.
func readLine(t *testing.T, fifo string) string {
	t.Helper()
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("reading %s: %v (%q)", fifo, err, line)
	}
	return line
}

// runPids reads both FIFOs and returns the run's processes: the exec shell and its background
// sleep, the MCP server and its grandchild, and their process groups.
func runPids(t *testing.T, execFifo, echoFifo string) (pids []int, groups []int) {
	t.Helper()
	for _, w := range strings.Fields(readLine(t, execFifo)) {
		n, err := strconv.Atoi(w)
		if err != nil {
			t.Fatalf("exec pids %q", w)
		}
		pids = append(pids, n)
	}
	for _, field := range strings.Fields(readLine(t, echoFifo)) {
		_, v, _ := strings.Cut(field, "=")
		n, _ := strconv.Atoi(strings.Split(v, ",")[0])
		if n <= 0 {
			t.Fatalf("ready line field %q", field)
		}
		pids = append(pids, n)
	}
	if len(pids) != 4 {
		t.Fatalf("pids %v, want the shell, its sleep, the server and its grandchild", pids)
	}
	groups = []int{mcptest.Pgid(t, pids[0]), mcptest.Pgid(t, pids[2])}
	return pids, groups
}

// assertAllGone fails unless every pid, and every member of the groups, is gone within 2 s of
// the engine's death (the bound): /proc is polled, and the first look that finds
// nothing ends the wait. Survivors are killed, so a failing test leaves nothing either.
func assertAllGone(t *testing.T, pids, groups []int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []int
		for _, pid := range pids {
			if !mcptest.ProcGone(pid) {
				left = append(left, pid)
			}
		}
		for _, g := range groups {
			left = append(left, mcptest.GroupMembers(t, g)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v (of %v, groups %v) still run 2 s after the engine's SIGKILL", left, pids, groups)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunSIGKILLLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	execFifo, echoFifo := mkfifo(t, dir, "exec-pids"), mkfifo(t, dir, "echo-ready")
	reg := mcpRegistry(t, map[string]any{"echo": map[string]any{"command": echoServerBin(t), "env": map[string]string{"ECHO_READY": echoFifo}}})
	writeFile(t, filepath.Join(dir, "orphans.nika.yaml"), orphanYAML(""))
	cmd := nikaCmd(dir, reg, []string{"EXEC_PIDS=" + execFifo}, "run", "orphans.nika.yaml", "--no-trace", "--quiet")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids, groups := runPids(t, execFifo, echoFifo)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertAllGone(t, pids, groups)
	if t.Failed() {
		t.Logf("nika run's stderr:\n%s", errb.String())
	}
}

func TestServeSIGKILLLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	execFifo, echoFifo := mkfifo(t, dir, "exec-pids"), mkfifo(t, dir, "echo-ready")
	reg, err := os.ReadFile(mcpRegistry(t, map[string]any{"echo": map[string]any{"command": echoServerBin(t), "env": map[string]string{"ECHO_READY": echoFifo}}}))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".nika", "mcp_servers.json"), string(reg))
	s := startServe(t, dir, "--permits", writePermits(t, dir, "exec: true\ntools: [\"mcp:echo/*\"]\n"))
	s.submit(orphanYAML(execFifo))
	pids, groups := runPids(t, execFifo, echoFifo)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.wait()
	assertAllGone(t, pids, groups)
}
