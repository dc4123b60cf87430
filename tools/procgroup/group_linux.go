//go:build linux

package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"syscall"
)

// New starts the watcher of a new process group (see the package doc). A caller that gets an
// error runs its child in a group of its own instead.
func New() (*Group, error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil, fmt.Errorf("no /proc to watch a process group with: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &osexec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", watcherScript},
		Dir:         "/",        // hold no job directory busy
		Env:         []string{}, // the engine's environment (provider keys) is none of its business
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("starting the process-group watcher: %w", err)
	}
	return &Group{watcher: cmd, life: w, pgid: cmd.Process.Pid}, nil
}

// Join makes cmd start as a member of the group (setpgid before exec). On the nil Group it
// makes cmd the leader of a new group of its own instead, as without a watcher.
func (g *Group) Join(cmd *osexec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = g.ID()
}

// Others reports whether a process other than the watcher is in the group, a zombie included
// (it still holds its place until it is reaped). The nil Group has none.
func (g *Group) Others() bool {
	if g == nil {
		return false
	}
	if err := syscall.Kill(-g.pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false // nobody at all, the watcher included
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true // cannot tell: the caller's own deadline ends the wait
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid == g.pgid {
			continue
		}
		if b, err := os.ReadFile("/proc/" + name + "/stat"); err == nil && pgrp(b) == g.pgid {
			return true
		}
	}
	return false
}

// pgrp is the process group of a /proc/PID/stat line: the third field after the parenthesized
// command name (state, ppid, pgrp); -1 when the line cannot be read.
func pgrp(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 {
		return -1
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return -1
	}
	return n
}

func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
