package glob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// tree builds dir with the given files (and their directories) and symlinks.
func tree(t *testing.T, files []string, links map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The walk lists regular files and links to them, never follows a directory link, stops at
// MaxDepth, and asks EnterDir before it enters a directory.
func TestWalk(t *testing.T) {
	dir := tree(t, []string{"a", "d/b", "d/e/c", "skip/x"}, map[string]string{"lf": "a", "ld": "d", "dangling": "nowhere"})
	var got []string
	w := &Walk{
		MaxDepth: 2,
		EnterDir: func(e Entry) bool { return e.Rel != "skip" },
		File: func(e Entry) error {
			got = append(got, e.Rel)
			if e.Rel == "lf" && e.Resolved != filepath.Join(dir, "a") {
				t.Errorf("lf resolves to %q", e.Resolved)
			}
			return nil
		},
	}
	if err := w.Run(context.Background(), dir, dir); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"a", "d/b", "lf"}; !slices.Equal(got, want) {
		t.Errorf("visited %q, want %q", got, want)
	}
	boom := errors.New("boom")
	w = &Walk{MaxDepth: -1, File: func(Entry) error { return boom }}
	if err := w.Run(context.Background(), dir, dir); err != boom {
		t.Errorf("File's error: %v", err)
	}
	if err := w.Run(context.Background(), filepath.Join(dir, "missing"), filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing root: %v", err)
	}
}

// A cancelled walk stops at the next directory with ctx.Err().
func TestWalkCancellation(t *testing.T) {
	var files []string
	for _, d := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		files = append(files, d+"/x", d+"/y")
	}
	dir := tree(t, files, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string
	w := &Walk{MaxDepth: -1, File: func(e Entry) error {
		seen = append(seen, e.Rel)
		cancel() // the walk must stop at the next directory
		return nil
	}}
	if err := w.Run(ctx, dir, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(seen) != 2 {
		t.Errorf("visited %q after the cancellation, want the two files of the first directory", seen)
	}
}

func TestJoin(t *testing.T) {
	for _, c := range [][3]string{{".", "a/b", "a/b"}, {"/", "etc/x", "/etc/x"}, {"src", "a", "src/a"}, {"/home/u", "a", "/home/u/a"}} {
		if got := Join(c[0], c[1]); got != c[2] {
			t.Errorf("Join(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
