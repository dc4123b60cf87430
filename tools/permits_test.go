package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nikahq/nika/spec"
)

// fsTree builds run/ with a permitted tree and a secret outside it:
//
//	root/secret.txt
//	root/run/src/ok.txt
//	root/run/src/escape -> ../../secret.txt     (file link out of the tree)
//	root/run/src/outdir -> ../..                (directory link out of the tree)
//	root/run/src/inner -> ok.txt                (link that stays inside)
//	root/run/src/dangling -> ../../new.txt      (dangling link out of the tree)
//	root/run/out/
func fsTree(t *testing.T) (root, run string) {
	t.Helper()
	root = t.TempDir()
	run = filepath.Join(root, "run")
	writeFile(t, filepath.Join(root, "secret.txt"), []byte("secret"))
	writeFile(t, filepath.Join(run, "src", "ok.txt"), []byte("ok"))
	if err := os.MkdirAll(filepath.Join(run, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"src/escape":   "../../secret.txt",
		"src/outdir":   "../..",
		"src/inner":    "ok.txt",
		"src/dangling": "../../new.txt",
		"out/escape":   "../../secret.txt",
		"out/dangling": "../../new.txt",
	} {
		if err := os.Symlink(target, filepath.Join(run, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, run
}

func TestReadPermits(t *testing.T) {
	root, run := fsTree(t)
	permits := &spec.Permits{FSRead: []string{"src/**"}, Tools: []string{"nika:*"}, ToolsSet: true}
	cases := []struct {
		path string
		code string
	}{
		{"src/ok.txt", ""},
		{"src/inner", ""},
		{filepath.Join(run, "src", "ok.txt"), ""},
		{"src/missing.txt", "NIKA-BUILTIN-READ-001"}, // inside: the file error, not SEC-004
		{"src/escape", "NIKA-SEC-004"},               // symlink escape
		{"src/outdir/secret.txt", "NIKA-SEC-004"},    // directory symlink escape
		{"src/dangling", "NIKA-SEC-004"},             // dangling link resolved to its target
		{"src/../../secret.txt", "NIKA-SEC-004"},     // .. escape
		{filepath.Join(root, "secret.txt"), "NIKA-SEC-004"},
		{"out/x.txt", "NIKA-SEC-004"}, // write does not imply read, and out is not readable
		{"missing/../src/ok.txt", ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": c.path}, RunDir: run, Permits: permits})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if c.code == "NIKA-SEC-004" {
				if out != nil {
					t.Errorf("output %v despite the denial", out)
				}
				if d := details(t, err); d["gate"] != "fs.read" || d["path"] != c.path {
					t.Errorf("details = %v", d)
				}
			}
		})
	}
	// Without permits only the floors apply: the same link reads the secret (D38).
	out, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "src/escape"}, RunDir: run})
	if err != nil || out != "secret" {
		t.Errorf("without permits: %v, %v", out, err)
	}
}

func TestWritePermits(t *testing.T) {
	root, run := fsTree(t)
	permits := &spec.Permits{FSWrite: []string{"out/**"}, Tools: []string{"nika:*"}, ToolsSet: true}
	cases := []struct {
		path string
		args map[string]any
		code string
	}{
		{"out/new.txt", nil, ""},
		{"out/deep/new.txt", map[string]any{"create_dirs": true}, ""},
		{"out/escape", nil, "NIKA-SEC-004"},   // overwriting through a link out of the tree
		{"out/dangling", nil, "NIKA-SEC-004"}, // creating through a dangling link
		{"out/../src/ok.txt", nil, "NIKA-SEC-004"},
		{"src/new.txt", nil, "NIKA-SEC-004"},
		{filepath.Join(root, "x.txt"), nil, "NIKA-SEC-004"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			args := map[string]any{"path": c.path, "content": "pwned"}
			for k, v := range c.args {
				args[k] = v
			}
			_, err := exec(t, Call{Name: "nika:write", Args: args, RunDir: run, Permits: permits})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(root, "secret.txt")); string(got) != "secret" {
		t.Errorf("the secret was overwritten: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("a file was created through the dangling link")
	}
	if _, err := os.Lstat(filepath.Join(root, "x.txt")); err == nil {
		t.Error("a file was created outside the permits")
	}
}

func TestRunDirBehindSymlink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	writeFile(t, filepath.Join(real, "src", "a.txt"), []byte("a"))
	link := filepath.Join(root, "link")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	permits := &spec.Permits{FSRead: []string{"src/**"}, Tools: []string{"nika:read"}, ToolsSet: true}
	out, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "src/a.txt"}, RunDir: link, Permits: permits})
	if err != nil || out != "a" {
		t.Fatalf("a run directory reached through a link: %v, %v", out, err)
	}
}

func TestHomeGlobs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(home, "notes", "a.txt"), []byte("note"))
	permits := &spec.Permits{FSRead: []string{"~/notes/*.txt"}, Tools: []string{"nika:read"}, ToolsSet: true}
	for path, code := range map[string]string{
		"~/notes/a.txt":                      "",
		filepath.Join(home, "notes/a.txt"):   "",
		"~/other.txt":                        "NIKA-SEC-004",
		filepath.Join(home, "notes/b/c.txt"): "NIKA-SEC-004",
	} {
		_, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": path}, RunDir: t.TempDir(), Permits: permits})
		if codeOf(t, err) != code {
			t.Errorf("%s: err = %v, want code %q", path, err, code)
		}
	}
}

func TestResolveLinkLoop(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("b", filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	permits := &spec.Permits{FSRead: []string{"**"}, Tools: []string{"nika:read"}, ToolsSet: true}
	_, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "a"}, RunDir: dir, Permits: permits})
	if codeOf(t, err) != "NIKA-SEC-004" {
		t.Errorf("err = %v", err)
	}
}
