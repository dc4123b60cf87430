//go:build unix

package tools

import (
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadNamedPipeDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	_, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "pipe"}, RunDir: dir})
	if codeOf(t, err) != "NIKA-BUILTIN-READ-001" {
		t.Errorf("err = %v", err)
	}
}
