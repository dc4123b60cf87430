package glob

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nikahq/nika/spec/catalog"
)

// Pattern is a compiled glob.
type Pattern struct {
	prefix   string         // the literal root in output form (see Prefix)
	rootAbs  string         // the root as an absolute, clean OS path (symlinks not resolved)
	rest     *regexp.Regexp // matches the NUL-separated path of a file below the root
	maxDepth int            // the most segments a matching path below the root has; -1: unbounded
	never    bool           // the pattern can match no file (an empty rest, a NUL in the pattern)
}

// Prefix is the literal root in output form: clean, slash-separated, "." for the run directory
// itself; absolute for an absolute (or ~) pattern.
func (g *Pattern) Prefix() string { return g.prefix }

// Root is the literal root as an absolute, clean OS path, symlinks not resolved: where the walk
// starts.
func (g *Pattern) Root() string { return g.rootAbs }

// MaxDepth is the most segments a path below the root can have and match; -1 when a `**` makes
// it unbounded.
func (g *Pattern) MaxDepth() int { return g.maxDepth }

// Never reports whether the pattern can match no file at all (a trailing `/`, a NUL byte).
func (g *Pattern) Never() bool { return g.never }

// MatchRel reports whether a file at the slash path rel below the root matches.
func (g *Pattern) MatchRel(rel string) bool {
	return !g.never && g.rest.MatchString(strings.ReplaceAll(rel, "/", "\x00"))
}

// MatchAbs reports whether the absolute clean OS path p matches the pattern.
func (g *Pattern) MatchAbs(p string) bool {
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

// Compile parses pattern with catalog.ParseGlob (whose error it returns, for
// NIKA-BUILTIN-GLOB-001) and compiles it; a relative pattern is anchored at runDir.
func Compile(pattern, runDir string) (*Pattern, error) {
	toks, err := catalog.ParseGlob(pattern)
	if err != nil {
		return nil, err
	}
	anchor, abs := runDir, false
	switch {
	case pattern == "~" || strings.HasPrefix(pattern, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("cannot expand ~: %w", err)
		}
		// The tokens start with the literal `~` and, for `~/…`, the slash after it.
		anchor, abs, toks = home, true, toks[1:]
		if len(toks) > 0 && toks[0].Kind == catalog.GlobSlash {
			toks = toks[1:]
		}
	case strings.HasPrefix(pattern, "/"):
		anchor, abs, toks = string(filepath.Separator), true, toks[1:] // the leading slashes
	}
	// The literal root: the leading all-literal segments but the last.
	segs := splitSegments(toks)
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
	var rest []catalog.GlobToken
	for j, s := range segs[n:] {
		if j > 0 {
			rest = append(rest, catalog.GlobToken{Kind: catalog.GlobSlash})
		}
		rest = append(rest, s...)
	}
	rootText := strings.Join(rootSegs, "/")
	rootAbs, err := filepath.Abs(filepath.Join(anchor, filepath.FromSlash(rootText)))
	if err != nil {
		return nil, err
	}
	g := &Pattern{rootAbs: rootAbs, maxDepth: depth(rest)}
	if abs {
		g.prefix = filepath.ToSlash(rootAbs)
	} else {
		g.prefix = path.Clean(rootText) // "" → "."
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	emit(&b, rest)
	b.WriteString(`)$`)
	if g.rest, err = regexp.Compile(b.String()); err != nil {
		return nil, errors.New("the pattern is too complex")
	}
	g.never = len(rest) == 0 || strings.Contains(pattern, "\x00")
	return g, nil
}

// splitSegments cuts a top-level token list at its slashes. A trailing slash gives an empty
// last segment.
func splitSegments(toks []catalog.GlobToken) [][]catalog.GlobToken {
	segs := [][]catalog.GlobToken{nil}
	for _, t := range toks {
		if t.Kind == catalog.GlobSlash {
			segs = append(segs, nil)
			continue
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], t)
	}
	return segs
}

// literalSegment returns the text of a segment made of literals only; an escaped `/` (which
// would change the segment structure once joined) does not count as literal.
func literalSegment(seg []catalog.GlobToken) (string, bool) {
	var b strings.Builder
	for _, t := range seg {
		if t.Kind != catalog.GlobLiteral || strings.ContainsAny(t.Text, "/\x00") {
			return "", false
		}
		b.WriteString(t.Text)
	}
	return b.String(), true
}

// depth is the most segments a path matching toks can have, or -1 when a `**` makes it
// unbounded.
func depth(toks []catalog.GlobToken) int {
	d := 1
	for _, t := range toks {
		switch t.Kind {
		case catalog.GlobDoubleStar:
			return -1
		case catalog.GlobSlash:
			d++
		case catalog.GlobAlternatives:
			most := 1
			for _, a := range t.Alts {
				ad := depth(a)
				if ad < 0 {
					return -1
				}
				most = max(most, ad)
			}
			d += most - 1
		}
	}
	return d
}

// emit writes the RE2 form of toks; NUL is the segment separator.
func emit(b *strings.Builder, toks []catalog.GlobToken) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.Kind {
		case catalog.GlobLiteral:
			b.WriteString(regexp.QuoteMeta(t.Text))
		case catalog.GlobStar:
			b.WriteString(`[^\x00]*`)
		case catalog.GlobQuestion:
			b.WriteString(`[^\x00]`)
		case catalog.GlobClass:
			emitClass(b, t)
		case catalog.GlobSlash:
			b.WriteString(`\x00`)
		case catalog.GlobDoubleStar:
			if i+1 < len(toks) && toks[i+1].Kind == catalog.GlobSlash {
				b.WriteString(`(?:.*\x00)?`) // zero or more whole segments
				i++
				continue
			}
			b.WriteString(`.*`)
		case catalog.GlobAlternatives:
			b.WriteString("(?:")
			for j, a := range t.Alts {
				if j > 0 {
					b.WriteString("|")
				}
				emit(b, a)
			}
			b.WriteString(")")
		}
	}
}

// emitClass writes a class with every member as \x{…}; a negated class also excludes NUL, the
// separator.
func emitClass(b *strings.Builder, t catalog.GlobToken) {
	b.WriteString("[")
	if t.Negated {
		b.WriteString(`^\x00`)
	}
	for _, r := range t.Ranges {
		fmt.Fprintf(b, `\x{%x}`, r.Lo)
		if r.Hi != r.Lo {
			fmt.Fprintf(b, `-\x{%x}`, r.Hi)
		}
	}
	b.WriteString("]")
}
