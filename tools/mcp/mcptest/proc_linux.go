// Package mcptest holds what tests of MCP server processes share: watching processes that are
// not children of the test (Linux /proc and pidfds), so a test can prove a server and its
// grandchildren are gone.
package mcptest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ProcGone reports whether a process no longer runs: it does not exist, or it is a zombie
// waiting for a parent that is not ours to reap it.
func ProcGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := statFields(string(b))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// statFields are the fields of /proc/PID/stat after the parenthesized command name: state,
// ppid, pgrp, …
func statFields(s string) []string {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil
	}
	return strings.Fields(s[i+2:])
}

// sysPidfdOpen is pidfd_open(2), numbered alike on every Linux architecture.
const sysPidfdOpen = 434

// Pidfd opens a pidfd on a running process, so its exit can be awaited though it is not a
// child of the test. The fd is closed when the test ends.
func Pidfd(t testing.TB, pid int) int {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	t.Cleanup(func() { syscall.Close(int(fd)) })
	return int(fd)
}

// AwaitExit blocks until the process behind a pidfd has exited (a zombie counts: it runs
// nothing). SIGKILL is delivered asynchronously, so a process killed a moment ago may still be
// on its way out; the one-minute bound only keeps a broken build from hanging the suite.
func AwaitExit(t testing.TB, fd int, what string) {
	t.Helper()
	for {
		var set syscall.FdSet
		set.Bits[fd/64] |= 1 << (uint(fd) % 64)
		tv := syscall.Timeval{Sec: 60}
		n, err := syscall.Select(fd+1, &set, nil, nil, &tv)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if n == 0 {
			t.Errorf("%s still runs a minute later", what)
		}
		return
	}
}

// GroupMembers lists the live (non-zombie) processes of a process group.
func GroupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := statFields(string(b))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// AwaitGone waits for a process that was killed a moment ago to exit; one already gone (or
// reaped) returns at once.
func AwaitGone(t testing.TB, pid int, what string) {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return
	}
	if errno != 0 {
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	defer syscall.Close(int(fd))
	AwaitExit(t, int(fd), what)
}

// Pgid returns the process group of a running process: a server's group is its watcher's
// (tools/procgroup), not the server's own pid.
func Pgid(t testing.TB, pid int) int {
	t.Helper()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatalf("getpgid(%d): %v", pid, err)
	}
	return pgid
}
