//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setGroup starts the server in a new process group whose id is its pid (D37).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills every process of the group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
