package main

// Black-box runs of the file and data builtins (issue 6): edit, glob, grep, json_diff,
// json_merge_patch and prompt. Each fixture under testdata/builtins-files runs in a copy of
// that directory, completed with what git cannot hold well (a directory symlink, a binary
// file); its stdout is golden (-update rewrites it).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinsFiles(t *testing.T) {
	src := filepath.Join(pkgDir, "testdata", "builtins-files")
	cases := []struct {
		name string // the fixture is NAME.nika.yaml unless file is set
		file string
		args []string
		// after checks the run directory once the run is over.
		after func(t *testing.T, dir string)
	}{
		{name: "edit", after: func(t *testing.T, dir string) {
			got, err := os.ReadFile(filepath.Join(dir, "tree", "src", "a.go"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "package src\n\n// Goodbye says hello. yy\nfunc Goodbye() string { return \"Goodbye\" }\n"; string(got) != want {
				t.Errorf("tree/src/a.go = %q, want %q", got, want)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "outside.txt")); string(got) != "secret TODO\n" {
				t.Errorf("a file outside permits.fs.write was edited: %q", got)
			}
		}},
		{name: "glob"},
		{name: "grep"},
		{name: "json"},
		{name: "prompt"},
		{name: "prompt-yes", file: "prompt.nika.yaml", args: []string{"--yes"}},
	}
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("src", filepath.Join(dir, "tree", "linkdir")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tree", "data.bin"), []byte("TODO\x00binary\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range cases {
		file := c.file
		if file == "" {
			file = c.name + ".nika.yaml"
		}
		args := append([]string{"run", "--no-trace", "--quiet", file}, c.args...)
		golden := filepath.Join(src, c.name+".golden.json")
		// The built binary, then Main in-process (STYLE.md: both are exercised).
		for _, mode := range []string{"binary", "in-process"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				dir := setup(t)
				var r result
				if mode == "binary" {
					r = runBinary(t, dir, args...)
				} else {
					r = runInProcess(t, dir, args...)
				}
				if r.code != 0 {
					t.Fatalf("nika run %s: exit %d\n%s", file, r.code, r.stderr)
				}
				if *update && mode == "binary" {
					if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if r.stdout != string(want) {
					t.Errorf("stdout\n%s\nwant\n%s", r.stdout, want)
				}
				if strings.Contains(r.stdout, dir) {
					t.Errorf("stdout names the temporary run directory: %s", r.stdout)
				}
				if c.after != nil {
					c.after(t, dir)
				}
			})
		}
	}
}
