package main

// Every example that needs no real model runs offline from the repository
// root, as the README's command does (DECISIONS.md D34): its exit code and
// its stdout are golden. Examples that name a cloud model are only checked
// (examples_test.go) until their providers exist.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// modelRef finds the models an example names.
var modelRef = regexp.MustCompile(`(?m)^\s*model:\s*"?([a-z]+)/`)

// offlineArgs are the flags that make an example offline when its defaults are not (the
// command its header comment gives).
var offlineArgs = map[string][]string{
	"model-by-var": {"--var", "model=mock/echo"},
}

func TestExamplesRun(t *testing.T) {
	root := filepath.Join(pkgDir, "..", "..")
	files, err := filepath.Glob(filepath.Join(root, "examples", "workflows", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, abs := range files {
		src, err := os.ReadFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		offline := true
		for _, m := range modelRef.FindAllStringSubmatch(string(src), -1) {
			offline = offline && m[1] == "mock"
		}
		name := strings.TrimSuffix(filepath.Base(abs), ".nika.yaml")
		if !offline {
			t.Logf("%s needs a real model: checked, not run", name)
			continue
		}
		ran++
		rel := filepath.ToSlash(filepath.Join("examples", "workflows", filepath.Base(abs)))
		t.Run(name, func(t *testing.T) {
			r := runBinary(t, root, append([]string{"run", "--no-trace", "--quiet", rel}, offlineArgs[name]...)...)
			golden := filepath.Join(pkgDir, "testdata", "golden", "examples", name+".json")
			if *update {
				if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if r.code != 0 {
				t.Errorf("nika run %s: exit %d, want 0\n%s", rel, r.code, r.stderr)
			}
			if r.stdout != string(want) {
				t.Errorf("nika run %s: stdout\n%s\nwant\n%s", rel, r.stdout, want)
			}
		})
	}
	if ran < 5 {
		t.Errorf("only %d examples ran offline, want at least 5", ran)
	}
}
