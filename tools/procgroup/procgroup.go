// Package procgroup puts the child processes of the engine (exec jobs, MCP servers) in process
// groups that die with the engine, even when it is killed by SIGKILL, on Linux.
//
// # How
//
// A job's group is created, before the job's process, by a watcher: `/bin/sh -c 'trap "" HUP
// INT TERM; read x || kill -9 0'`, started in a new process group whose id is its pid, with
// the read end of a pipe as its stdin. Only the engine holds the write end (close-on-exec, so
// no other child inherits it). The job's process then joins the watcher's group when it is
// forked (setpgid before exec), so it and every descendant it forks are members from birth:
// there is no moment in which a grandchild exists outside a watched group, and so no
// registration to race with the engine's death.
//
//   - The engine dies, however (SIGKILL included): the kernel closes its descriptors, the
//     watcher's read sees the end of file, and `kill -9 0` kills the whole group at once,
//     the watcher with it. A nested `nika run` is a member of its task's group, so its own
//     groups go the same way when it dies: the chain reaches every level.
//   - The job ends (Release): the engine writes a line; the watcher's read succeeds and it
//     exits without killing anything, so what the job left running in the background (a
//     server it started on purpose) is no longer watched, as before this package.
//   - Kill kills the group, watcher included (MCP shutdown).
//
// The watcher ignores HUP, INT and TERM, so a cancellation's SIGTERM to the group (or a script
// running `kill 0`) leaves the group watched until the job's processes are gone; Others tells
// whether any member other than the watcher is left (a /proc scan), which is what a caller
// waits on after signalling the group. SIGKILL to the group ends the watcher too.
//
// # Why not Pdeathsig, a cgroup, or a re-executed nika
//
// prctl(PR_SET_PDEATHSIG) (SysProcAttr.Pdeathsig) reaches only the direct child, not its
// descendants, and fires when the *thread* that forked exits, not the process: the Go runtime
// ends a thread whenever a goroutine locked to it returns (golang/go#27505), which would kill a
// healthy job. A cgroup (cgroup.kill) needs a delegated, writable cgroup v2 tree, which an
// unprivileged user (or a container) usually does not have. A supervisor that is nika itself,
// re-executed in a hidden mode, pays the whole binary's start (about 40 ms of package
// initialization) per exec job; /bin/sh starts in about a millisecond. A pipe's end of file
// depends on nothing but the process's death.
//
// # Limits
//
//   - A process that leaves the group (setsid, setpgid: daemons do) is not followed, as it is
//     not by a cancellation either.
//   - Where /bin/sh or /proc is missing, New fails and the caller runs its child unwatched, in a
//     group of its own: SIGINT, SIGTERM and SIGHUP of the engine still end it, SIGKILL does not.
//   - On other systems (macOS, the BSDs, Windows) New returns errors.ErrUnsupported: children
//     run in a group of their own where there are groups, which the engine's cancellation
//     ends, and a SIGKILLed engine leaves them running.
package procgroup

import (
	"os"
	osexec "os/exec"
	"sync"
)

// watcherScript is the watcher's program (see the package doc).
const watcherScript = `trap '' HUP INT TERM; read x || kill -9 0`

// Group is a process group kept by a watcher. The nil *Group is valid and does nothing (ID 0):
// it is what a caller holds where New failed.
type Group struct {
	watcher *osexec.Cmd
	life    *os.File // the write end of the watcher's stdin
	pgid    int
	once    sync.Once
}

// ID is the process group id (the watcher's pid); 0 for the nil Group.
func (g *Group) ID() int {
	if g == nil {
		return 0
	}
	return g.pgid
}

// Release lets the watcher exit without killing anything and reaps it: the job is over. It is
// safe to call more than once, and after Kill.
func (g *Group) Release() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		_, _ = g.life.Write([]byte("\n")) // EPIPE when the watcher was killed with the group
		g.end()
	})
}

// Kill sends SIGKILL to every process of the group, the watcher included, and reaps the watcher.
// It is safe to call more than once, and after Release (it then kills nothing).
func (g *Group) Kill() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		killGroup(g.pgid)
		g.end()
	})
}

func (g *Group) end() {
	_ = g.life.Close()
	_ = g.watcher.Wait()
}
