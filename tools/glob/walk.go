package glob

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nikahq/nika/tools/fsgate"
)

// Entry is one directory or file met by a Walk.
type Entry struct {
	Abs      string // the OS path, under the root as given (symlinks not resolved)
	Resolved string // the OS path with every symlink resolved
	Rel      string // the slash path below the root
}

// Walk visits the tree below a root without following directory symlinks (see the package
// decisions), in the order of os.ReadDir.
type Walk struct {
	MaxDepth int               // the deepest file level visited (1: the root's entries); -1: all
	EnterDir func(Entry) bool  // whether to enter a directory; nil: always
	File     func(Entry) error // called for each regular file, or symlink to one; an error stops the walk
}

// Run visits the tree of the directory abs, whose resolved path is resolved. It returns the
// first error of File, or ctx.Err() when ctx ends (checked at each directory).
func (w *Walk) Run(ctx context.Context, abs, resolved string) error {
	return w.dir(ctx, Entry{Abs: abs, Resolved: resolved}, 0)
}

func (w *Walk) dir(ctx context.Context, d Entry, depth int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(d.Abs)
	if err != nil {
		return nil
	}
	for _, de := range entries {
		name := de.Name()
		e := Entry{Abs: filepath.Join(d.Abs, name), Resolved: filepath.Join(d.Resolved, name), Rel: name}
		if d.Rel != "" {
			e.Rel = d.Rel + "/" + name
		}
		mode := de.Type()
		switch {
		case mode.IsDir():
			if w.MaxDepth >= 0 && depth+1 >= w.MaxDepth {
				continue // its files would be deeper than any match
			}
			if w.EnterDir != nil && !w.EnterDir(e) {
				continue
			}
			if err := w.dir(ctx, e, depth+1); err != nil {
				return err
			}
			continue
		case mode&fs.ModeSymlink != 0:
			fi, err := os.Stat(e.Abs)
			if err != nil || !fi.Mode().IsRegular() {
				continue // dangling, a directory (never followed), or special
			}
			r, err := fsgate.Resolve(e.Abs)
			if err != nil {
				continue
			}
			e.Resolved = r
		case !mode.IsRegular():
			continue
		}
		if w.MaxDepth >= 0 && depth+1 > w.MaxDepth {
			continue
		}
		if err := w.File(e); err != nil {
			return err
		}
	}
	return nil
}

// Join joins an output prefix ("." for none, as Pattern.Prefix gives it) and a slash path below
// it.
func Join(prefix, rel string) string {
	switch prefix {
	case ".":
		return rel
	case "/":
		return "/" + rel
	}
	return prefix + "/" + rel
}
