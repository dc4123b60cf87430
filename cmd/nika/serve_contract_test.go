package main

// Black-box tests of the small points of the `nika serve` contract (issue
// 12 items 7 and 8): the bearer scheme is case-insensitive, a FIFO under
// --workflows is refused at once, and no error body names a path of the
// server's own. (The drain is in serve_drain_test.go.)

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// RFC 9110 §11.1: the auth scheme is case-insensitive.
func TestServeBearerSchemeCaseInsensitive(t *testing.T) {
	s := startServe(t, t.TempDir(), "--auth-token", "tok-123456")
	for _, tc := range []struct {
		header string
		code   int
	}{
		{"Bearer tok-123456", http.StatusNotFound},
		{"bearer tok-123456", http.StatusNotFound},
		{"BEARER tok-123456", http.StatusNotFound},
		{"bEaReR  tok-123456", http.StatusNotFound},
		{"bearer tok-wrong", http.StatusUnauthorized},
		{"Basic tok-123456", http.StatusUnauthorized},
		{"bearertok-123456", http.StatusUnauthorized},
		{"tok-123456", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("GET", s.url+"/v1/runs/r-x", nil)
		req.Header.Set("Authorization", tc.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Authorization: %s → %d, want %d", tc.header, resp.StatusCode, tc.code)
		}
	}
}

// A path submission of anything but a regular file is 400 at once — a FIFO
// (directly or through a symlink) would otherwise block the request until
// something writes to it — and no refusal names the server's own paths.
func TestServePathSubmissionsOfNonFiles(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "workflows")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, root, "pipe.nika.yaml")
	if err := os.Symlink("pipe.nika.yaml", filepath.Join(root, "link.nika.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, "--workflows", root)
	abs, _ := filepath.EvalSymlinks(root)
	for _, tc := range []struct{ path, want string }{
		{"pipe.nika.yaml", `workflow "pipe.nika.yaml" under the workflows directory is a named pipe (FIFO), not a regular file`},
		{"link.nika.yaml", `workflow "link.nika.yaml" under the workflows directory is a named pipe (FIFO), not a regular file`},
		{"sub", `workflow "sub" under the workflows directory is a directory, not a file`},
		{"missing.nika.yaml", `no workflow "missing.nika.yaml" under the workflows directory`},
		{"../outside.nika.yaml", `workflow "../outside.nika.yaml" cannot be read from the workflows directory (paths must stay inside it)`},
	} {
		b, _ := json.Marshal(map[string]string{"path": tc.path})
		code, body := s.post(string(b))
		if msg := errorMessage(body); code != http.StatusBadRequest || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("path %q: %d %s, want 400 starting %q", tc.path, code, body, tc.want)
		}
		if strings.Contains(body, root) || strings.Contains(body, abs) || strings.Contains(body, dir) {
			t.Errorf("path %q: the error body names a server path: %s", tc.path, body)
		}
	}
	// The workflows directory itself gone: the refusal says so without naming it.
	if err := os.Rename(root, root+".gone"); err != nil {
		t.Fatal(err)
	}
	code, body := s.post(`{"path":"pipe.nika.yaml"}`)
	if code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(body), "the workflows directory cannot be opened") || strings.Contains(body, dir) {
		t.Errorf("with the workflows directory gone: %d %s, want 400 saying it cannot be opened, without its path", code, body)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, s.stderr())
	}
}
