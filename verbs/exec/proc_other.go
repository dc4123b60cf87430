//go:build !unix

package exec

import (
	"os"
	osexec "os/exec"
	"syscall"
)

// Without process groups, cancellation can reach only the child itself.

func setGroup(*osexec.Cmd) {}

func signal(p *os.Process, _ int, _ syscall.Signal) { _ = p.Kill() }

func groupAlive(int) bool { return false }

func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// nofileLimit is 0, unknown: the process bound has only its CPU term.
func nofileLimit() uint64 { return 0 }
