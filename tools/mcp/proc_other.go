//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

// Without process groups, shutdown can reach only the server itself.

func setGroup(*exec.Cmd) {}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
