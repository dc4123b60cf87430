package fsgate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nikahq/nika/spec"
)

func TestFSGlobMatch(t *testing.T) {
	a := &anchors{runDir: "/run", home: func() (string, bool) { return "/home/u", true }}
	cases := []struct {
		glob, subject string
		want          bool
	}{
		{"src/**", "/run/src", true},
		{"src/**", "/run/src/a/b/c.go", true},
		{"src/**", "/run/srcx/a", false},
		{"src/**", "/run/other/src/a", false},
		{"src/*.go", "/run/src/a.go", true},
		{"src/*.go", "/run/src/.hidden.go", true},
		{"src/*.go", "/run/src/a/b.go", false},
		{"src/**/*.go", "/run/src/a.go", true},
		{"src/**/*.go", "/run/src/a/b/c.go", true},
		{"src/**/*.go", "/run/src/a/b/c.txt", false},
		{"**/*.md", "/run/README.md", true},
		{"**/*.md", "/run/docs/x/y.md", true},
		{"**/*.md", "/elsewhere/y.md", false},
		{"**", "/run", true},
		{"**", "/run/any/thing", true},
		{"**", "/runner/x", false},
		{".", "/run", true},
		{".", "/run/x", false},
		{"./out/**", "/run/out/x", true},
		{"docs/?.md", "/run/docs/a.md", true},
		{"docs/?.md", "/run/docs/ab.md", false},
		{"docs/?.md", "/run/docs//.md", false},
		{"data/[abc].csv", "/run/data/b.csv", true},
		{"data/[abc].csv", "/run/data/d.csv", false},
		{"data/[a-c].csv", "/run/data/c.csv", true},
		{"data/[!a-c].csv", "/run/data/d.csv", true},
		{"data/[^a-c].csv", "/run/data/a.csv", false},
		{"data/[!x]", "/run/data/a/b", false},
		{`data/\*.csv`, "/run/data/*.csv", true},
		{`data/\*.csv`, "/run/data/a.csv", false},
		{"data/a**b", "/run/data/axyb", true},
		{"data/a**b", "/run/data/ax/yb", false},
		{"data/[.csv", "/run/data/[.csv", true},
		{"a.b+c(d)", "/run/a.b+c(d)", true},
		{"a.b+c(d)", "/run/aXb+c(d)", false},
		{"../shared/**", "/shared/x", true},
		{"../shared/**", "/run/shared/x", false},
		{"/etc/hosts", "/etc/hosts", true},
		{"/etc/*", "/etc/passwd", true},
		{"/etc/*", "/etc/ssl/cert.pem", false},
		{"/**", "/anything/at/all", true},
		{"/", "/", true},
		{"~/notes/**", "/home/u/notes/a.txt", true},
		{"~/notes/**", "/run/notes/a.txt", false},
		{"~", "/home/u", true},
		{"", "/run", false},
		{"data/[z-a]", "/run/data/q", false},
	}
	for _, c := range cases {
		if got := fsMatch(c.glob, c.subject, a); got != c.want {
			t.Errorf("fsMatch(%q, %q) = %v, want %v", c.glob, c.subject, got, c.want)
		}
	}
	// An anchor with glob or regexp metacharacters is literal.
	odd := &anchors{runDir: "/tmp/a[1]+(x)", home: func() (string, bool) { return "", false }}
	if !fsMatch("*.txt", "/tmp/a[1]+(x)/f.txt", odd) || fsMatch("*.txt", "/tmp/a1+(x)/f.txt", odd) {
		t.Error("the run directory is not matched literally")
	}
	if fsMatch("~/x", "/x", odd) {
		t.Error("a ~ glob without a home directory matched")
	}
}

// Reach compares a directory with each glob's literal prefix: they must lie on one branch.
func TestReach(t *testing.T) {
	a := &anchors{runDir: "/run", home: func() (string, bool) { return "/home/u", true }}
	cases := []struct {
		glob, root string
	}{
		{"src/**", "/run/src"},
		{"src/*.go", "/run/src"},
		{"src/main.go", "/run/src/main.go"},
		{"**", "/run"},
		{"../shared/x/**", "/shared/x"},
		{"/etc/hosts", "/etc/hosts"},
		{"/**", "/"},
		{"~/notes/*", "/home/u/notes"},
		{`a/\*/b`, "/run/a"},
		{"a/[bc]/d", "/run/a"},
	}
	for _, c := range cases {
		if got, ok := permitRoot(c.glob, a); !ok || got != c.root {
			t.Errorf("permitRoot(%q) = %q, %v; want %q", c.glob, got, ok, c.root)
		}
	}
	r := &Reach{roots: []string{"/run/src", "/etc/hosts"}}
	for p, want := range map[string]bool{
		"/": true, "/run": true, "/run/src": true, "/run/src/a/b": true, "/etc": true,
		"/run/srcx": false, "/run/other": false, "/etc/ssl": false, "/home": false,
	} {
		if got := r.Reaches(filepath.FromSlash(p)); got != want {
			t.Errorf("Reaches(%q) = %v, want %v", p, got, want)
		}
	}
	if NewReach(nil, "/run") != nil {
		t.Error("a reach without permits")
	}
	// A glob that can match nothing (a reversed range) is left out.
	if r := NewReach(&spec.Permits{FSRead: []string{"src/**", "[z-a]"}}, "/run"); len(r.res) != 1 || !r.Admits("/run/src/a") || r.Admits("/run/b") {
		t.Errorf("NewReach: %d globs", len(r.res))
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
	if _, err := Resolve(filepath.Join(dir, "a")); err == nil {
		t.Fatal("a link loop resolved")
	}
	// Without permits the operation reports the loop itself; under permits it is outside.
	if got, err := Check(nil, dir, Read, "a", filepath.Join(dir, "a")); err != nil || got != filepath.Join(dir, "a") {
		t.Errorf("Check without permits: %q, %v", got, err)
	}
	_, err := Check(&spec.Permits{FSRead: []string{"**"}}, dir, Read, "a", filepath.Join(dir, "a"))
	if se, ok := err.(*spec.Error); !ok || se.Code != "NIKA-SEC-004" || se.Details["gate"] != Read {
		t.Errorf("Check under permits: %v", err)
	}
}
