package tools

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
)

// The runtime permits.fs check (LANGUAGE.md §2.4, D38).
//
// The subject is made absolute (relative to the run directory, `~` to the home directory) and
// cleaned, and its symlinks are resolved, before it is matched: a symlink inside a permitted
// tree that points outside it is outside. A path that does not exist yet resolves through its
// deepest existing ancestor (a dangling symlink is followed to its target), so a write cannot
// escape through a link either.
//
// Globs: a relative glob is anchored at the run directory, `/…` is absolute and `~/…` is
// anchored at the home directory. The anchor (run or home directory) has its own symlinks
// resolved, so a run directory reached through a link still matches; the glob text itself is
// taken literally. `*` and `?` match within one segment, a `**` segment spans any number of
// segments (zero included: `out/**` also covers `out` itself), `[…]` is a class (`[!…]` and
// `[^…]` negate; a class never matches `/`), `\` escapes the next character. A `**` inside a
// longer segment (`a**b`) matches like `*`. There is no negation: any matching glob admits.

const (
	gateRead  = "fs.read"
	gateWrite = "fs.write"
)

// absPath makes a user path absolute and clean: `~` and `~/…` are under the home directory,
// other relative paths under runDir.
func absPath(runDir, p string) (string, error) {
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

// resolvePath resolves every symlink of an absolute clean path, including the components that
// do not exist yet (which stay as they are) and a dangling final link (followed to its target).
func resolvePath(p string) (string, error) {
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

// checkFS resolves the subject of an effectful builtin and, under permits, checks it against
// the gate's globs. It returns the resolved path, on which the builtin then acts.
func checkFS(call Call, gate, given, abs string) (string, error) {
	resolved, rerr := resolvePath(abs)
	if call.Permits == nil {
		if rerr != nil {
			return abs, nil // the operation itself reports the problem
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
	globs := call.Permits.FSRead
	if gate == gateWrite {
		globs = call.Permits.FSWrite
	}
	anchors := newAnchors(call.RunDir)
	subject := filepath.ToSlash(resolved)
	for _, g := range globs {
		if fsMatch(g, subject, anchors) {
			return resolved, nil
		}
	}
	return "", deny("")
}

// anchors resolves the run and home directories once per check.
type anchors struct {
	runDir string
	home   func() (string, bool)
}

func newAnchors(runDir string) *anchors {
	a := &anchors{runDir: anchorDir(runDir)}
	var (
		home   string
		homeOK bool
		done   bool
	)
	a.home = func() (string, bool) {
		if !done {
			done = true
			if h, err := os.UserHomeDir(); err == nil {
				home, homeOK = anchorDir(h), true
			}
		}
		return home, homeOK
	}
	return a
}

// anchorDir makes a directory absolute, clean and symlink-resolved, in slash form.
func anchorDir(d string) string {
	abs, err := filepath.Abs(d)
	if err != nil {
		abs = filepath.Clean(d)
	}
	if r, err := resolvePath(abs); err == nil {
		abs = r
	}
	return filepath.ToSlash(abs)
}

// fsMatch reports whether the absolute, clean, resolved slash path subject matches glob g.
func fsMatch(g, subject string, a *anchors) bool {
	re, ok := fsGlobRegexp(g, a)
	return ok && re.MatchString(subject)
}

// splitFSGlob anchors one permits.fs glob: a relative glob at the run directory, `/…` at the
// root, `~/…` at the home directory; leading `..` segments move the anchor up. It returns the
// anchor and the remaining clean segments; ok is false for an unusable glob.
func splitFSGlob(g string, a *anchors) (anchor string, segs []string, ok bool) {
	if g == "" || !utf8.ValidString(g) {
		return "", nil, false
	}
	var rest string
	switch {
	case g == "~" || strings.HasPrefix(g, "~/"):
		home, ok := a.home()
		if !ok {
			return "", nil, false
		}
		anchor, rest = home, strings.TrimPrefix(g[1:], "/")
	case strings.HasPrefix(g, "/"):
		anchor, rest = "/", strings.TrimLeft(g, "/")
	default:
		anchor, rest = a.runDir, g
	}
	rest = path.Clean(rest)
	if rest != "." {
		segs = strings.Split(rest, "/")
	}
	for len(segs) > 0 && segs[0] == ".." {
		anchor = path.Dir(anchor)
		segs = segs[1:]
	}
	return anchor, segs, true
}

// fsGlobRegexp compiles one permits.fs glob to an anchored regular expression over absolute
// slash paths. ok is false for a glob that can match nothing (an unusable anchor, a bad class).
func fsGlobRegexp(g string, a *anchors) (*regexp.Regexp, bool) {
	anchor, segs, ok := splitFSGlob(g, a)
	if !ok {
		return nil, false
	}
	anchor = strings.TrimSuffix(path.Clean(anchor), "/") // "/" becomes ""
	var b strings.Builder
	b.WriteString("^")
	b.WriteString(regexp.QuoteMeta(anchor))
	for _, seg := range segs {
		if seg == "**" {
			b.WriteString("(?:/.*)?")
			continue
		}
		b.WriteString("/")
		if !segmentRegexp(&b, seg) {
			return nil, false
		}
	}
	if anchor == "" && len(segs) == 0 {
		b.WriteString("/")
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, false
	}
	return re, true
}

// segmentRegexp writes the expression of one glob segment (no `/` inside).
func segmentRegexp(b *strings.Builder, seg string) bool {
	for i := 0; i < len(seg); {
		r, n := utf8.DecodeRuneInString(seg[i:])
		switch r {
		case '*':
			for i < len(seg) && seg[i] == '*' {
				i++
			}
			b.WriteString("[^/]*")
			continue
		case '?':
			b.WriteString("[^/]")
		case '\\':
			if i+1 >= len(seg) {
				b.WriteString(`\\`)
			} else {
				r2, m := utf8.DecodeRuneInString(seg[i+1:])
				b.WriteString(regexp.QuoteMeta(string(r2)))
				n += m
			}
		case '[':
			end, class, ok := globClass(seg, i)
			if !ok {
				b.WriteString(`\[`) // an unclosed or empty class is a literal `[`
				break
			}
			b.WriteString(class)
			i = end
			continue
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += n
	}
	return true
}

// globClass translates the class opening at seg[start] == '[' and returns the offset after it.
func globClass(seg string, start int) (end int, class string, ok bool) {
	var b strings.Builder
	i := start + 1
	neg := i < len(seg) && (seg[i] == '!' || seg[i] == '^')
	if neg {
		i++
	}
	b.WriteString("[")
	if neg {
		b.WriteString("^/")
	}
	first := true
	for i < len(seg) {
		r, n := utf8.DecodeRuneInString(seg[i:])
		switch {
		case r == ']' && !first:
			b.WriteString("]")
			return i + 1, b.String(), true
		case r == ']':
			return 0, "", false // empty class
		case r == '\\' && i+1 < len(seg):
			r2, m := utf8.DecodeRuneInString(seg[i+1:])
			b.WriteString(classRune(r2))
			n += m
		case r == '-' && !first && i+1 < len(seg) && seg[i+1] != ']':
			b.WriteString("-")
		default:
			b.WriteString(classRune(r))
		}
		first = false
		i += n
	}
	return 0, "", false
}

// classRune writes one character of a class so that RE2 reads it literally.
func classRune(r rune) string {
	switch {
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x{%x}`, r)
	case r < utf8.RuneSelf && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == ' '):
		return `\` + string(r)
	}
	return string(r)
}
