package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

func TestEdit(t *testing.T) {
	cases := []struct {
		name    string
		content string // of f.txt; "" means no file
		args    map[string]any
		out     any
		code    string
		want    string // f.txt afterwards (unchanged on an error)
	}{
		{name: "one occurrence by default", content: "hello world\n",
			args: map[string]any{"find": "world", "replace": "nika"},
			out:  map[string]any{"path": "f.txt", "replacements": 1}, want: "hello nika\n"},
		{name: "exact count", content: "a-a-a",
			args: map[string]any{"find": "a", "replace": "bb", "count": 3},
			out:  map[string]any{"path": "f.txt", "replacements": 3}, want: "bb-bb-bb"},
		{name: "count as an integral float", content: "a-a",
			args: map[string]any{"find": "a", "replace": "b", "count": 2.0},
			out:  map[string]any{"path": "f.txt", "replacements": 2}, want: "b-b"},
		{name: "count 0 replaces all", content: "x.x.x.x",
			args: map[string]any{"find": "x", "replace": "", "count": 0},
			out:  map[string]any{"path": "f.txt", "replacements": 4}, want: "..."},
		{name: "count 0 with one occurrence", content: "one",
			args: map[string]any{"find": "one", "replace": "two", "count": 0},
			out:  map[string]any{"path": "f.txt", "replacements": 1}, want: "two"},
		{name: "literal, not a regex", content: "a.c abc (x)",
			args: map[string]any{"find": "a.c", "replace": "Z"},
			out:  map[string]any{"path": "f.txt", "replacements": 1}, want: "Z abc (x)"},
		{name: "multi-line find", content: "l1\nl2\nl3\n",
			args: map[string]any{"find": "l1\nl2", "replace": "L"},
			out:  map[string]any{"path": "f.txt", "replacements": 1}, want: "L\nl3\n"},
		{name: "non-overlapping count", content: "aaaa",
			args: map[string]any{"find": "aa", "replace": "b", "count": 2},
			out:  map[string]any{"path": "f.txt", "replacements": 2}, want: "bb"},
		{name: "replacement containing find is not re-scanned", content: "ab",
			args: map[string]any{"find": "a", "replace": "aa"},
			out:  map[string]any{"path": "f.txt", "replacements": 1}, want: "aab"},
		{name: "not found", content: "hello",
			args: map[string]any{"find": "bye", "replace": "x"}, code: "NIKA-BUILTIN-EDIT-001", want: "hello"},
		{name: "not found with count 0", content: "hello",
			args: map[string]any{"find": "bye", "replace": "x", "count": 0}, code: "NIKA-BUILTIN-EDIT-001", want: "hello"},
		{name: "not found with count 3", content: "hello",
			args: map[string]any{"find": "bye", "replace": "x", "count": 3}, code: "NIKA-BUILTIN-EDIT-001", want: "hello"},
		{name: "more than expected", content: "a a",
			args: map[string]any{"find": "a", "replace": "b"}, code: "NIKA-BUILTIN-EDIT-002", want: "a a"},
		{name: "fewer than expected", content: "a a",
			args: map[string]any{"find": "a", "replace": "b", "count": 3}, code: "NIKA-BUILTIN-EDIT-002", want: "a a"},
		{name: "case-sensitive", content: "Hello",
			args: map[string]any{"find": "hello", "replace": "x"}, code: "NIKA-BUILTIN-EDIT-001", want: "Hello"},
		{name: "file missing",
			args: map[string]any{"find": "a", "replace": "b"}, code: "NIKA-BUILTIN-EDIT-003"},
		{name: "empty find", content: "abc",
			args: map[string]any{"find": "", "replace": "b"}, code: "NIKA-INVOKE-002", want: "abc"},
		{name: "negative count", content: "abc",
			args: map[string]any{"find": "a", "replace": "b", "count": -1}, code: "NIKA-INVOKE-002", want: "abc"},
		{name: "fractional count", content: "abc",
			args: map[string]any{"find": "a", "replace": "b", "count": 1.5}, code: "NIKA-INVOKE-002", want: "abc"},
		{name: "missing replace", content: "abc",
			args: map[string]any{"find": "a"}, code: "NIKA-INVOKE-002", want: "abc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.content != "" {
				writeFile(t, filepath.Join(dir, "f.txt"), []byte(c.content))
			}
			args := map[string]any{"path": "f.txt"}
			for k, v := range c.args {
				args[k] = v
			}
			out, err := exec(t, Call{Name: "nika:edit", Args: args, RunDir: dir})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
			if c.code == "" {
				checkCatalogOutput(t, "nika:edit", out)
			}
			if c.content != "" {
				got, err := os.ReadFile(filepath.Join(dir, "f.txt"))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != c.want {
					t.Errorf("file holds %q, want %q", got, c.want)
				}
			}
			assertNoTempFiles(t, dir)
		})
	}
}

func TestEditCountMismatchDetails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), []byte("x x x"))
	_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "f.txt", "find": "x", "replace": "y", "count": 2}, RunDir: dir})
	if codeOf(t, err) != "NIKA-BUILTIN-EDIT-002" {
		t.Fatalf("err = %v", err)
	}
	if d := details(t, err); d["found"] != 3 || d["expected"] != 2 || d["path"] != "f.txt" {
		t.Errorf("details = %v", d)
	}
}

func TestEditNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "d", "find": "a", "replace": "b"}, RunDir: dir})
	if codeOf(t, err) != "NIKA-BUILTIN-EDIT-003" {
		t.Errorf("err = %v", err)
	}
}

func TestEditKeepsModeAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "run.sh")
	writeFile(t, target, []byte("echo old\n"))
	if err := os.Chmod(target, 0o751); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("run.sh", filepath.Join(dir, "link.sh")); err != nil {
		t.Fatal(err)
	}
	out, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "link.sh", "find": "old", "replace": "new"}, RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"path": "link.sh", "replacements": 1}; !reflect.DeepEqual(out, want) {
		t.Errorf("output = %v", out)
	}
	fi, err := os.Lstat(filepath.Join(dir, "link.sh"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	got, _ := os.ReadFile(target)
	fi, _ = os.Stat(target)
	if string(got) != "echo new\n" || fi.Mode().Perm() != 0o751 {
		t.Errorf("target holds %q with mode %v", got, fi.Mode().Perm())
	}
}

// A name close to the 255-byte limit leaves no room for the temporary file's name beside it:
// the atomic write fails (as root too), and the file is left as it was.
func TestEditWriteFailureFromTheTemporaryName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("n", 240)
	writeFile(t, filepath.Join(dir, name), []byte("abc"))
	_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": name, "find": "b", "replace": "x"}, RunDir: dir})
	if codeOf(t, err) != "NIKA-INVOKE-003" {
		t.Fatalf("err = %v, want NIKA-INVOKE-003", err)
	}
	if !strings.Contains(err.Error(), "unchanged") {
		t.Errorf("message %q should say the file is unchanged", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != "abc" {
		t.Errorf("file holds %q", got)
	}
	assertNoTempFiles(t, dir)
}

func TestEditWriteFailureLeavesTheFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "ro")
	writeFile(t, filepath.Join(sub, "f.txt"), []byte("abc"))
	if err := os.Chmod(sub, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(sub, 0o755) })
	_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "ro/f.txt", "find": "b", "replace": "x"}, RunDir: dir})
	if codeOf(t, err) != "NIKA-INVOKE-003" {
		t.Fatalf("err = %v, want NIKA-INVOKE-003", err)
	}
	if got, _ := os.ReadFile(filepath.Join(sub, "f.txt")); string(got) != "abc" {
		t.Errorf("file holds %q", got)
	}
}

func TestEditPermits(t *testing.T) {
	root, run := fsTree(t)
	writeFile(t, filepath.Join(run, "out", "rw.txt"), []byte("ok"))
	writeFile(t, filepath.Join(run, "both", "f.txt"), []byte("ok"))
	permits := &spec.Permits{
		FSRead:  []string{"src/**", "both/**"},
		FSWrite: []string{"out/**", "both/**"},
		Tools:   []string{"nika:*"}, ToolsSet: true,
	}
	cases := []struct {
		path string
		code string
		gate string
	}{
		{"both/f.txt", "", ""},
		{"src/ok.txt", "NIKA-SEC-004", "fs.write"},         // readable, not writable
		{"out/rw.txt", "NIKA-SEC-004", "fs.read"},          // writable, not readable
		{"both/../src/ok.txt", "NIKA-SEC-004", "fs.write"}, // .. escape
		{"both/missing.txt", "NIKA-BUILTIN-EDIT-003", ""},  // inside: the file error
		{filepath.Join(root, "secret.txt"), "NIKA-SEC-004", "fs.read"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": c.path, "find": "ok", "replace": "pwned", "count": 0}, RunDir: run, Permits: permits})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if c.gate != "" && details(t, err)["gate"] != c.gate {
				t.Errorf("details = %v, want gate %s", details(t, err), c.gate)
			}
		})
	}
	// A symlink that leads out of both trees.
	if err := os.Symlink("../../secret.txt", filepath.Join(run, "both", "escape")); err != nil {
		t.Fatal(err)
	}
	_, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "both/escape", "find": "secret", "replace": "pwned"}, RunDir: run, Permits: permits})
	if codeOf(t, err) != "NIKA-SEC-004" {
		t.Errorf("symlink escape: err = %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "secret.txt")); string(got) != "secret" {
		t.Errorf("the secret was edited: %q", got)
	}
	// Without permits the same link is followed (D38).
	if _, err := exec(t, Call{Name: "nika:edit", Args: map[string]any{"path": "both/escape", "find": "secret", "replace": "s"}, RunDir: run}); err != nil {
		t.Errorf("without permits: %v", err)
	}
}
