package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/fsgate"
	"github.com/nikahq/nika/tools/glob"
)

// nika:glob (LANGUAGE.md §7.3): the pattern is compiled by tools/glob (whose package doc holds
// the decisions on roots, `**` and symlinks), and its tree walked under the permits.fs.read
// reach of tools/fsgate.
//
// Decisions where the text is silent, beyond tools/glob's:
//   - `exclude` patterns follow the same syntax and are anchored the same way (relative ones
//     at the run directory, whatever the main pattern is); a file is left out when its path
//     matches one, and a directory whose path matches one is not entered at all, so
//     `exclude: [".git", "**/node_modules"]` prunes those trees; an excluded pattern root (or a
//     directory above it) gives [].
//   - A missing root, or one that is a file, gives []; unreadable directories are skipped.
//   - Under permits, a file is listed only when its symlink-resolved path matches
//     permits.fs.read. The root is "outside" — NIKA-SEC-004 — when no fs.read glob can match
//     the root or anything below it (compared by their literal prefixes), so `**/*.go` under
//     `fs.read: ["src/**"]` lists src's Go files, while `/etc/*` is refused. Directories no
//     glob can reach are not entered.

const codeGlob = spec.CodeBuiltinGlob

// runGlob lists the regular files matching `pattern` and none of `exclude`, byte-sorted.
func runGlob(ctx context.Context, in *invocation) (any, error) {
	pattern, err := in.str("pattern", "")
	if err != nil {
		return nil, err
	}
	var excludes []string
	if v, ok := in.args["exclude"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, in.typeError("exclude", "a list of strings", v)
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, in.typeError("exclude", "a list of strings", v)
			}
			excludes = append(excludes, s)
		}
	}
	g, err := glob.Compile(pattern, in.call.RunDir)
	if err != nil {
		return nil, globError(pattern, err)
	}
	var ex []*glob.Pattern
	for _, e := range excludes {
		c, err := glob.Compile(e, in.call.RunDir)
		if err != nil {
			return nil, globError(e, err)
		}
		ex = append(ex, c)
	}
	reach := fsgate.NewReach(in.call.Permits, in.call.RunDir)
	root, err := fsgate.WalkRoot(reach, g.Prefix(), g.Root())
	if err != nil {
		return nil, err
	}
	var out []string
	if g.Never() {
		return []any{}, nil
	}
	excluded := func(abs string) bool {
		for _, e := range ex {
			if e.MatchAbs(abs) {
				return true
			}
		}
		return false
	}
	// The root, or a directory above it, matching an exclude prunes the whole walk, as it
	// would had the walk met it below a higher root.
	for d := g.Root(); ; {
		if excluded(d) {
			return []any{}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	w := &glob.Walk{
		MaxDepth: g.MaxDepth(),
		EnterDir: func(e glob.Entry) bool {
			return !excluded(e.Abs) && (reach == nil || reach.Reaches(e.Resolved))
		},
		File: func(e glob.Entry) error {
			if !g.MatchRel(e.Rel) || excluded(e.Abs) {
				return nil
			}
			if reach != nil && !reach.Admits(e.Resolved) {
				return nil
			}
			out = append(out, glob.Join(g.Prefix(), e.Rel))
			return nil
		},
	}
	if err := walk(ctx, w, g.Root(), root); err != nil {
		return nil, err
	}
	sort.Strings(out)
	list := make([]any, len(out)) // the value model has []any, never []string
	for i, p := range out {
		list[i] = p
	}
	return list, nil
}

// walk runs a tree walk of nika:glob or nika:grep; a walk stopped by ctx is NIKA-CANCEL-001.
func walk(ctx context.Context, w *glob.Walk, abs, resolved string) error {
	err := w.Run(ctx, abs, resolved)
	if err != nil && err == ctx.Err() {
		return cancelError(ctx)
	}
	return err
}

func globError(pattern string, err error) error {
	return spec.NewError(codeGlob, fmt.Sprintf("invalid glob `%s`: %s; `*` and `?` match within a segment, `**` is a whole segment, `[…]` and `{…}` must be closed", pattern, err.Error()),
		map[string]any{"pattern": pattern})
}
