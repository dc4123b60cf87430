//go:build unix

package tools

import (
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

// A named pipe is never opened: reading one would block until a writer comes.
func TestGrepSkipsNamedPipes(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	writeFile(t, filepath.Join(dir, "f.txt"), []byte("x\n"))
	out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "x"}, RunDir: dir})
	if want := []any{hit("f.txt", 1, "x")}; err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("grep over a directory with a pipe: %v, %v", out, err)
	}
	_, err = exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "x", "path": "pipe"}, RunDir: dir})
	if codeOf(t, err) != "NIKA-BUILTIN-GREP-002" {
		t.Errorf("grep of a pipe: %v", err)
	}
	out, err = exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": "*"}, RunDir: dir})
	if want := []any{"f.txt"}; err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("glob lists a pipe: %v, %v", out, err)
	}
}
