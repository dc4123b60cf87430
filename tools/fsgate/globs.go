package fsgate

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The permits.fs globs (see the package documentation), compiled to anchored RE2 expressions
// over absolute slash paths.

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
	if r, err := Resolve(abs); err == nil {
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
