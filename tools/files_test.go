package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain.txt"), []byte("héllo\n"))
	writeFile(t, filepath.Join(dir, "bom.txt"), []byte("\xEF\xBB\xBFhi"))
	writeFile(t, filepath.Join(dir, "latin1.txt"), []byte("caf\xE9"))
	writeFile(t, filepath.Join(dir, "sub", "n.txt"), []byte("nested"))
	writeFile(t, filepath.Join(dir, "empty.txt"), nil)
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		{"relative utf-8", map[string]any{"path": "plain.txt"}, "héllo\n", ""},
		{"absolute", map[string]any{"path": filepath.Join(dir, "sub", "n.txt")}, "nested", ""},
		{"dot segments", map[string]any{"path": "sub/../plain.txt"}, "héllo\n", ""},
		{"bom stripped", map[string]any{"path": "bom.txt"}, "hi", ""},
		{"bom stripped in latin1", map[string]any{"path": "bom.txt", "encoding": "latin1"}, "hi", ""},
		{"latin1", map[string]any{"path": "latin1.txt", "encoding": "latin1"}, "café", ""},
		{"empty", map[string]any{"path": "empty.txt"}, "", ""},
		{"binary keeps everything", map[string]any{"path": "bom.txt", "binary": true}, []byte("\xEF\xBB\xBFhi"), ""},
		{"invalid utf-8", map[string]any{"path": "latin1.txt"}, nil, "NIKA-BUILTIN-READ-002"},
		{"not found", map[string]any{"path": "missing.txt"}, nil, "NIKA-BUILTIN-READ-001"},
		{"directory", map[string]any{"path": "sub"}, nil, "NIKA-BUILTIN-READ-001"},
		{"under a file", map[string]any{"path": "plain.txt/x"}, nil, "NIKA-BUILTIN-READ-001"},
		{"empty path", map[string]any{"path": ""}, nil, "NIKA-INVOKE-002"},
		{"bytes path", map[string]any{"path": []byte("plain.txt")}, nil, "NIKA-INVOKE-002"},
		{"bad encoding", map[string]any{"path": "plain.txt", "encoding": "utf-16"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:read", Args: c.args, RunDir: dir})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

func TestReadErrorNamesThePathAsGiven(t *testing.T) {
	dir := t.TempDir()
	_, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "nope.txt"}, RunDir: dir})
	if !strings.Contains(err.Error(), "`nope.txt`") || strings.Contains(err.Error(), dir) {
		t.Errorf("message %q should name the path as given, not the absolute one", err)
	}
	if d := details(t, err); d["path"] != "nope.txt" {
		t.Errorf("details = %v", d)
	}
}

func TestWrite(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  map[string]any
		out   any
		code  string
		file  string // the file to check, relative to dir
		want  string // its expected content
	}{
		{name: "string", args: map[string]any{"path": "a.txt", "content": "héllo"},
			out: map[string]any{"path": "a.txt", "bytes": 6}, file: "a.txt", want: "héllo"},
		{name: "bytes verbatim", args: map[string]any{"path": "b.bin", "content": []byte{0, 1, 2}},
			out: map[string]any{"path": "b.bin", "bytes": 3}, file: "b.bin", want: "\x00\x01\x02"},
		{name: "object as canonical JSON", args: map[string]any{"path": "c.json", "content": map[string]any{"b": 1, "a": []any{true, nil, "<&>"}}},
			out: map[string]any{"path": "c.json", "bytes": 29}, file: "c.json", want: `{"a":[true,null,"<&>"],"b":1}`},
		{name: "number", args: map[string]any{"path": "n.txt", "content": 1.5},
			out: map[string]any{"path": "n.txt", "bytes": 3}, file: "n.txt", want: "1.5"},
		{name: "null", args: map[string]any{"path": "null.txt", "content": nil},
			out: map[string]any{"path": "null.txt", "bytes": 4}, file: "null.txt", want: "null"},
		{name: "overwrite by default",
			setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "o.txt"), []byte("old content")) },
			args:  map[string]any{"path": "o.txt", "content": "new"},
			out:   map[string]any{"path": "o.txt", "bytes": 3}, file: "o.txt", want: "new"},
		{name: "exists and overwrite false",
			setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "o.txt"), []byte("old")) },
			args:  map[string]any{"path": "o.txt", "content": "new", "overwrite": false},
			code:  "NIKA-BUILTIN-WRITE-001", file: "o.txt", want: "old"},
		{name: "new file with overwrite false", args: map[string]any{"path": "fresh.txt", "content": "x", "overwrite": false},
			out: map[string]any{"path": "fresh.txt", "bytes": 1}, file: "fresh.txt", want: "x"},
		{name: "missing parent", args: map[string]any{"path": "d/e/f.txt", "content": "x"}, code: "NIKA-BUILTIN-WRITE-002"},
		{name: "create_dirs", args: map[string]any{"path": "d/e/f.txt", "content": "x", "create_dirs": true},
			out: map[string]any{"path": "d/e/f.txt", "bytes": 1}, file: "d/e/f.txt", want: "x"},
		{name: "target is a directory",
			setup: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
			args:  map[string]any{"path": "sub", "content": "x"}, code: "NIKA-BUILTIN-WRITE-003"},
		{name: "parent is a file",
			setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "f"), []byte("x")) },
			args:  map[string]any{"path": "f/g.txt", "content": "x", "create_dirs": true}, code: "NIKA-BUILTIN-WRITE-003"},
		{name: "missing content", args: map[string]any{"path": "x.txt"}, code: "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(t, dir)
			}
			out, err := exec(t, Call{Name: "nika:write", Args: c.args, RunDir: dir})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
			if c.file != "" {
				got, err := os.ReadFile(filepath.Join(dir, c.file))
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

// assertNoTempFiles fails when a temporary file of an atomic write is left anywhere under dir.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".nika-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteKeepsModeAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.sh")
	writeFile(t, target, []byte("old"))
	if err := os.Chmod(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.sh", filepath.Join(dir, "link.sh")); err != nil {
		t.Fatal(err)
	}
	if _, err := exec(t, Call{Name: "nika:write", Args: map[string]any{"path": "link.sh", "content": "new"}, RunDir: dir}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "link.sh"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	got, _ := os.ReadFile(target)
	fi, _ = os.Stat(target)
	if string(got) != "new" || fi.Mode().Perm() != 0o750 {
		t.Errorf("target holds %q with mode %v", got, fi.Mode().Perm())
	}
}

func TestWriteThenReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	content := []byte{0xff, 0x00, 'a'}
	if _, err := exec(t, Call{Name: "nika:write", Args: map[string]any{"path": "x.bin", "content": content}, RunDir: dir}); err != nil {
		t.Fatal(err)
	}
	out, err := exec(t, Call{Name: "nika:read", Args: map[string]any{"path": "x.bin", "binary": true}, RunDir: dir})
	if err != nil || !reflect.DeepEqual(out, content) {
		t.Fatalf("read back %v, %v", out, err)
	}
}

// A file over the 256 MiB bound is refused, not loaded: read gives READ-001 and edit EDIT-003
// (a sparse file costs no disk; loading it would take the engine down).
func TestReadAndEditRefuseHugeFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b := NewBuiltins()
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"nika:read", map[string]any{"path": "huge.txt"}, "NIKA-BUILTIN-READ-001"},
		{"nika:edit", map[string]any{"path": "huge.txt", "find": "a", "replace": "b"}, "NIKA-BUILTIN-EDIT-003"},
	} {
		_, err := b.Execute(context.Background(), Call{Name: tc.tool, Args: tc.args, RunDir: dir})
		var se *spec.Error
		if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(se.Message, "larger than the 256 MiB") {
			t.Errorf("%s: %v, want %s naming the bound", tc.tool, err, tc.code)
		}
	}
}
