package main

// Every example passes `nika check` (DECISIONS.md D34). The examples run from
// the repository root, as the README's command does, in the fixed
// environment of TestMain (no API keys, no user configuration): examples that
// need a real model are checked, not run.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// minExamples guards against the glob silently matching nothing.
const minExamples = 6

func TestExamplesPassCheck(t *testing.T) {
	root := filepath.Join(pkgDir, "..", "..")
	files, err := filepath.Glob(filepath.Join(root, "examples", "workflows", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < minExamples {
		t.Fatalf("examples/workflows holds %d workflows, want at least %d", len(files), minExamples)
	}
	for _, abs := range files {
		rel := filepath.ToSlash(filepath.Join("examples", "workflows", filepath.Base(abs)))
		t.Run(filepath.Base(abs), func(t *testing.T) {
			// The README's command, text output.
			r := runBinary(t, root, "check", rel)
			if r.code != 0 {
				t.Errorf("nika check %s: exit %d, want 0\n%s", rel, r.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("nika check %s: stdout = %q, want empty", rel, r.stdout)
			}
			for _, line := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(line, rel+":") && !strings.Contains(line, ": warning[") {
					t.Errorf("nika check %s: error finding: %s", rel, line)
				}
			}
			if r.stderr != "" {
				t.Logf("nika check %s:\n%s", rel, r.stderr)
			}

			// The same with --json: valid, no errors; warnings are logged.
			r = runBinary(t, root, "check", "--json", rel)
			if r.code != 0 {
				t.Errorf("nika check --json %s: exit %d, want 0", rel, r.code)
			}
			if r.stderr != "" {
				t.Errorf("nika check --json %s: stderr = %q, want empty", rel, r.stderr)
			}
			var rep struct {
				Valid bool `json:"valid"`
				Files []struct {
					File     string            `json:"file"`
					Valid    bool              `json:"valid"`
					Errors   []json.RawMessage `json:"errors"`
					Warnings []json.RawMessage `json:"warnings"`
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("nika check --json %s: %v\n%s", rel, err, r.stdout)
			}
			if !rep.Valid || len(rep.Files) != 1 || rep.Files[0].File != rel || !rep.Files[0].Valid {
				t.Errorf("nika check --json %s: report = %s", rel, r.stdout)
			}
			for _, f := range rep.Files {
				for _, e := range f.Errors {
					t.Errorf("nika check --json %s: error %s", rel, e)
				}
				for _, w := range f.Warnings {
					t.Logf("nika check --json %s: warning %s", rel, w)
				}
			}

			// A valid example also has a task graph.
			r = runBinary(t, root, "graph", "--format", "json", rel)
			if r.code != 0 || r.stderr != "" || !json.Valid([]byte(r.stdout)) {
				t.Errorf("nika graph --format json %s: exit %d, stderr %q, stdout %q", rel, r.code, r.stderr, r.stdout)
			}
		})
	}
}
