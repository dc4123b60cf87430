package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
)

// nika:glob (LANGUAGE.md §7.3), and the tree walk it shares with nika:grep.
//
// A pattern is checked by catalog.CheckGlob (the static rule), then split into its literal root
// — the leading segments with no `*`, `?`, `[`, `{` (nor an escaped `/`), the last segment
// excepted — and the rest. The root is where the walk starts: nothing above or beside it is
// ever read. The rest is compiled to one RE2 expression over the path below the root, braces
// becoming alternations (so `{a,b}{c,d}…` never expands exponentially). Paths are matched with
// NUL, which no file name holds, as the separator, so `*`, `?` and classes can never cross a
// `/`, even a class such as `[!a]` or `[+-0]` that contains it.
//
// Decisions where the text is silent:
//   - `/…` is absolute and `~`, `~/…` are under the home directory (as for paths): outputs are
//     then absolute. Anything else is relative to the run directory and outputs are relative
//     to it too. Outputs are clean: `./src/*.go` gives `src/a.go`, `a//b` is `a/b`.
//   - `.` and `..` are meaningful in the literal root only (`../lib/*.go`); after the first
//     wildcard segment they match nothing, as no listed name is `.` or `..`.
//   - `**` is a whole segment and matches zero or more segments (`a/**/b` matches `a/b`); at the
//     end (`a/**`) it matches every file below `a`, not `a` itself. As a brace alternative
//     (`{**,x}/y`) it matches one or more segments.
//   - A trailing `/` matches nothing: only regular files are listed.
//   - The literal root itself is followed when it is a symlink (the user named it); below it,
//     symlinks to directories are never followed, and a symlink to a regular file is listed
//     (like nika:read, which follows it). Other file types (pipes, devices, sockets) are not.
//   - A missing root, or one that is a file, gives []; unreadable directories are skipped.
//   - `exclude` patterns follow the same syntax and are anchored the same way (relative ones
//     at the run directory, whatever the main pattern is); a file is left out when its path
//     matches one, and a directory whose path matches one is not entered at all, so
//     `exclude: [".git", "**/node_modules"]` prunes those trees; an excluded pattern root (or a
//     directory above it) gives [].
//   - Under permits, a file is listed only when its symlink-resolved path matches
//     permits.fs.read. The root is "outside" — NIKA-SEC-004 — when no fs.read glob can match
//     the root or anything below it (compared by their literal prefixes), so `**/*.go` under
//     `fs.read: ["src/**"]` lists src's Go files, while `/etc/*` is refused. Directories no
//     glob can reach are not entered.

const codeGlob = "NIKA-BUILTIN-GLOB-001"

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
	g, err := compileGlob(pattern, in.call.RunDir)
	if err != nil {
		return nil, globError(pattern, err)
	}
	var ex []*globPattern
	for _, e := range excludes {
		c, err := compileGlob(e, in.call.RunDir)
		if err != nil {
			return nil, globError(e, err)
		}
		ex = append(ex, c)
	}
	reach := newFSReach(in.call)
	root, err := walkRoot(in.call, reach, g.prefix, g.rootAbs)
	if err != nil {
		return nil, err
	}
	var out []string
	if g.never {
		return []any{}, nil
	}
	excluded := func(abs string) bool {
		for _, e := range ex {
			if e.matchAbs(abs) {
				return true
			}
		}
		return false
	}
	// The root, or a directory above it, matching an exclude prunes the whole walk, as it
	// would had the walk met it below a higher root.
	for d := g.rootAbs; ; {
		if excluded(d) {
			return []any{}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	w := &treeWalk{
		ctx:      ctx,
		maxDepth: g.maxDepth,
		enterDir: func(e walkEntry) bool {
			return !excluded(e.abs) && (reach == nil || reach.dirInReach(e.resolved))
		},
		file: func(e walkEntry) error {
			if !g.rest.MatchString(strings.ReplaceAll(e.rel, "/", "\x00")) || excluded(e.abs) {
				return nil
			}
			if reach != nil && !reach.admits(e.resolved) {
				return nil
			}
			out = append(out, joinOut(g.prefix, e.rel))
			return nil
		},
	}
	if err := w.walk(g.rootAbs, root); err != nil {
		return nil, err
	}
	sort.Strings(out)
	list := make([]any, len(out)) // the value model has []any, never []string
	for i, p := range out {
		list[i] = p
	}
	return list, nil
}

func globError(pattern string, err error) error {
	return spec.NewError(codeGlob, fmt.Sprintf("invalid glob `%s`: %s; `*` and `?` match within a segment, `**` is a whole segment, `[…]` and `{…}` must be closed", pattern, err.Error()),
		map[string]any{"pattern": pattern})
}

// joinOut joins an output prefix ("." for none) and a slash path below it.
func joinOut(prefix, rel string) string {
	switch prefix {
	case ".":
		return rel
	case "/":
		return "/" + rel
	}
	return prefix + "/" + rel
}

// ---- the pattern ----

// globPattern is a compiled glob.
type globPattern struct {
	// prefix is the literal root in output form: clean, slash-separated, "." for the run
	// directory itself; absolute for an absolute (or ~) pattern.
	prefix string
	// rootAbs is the root as an absolute, clean OS path (symlinks not resolved).
	rootAbs string
	// rest matches the NUL-separated path of a file below the root.
	rest *regexp.Regexp
	// maxDepth is the most segments a matching path below the root can have; -1: unbounded.
	maxDepth int
	// never is set when the pattern can match no file (an empty rest, a NUL in the pattern).
	never bool
}

// matchAbs reports whether the absolute clean OS path p matches the pattern.
func (g *globPattern) matchAbs(p string) bool {
	if g.never {
		return false
	}
	root := g.rootAbs
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	rel, ok := strings.CutPrefix(p, root)
	if !ok || rel == "" {
		return false
	}
	return g.rest.MatchString(strings.ReplaceAll(filepath.ToSlash(rel), "/", "\x00"))
}

// Token kinds of a parsed pattern.
const (
	tokLit   = iota // text: a literal (unescaped)
	tokStar         // *
	tokQuest        // ?
	tokDStar        // ** (a whole segment)
	tokClass        // text: the RE2 class
	tokSlash        // /
	tokAlt          // alts: {a,b}
)

type globTok struct {
	kind int
	text string
	alts [][]globTok
}

// compileGlob parses and compiles a pattern; relative patterns are anchored at runDir.
func compileGlob(pattern, runDir string) (*globPattern, error) {
	if err := catalog.CheckGlob(pattern); err != nil {
		return nil, err
	}
	anchor, text := "", pattern
	abs := false
	switch {
	case pattern == "~" || strings.HasPrefix(pattern, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("cannot expand ~: %w", err)
		}
		anchor, text, abs = home, strings.TrimPrefix(pattern[1:], "/"), true
	case strings.HasPrefix(pattern, "/"):
		anchor, text, abs = string(filepath.Separator), strings.TrimLeft(pattern, "/"), true
	default:
		anchor = runDir
	}
	toks, i, err := parseGlobSeq(text, 0, false)
	if err != nil {
		return nil, err
	}
	if i != len(text) {
		return nil, fmt.Errorf("unexpected `%c` at byte %d", text[i], i)
	}
	// The literal root: the leading all-literal segments but the last.
	segs := splitGlobSegments(toks)
	var rootSegs []string
	n := 0
	for n < len(segs)-1 {
		lit, ok := literalSegment(segs[n])
		if !ok {
			break
		}
		rootSegs = append(rootSegs, lit)
		n++
	}
	var rest []globTok
	for j, s := range segs[n:] {
		if j > 0 {
			rest = append(rest, globTok{kind: tokSlash})
		}
		rest = append(rest, s...)
	}
	rootText := strings.Join(rootSegs, "/")
	rootAbs, err := filepath.Abs(filepath.Join(anchor, filepath.FromSlash(rootText)))
	if err != nil {
		return nil, err
	}
	g := &globPattern{rootAbs: rootAbs, maxDepth: globDepth(rest)}
	switch {
	case abs:
		g.prefix = filepath.ToSlash(rootAbs)
	default:
		g.prefix = path.Clean(rootText) // "" → "."
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	emitGlob(&b, rest)
	b.WriteString(`)$`)
	if g.rest, err = regexp.Compile(b.String()); err != nil {
		return nil, errors.New("the pattern is too complex")
	}
	g.never = len(rest) == 0 || strings.Contains(pattern, "\x00")
	return g, nil
}

// parseGlobSeq parses from p[i] up to the end, or to the `,` or `}` that ends an alternative
// when inAlt. Consecutive slashes are one.
func parseGlobSeq(p string, i int, inAlt bool) ([]globTok, int, error) {
	var toks []globTok
	lit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].kind == tokLit {
			toks[n-1].text += s
			return
		}
		toks = append(toks, globTok{kind: tokLit, text: s})
	}
	for i < len(p) {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) {
				return nil, i, errors.New("the pattern ends with a lone `\\`")
			}
			_, n := utf8.DecodeRuneInString(p[i+1:])
			lit(p[i+1 : i+1+n])
			i += 1 + n
		case '[':
			class, end, err := globClassRegexp(p, i)
			if err != nil {
				return nil, i, err
			}
			toks = append(toks, globTok{kind: tokClass, text: class})
			i = end
		case '{':
			var alts [][]globTok
			i++
			for {
				alt, j, err := parseGlobSeq(p, i, true)
				if err != nil {
					return nil, j, err
				}
				alts = append(alts, alt)
				if j >= len(p) {
					return nil, j, errors.New("unclosed `{`")
				}
				i = j + 1
				if p[j] == '}' {
					break
				}
			}
			toks = append(toks, globTok{kind: tokAlt, alts: alts})
		case ',', '}':
			if inAlt {
				return toks, i, nil
			}
			if c == '}' {
				return nil, i, fmt.Errorf("unmatched `}` at byte %d", i)
			}
			lit(",")
			i++
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			switch j - i {
			case 1:
				toks = append(toks, globTok{kind: tokStar})
			case 2:
				toks = append(toks, globTok{kind: tokDStar})
			default:
				return nil, i, fmt.Errorf("`%s` at byte %d", p[i:j], i)
			}
			i = j
		case '?':
			toks = append(toks, globTok{kind: tokQuest})
			i++
		case '/':
			if n := len(toks); n == 0 || toks[n-1].kind != tokSlash {
				toks = append(toks, globTok{kind: tokSlash})
			}
			i++
		default:
			_, n := utf8.DecodeRuneInString(p[i:])
			lit(p[i : i+n])
			i += n
		}
	}
	if inAlt {
		return nil, i, errors.New("unclosed `{`")
	}
	return toks, i, nil
}

// globClassRegexp translates the class opening at p[start] == '[' into an RE2 class whose
// members are all written as \x{…}; a negated class also excludes NUL, the separator.
func globClassRegexp(p string, start int) (string, int, error) {
	var b strings.Builder
	i := start + 1
	b.WriteString("[")
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		b.WriteString(`^\x00`)
		i++
	}
	first := true
	for i < len(p) {
		if p[i] == ']' && !first {
			b.WriteString("]")
			return b.String(), i + 1, nil
		}
		lo, n, err := globClassChar(p, i)
		if err != nil {
			return "", i, err
		}
		i += n
		first = false
		fmt.Fprintf(&b, `\x{%x}`, lo)
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, m, err := globClassChar(p, i+1)
			if err != nil {
				return "", i, err
			}
			if hi < lo {
				return "", i, fmt.Errorf("bad range in the character class at byte %d", start)
			}
			fmt.Fprintf(&b, `-\x{%x}`, hi)
			i += 1 + m
		}
	}
	return "", i, fmt.Errorf("unclosed `[` at byte %d", start)
}

func globClassChar(p string, i int) (rune, int, error) {
	if p[i] == '\\' {
		if i+1 >= len(p) {
			return 0, 0, errors.New("the pattern ends with a lone `\\`")
		}
		r, n := utf8.DecodeRuneInString(p[i+1:])
		return r, 1 + n, nil
	}
	r, n := utf8.DecodeRuneInString(p[i:])
	if r == utf8.RuneError && n == 1 {
		return 0, 0, fmt.Errorf("invalid UTF-8 at byte %d", i)
	}
	return r, n, nil
}

// splitGlobSegments cuts a top-level token list at its slashes. A leading slash (never, as the
// anchor took it) or a trailing one gives an empty segment.
func splitGlobSegments(toks []globTok) [][]globTok {
	segs := [][]globTok{nil}
	for _, t := range toks {
		if t.kind == tokSlash {
			segs = append(segs, nil)
			continue
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], t)
	}
	return segs
}

// literalSegment returns the text of a segment made of literals only; an escaped `/` (which
// would change the segment structure once joined) does not count as literal.
func literalSegment(seg []globTok) (string, bool) {
	var b strings.Builder
	for _, t := range seg {
		if t.kind != tokLit || strings.ContainsAny(t.text, "/\x00") {
			return "", false
		}
		b.WriteString(t.text)
	}
	return b.String(), true
}

// globDepth is the most segments a path matching toks can have, or -1 when a `**` makes it
// unbounded.
func globDepth(toks []globTok) int {
	depth := 1
	for _, t := range toks {
		switch t.kind {
		case tokDStar:
			return -1
		case tokSlash:
			depth++
		case tokAlt:
			most := 1
			for _, a := range t.alts {
				d := globDepth(a)
				if d < 0 {
					return -1
				}
				most = max(most, d)
			}
			depth += most - 1
		}
	}
	return depth
}

// emitGlob writes the RE2 form of toks; NUL is the segment separator.
func emitGlob(b *strings.Builder, toks []globTok) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case tokLit:
			b.WriteString(regexp.QuoteMeta(t.text))
		case tokStar:
			b.WriteString(`[^\x00]*`)
		case tokQuest:
			b.WriteString(`[^\x00]`)
		case tokClass:
			b.WriteString(t.text)
		case tokSlash:
			b.WriteString(`\x00`)
		case tokDStar:
			if i+1 < len(toks) && toks[i+1].kind == tokSlash {
				b.WriteString(`(?:.*\x00)?`) // zero or more whole segments
				i++
				continue
			}
			b.WriteString(`.*`)
		case tokAlt:
			b.WriteString("(?:")
			for j, a := range t.alts {
				if j > 0 {
					b.WriteString("|")
				}
				emitGlob(b, a)
			}
			b.WriteString(")")
		}
	}
}

// ---- permits.fs.read reach ----

// fsReach answers, for one call under permits, whether permits.fs.read admits a file and
// whether a directory can hold admitted files. It compiles the globs once per call.
type fsReach struct {
	res   []*regexp.Regexp
	roots []string // the literal prefix of each glob: absolute, slash-separated
}

// newFSReach returns nil without permits.
func newFSReach(call Call) *fsReach {
	if call.Permits == nil {
		return nil
	}
	a := newAnchors(call.RunDir)
	r := &fsReach{}
	for _, g := range call.Permits.FSRead {
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

// admits reports whether the resolved OS path p matches a fs.read glob.
func (r *fsReach) admits(p string) bool {
	s := filepath.ToSlash(p)
	for _, re := range r.res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// dirInReach reports whether some fs.read glob may admit the resolved directory p or a path
// below it: p and the glob's literal prefix lie on one branch of the tree.
func (r *fsReach) dirInReach(p string) bool {
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

// walkRoot resolves the root of a glob or grep walk and, under permits, refuses a root that no
// fs.read glob can reach (NIKA-SEC-004). given names the root in messages.
func walkRoot(call Call, reach *fsReach, given, rootAbs string) (string, error) {
	resolved, err := resolvePath(rootAbs)
	if reach == nil {
		if err != nil {
			return rootAbs, nil // the walk finds nothing there
		}
		return resolved, nil
	}
	deny := func(why string) error {
		return spec.NewError(codePermits, fmt.Sprintf("%q is outside `permits.fs.read`%s", given, why),
			map[string]any{"path": given, "resolved": filepath.ToSlash(resolved), "gate": gateRead})
	}
	if err != nil {
		resolved = rootAbs
		return "", deny(": " + err.Error())
	}
	if !reach.dirInReach(resolved) {
		return "", deny(": no `fs.read` glob covers it or anything below it")
	}
	return resolved, nil
}

// ---- the walk ----

// walkEntry is one directory or file met by a treeWalk.
type walkEntry struct {
	abs      string // the OS path, under the root as given (symlinks not resolved)
	resolved string // the OS path with every symlink resolved
	rel      string // the slash path below the root
}

// treeWalk visits the tree below a root without following directory symlinks.
type treeWalk struct {
	ctx      context.Context
	maxDepth int                   // the deepest file level visited (1: the root's entries); -1: all
	enterDir func(walkEntry) bool  // whether to enter a directory; nil: always
	file     func(walkEntry) error // called for each regular file, or symlink to one
}

// walk visits the tree of the directory abs, whose resolved path is resolved. A missing or
// unreadable directory is skipped.
func (w *treeWalk) walk(abs, resolved string) error {
	return w.dir(walkEntry{abs: abs, resolved: resolved}, 0)
}

func (w *treeWalk) dir(d walkEntry, depth int) error {
	if w.ctx.Err() != nil {
		return cancelError(w.ctx)
	}
	entries, err := os.ReadDir(d.abs)
	if err != nil {
		return nil
	}
	for _, de := range entries {
		name := de.Name()
		e := walkEntry{abs: filepath.Join(d.abs, name), resolved: filepath.Join(d.resolved, name), rel: name}
		if d.rel != "" {
			e.rel = d.rel + "/" + name
		}
		mode := de.Type()
		switch {
		case mode.IsDir():
			if w.maxDepth >= 0 && depth+1 >= w.maxDepth {
				continue // its files would be deeper than any match
			}
			if w.enterDir != nil && !w.enterDir(e) {
				continue
			}
			if err := w.dir(e, depth+1); err != nil {
				return err
			}
			continue
		case mode&fs.ModeSymlink != 0:
			fi, err := os.Stat(e.abs)
			if err != nil || !fi.Mode().IsRegular() {
				continue // dangling, a directory (never followed), or special
			}
			r, err := resolvePath(e.abs)
			if err != nil {
				continue
			}
			e.resolved = r
		case !mode.IsRegular():
			continue
		}
		if w.maxDepth >= 0 && depth+1 > w.maxDepth {
			continue
		}
		if err := w.file(e); err != nil {
			return err
		}
	}
	return nil
}
