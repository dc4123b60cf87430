package fsgate

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nikahq/nika/spec"
)

// The gates, as details.gate names them.
const (
	Read  = "fs.read"
	Write = "fs.write"
)

const codePermits = spec.CodeSecPermits

// Abs makes a user path absolute and clean: `~` and `~/…` are under the home directory, other
// relative paths under runDir ("" is the process's working directory).
func Abs(runDir, p string) (string, error) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand ~: %w", err)
		}
		p = filepath.Join(home, p[1:])
	case !filepath.IsAbs(p):
		p = filepath.Join(runDir, p)
	}
	return filepath.Abs(p)
}

// maxLinks bounds the symlinks followed while resolving one path (as ELOOP does).
const maxLinks = 40

var errLinkLoop = errors.New("too many levels of symbolic links")

// Resolve resolves every symlink of an absolute clean path, including the components that do
// not exist yet (which stay as they are) and a dangling final link (followed to its target).
func Resolve(p string) (string, error) {
	links := 0
	return resolve(p, &links)
}

func resolve(p string, links *int) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" {
		return p, nil // the root
	}
	rd, err := resolve(dir, links)
	if err != nil {
		return "", err
	}
	q := filepath.Join(rd, base)
	fi, err := os.Lstat(q)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return q, nil
	}
	// A link that EvalSymlinks could not follow: dangling, or part of a loop.
	*links++
	if *links > maxLinks {
		return "", errLinkLoop
	}
	target, err := os.Readlink(q)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rd, target)
	}
	return resolve(filepath.Clean(target), links)
}

// Check resolves the subject abs of an effectful builtin (given names it in messages) and,
// under permits (nil: none, only the floors apply), checks it against the gate's globs. It
// returns the resolved path, on which the builtin then acts; without permits, a path that
// does not resolve is returned as it is, for the operation itself to report.
func Check(permits *spec.Permits, runDir, gate, given, abs string) (string, error) {
	resolved, rerr := Resolve(abs)
	if permits == nil {
		if rerr != nil {
			return abs, nil
		}
		return resolved, nil
	}
	deny := func(why string) error {
		return spec.NewError(codePermits, fmt.Sprintf("%q is outside `permits.%s`%s", given, gate, why),
			map[string]any{"path": given, "resolved": filepath.ToSlash(resolved), "gate": gate})
	}
	if rerr != nil {
		resolved = abs
		return "", deny(": " + rerr.Error())
	}
	globs := permits.FSRead
	if gate == Write {
		globs = permits.FSWrite
	}
	anchors := newAnchors(runDir)
	subject := filepath.ToSlash(resolved)
	for _, g := range globs {
		if fsMatch(g, subject, anchors) {
			return resolved, nil
		}
	}
	return "", deny("")
}

// Reach answers, for one call under permits, whether permits.fs.read admits a file and
// whether a directory can hold admitted files. It compiles the globs once per call.
type Reach struct {
	res   []*regexp.Regexp
	roots []string // the literal prefix of each glob: absolute, slash-separated
}

// NewReach returns the reach of permits.fs.read, or nil without permits.
func NewReach(permits *spec.Permits, runDir string) *Reach {
	if permits == nil {
		return nil
	}
	a := newAnchors(runDir)
	r := &Reach{}
	for _, g := range permits.FSRead {
		re, ok := fsGlobRegexp(g, a)
		if !ok {
			continue
		}
		root, ok := permitRoot(g, a)
		if !ok {
			continue
		}
		r.res = append(r.res, re)
		r.roots = append(r.roots, root)
	}
	return r
}

// Admits reports whether the resolved OS path p matches a fs.read glob.
func (r *Reach) Admits(p string) bool {
	s := filepath.ToSlash(p)
	for _, re := range r.res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// Reaches reports whether some fs.read glob may admit the resolved directory p or a path
// below it: p and the glob's literal prefix lie on one branch of the tree.
func (r *Reach) Reaches(p string) bool {
	s := filepath.ToSlash(p)
	for _, root := range r.roots {
		if pathWithin(s, root) || pathWithin(root, s) {
			return true
		}
	}
	return false
}

// pathWithin reports whether the clean absolute slash path p is dir or below it.
func pathWithin(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// permitRoot is the literal prefix of a permits.fs glob, anchored as fsGlobRegexp anchors it:
// its leading segments up to the first one with a glob character.
func permitRoot(g string, a *anchors) (string, bool) {
	anchor, segs, ok := splitFSGlob(g, a)
	if !ok {
		return "", false
	}
	root := path.Clean(anchor)
	for _, s := range segs {
		if strings.ContainsAny(s, `*?[\`) {
			break
		}
		root = path.Join(root, s)
	}
	return root, true
}

// WalkRoot resolves the root rootAbs of a glob or grep walk and, under permits (r non-nil),
// refuses a root that no fs.read glob can reach (NIKA-SEC-004). given names the root in
// messages. Without permits, a root that does not resolve is returned as it is (the walk finds
// nothing there).
func WalkRoot(r *Reach, given, rootAbs string) (string, error) {
	resolved, err := Resolve(rootAbs)
	if r == nil {
		if err != nil {
			return rootAbs, nil
		}
		return resolved, nil
	}
	deny := func(why string) error {
		return spec.NewError(codePermits, fmt.Sprintf("%q is outside `permits.fs.read`%s", given, why),
			map[string]any{"path": given, "resolved": filepath.ToSlash(resolved), "gate": Read})
	}
	if err != nil {
		resolved = rootAbs
		return "", deny(": " + err.Error())
	}
	if !r.Reaches(resolved) {
		return "", deny(": no `fs.read` glob covers it or anything below it")
	}
	return resolved, nil
}
