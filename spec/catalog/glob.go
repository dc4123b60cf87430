package catalog

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// CheckGlob reports why pattern is not a valid nika:glob pattern (NIKA-BUILTIN-GLOB-001), or
// nil. The syntax: `*` and `?` match within one path segment, `**` matches across segments and
// must be a whole segment (`a/**/b`, `**/x`, `a/**`, or a whole brace alternative), `[…]` is a
// class (`[!…]` or `[^…]` negates, `a-z` ranges with low ≤ high, non-empty), `{a,b}`
// alternatives may nest, and `\` escapes the next character. It is ParseGlob's verdict, and
// nika:glob compiles what ParseGlob returns, so the static and the runtime verdicts agree.
func CheckGlob(pattern string) error {
	_, err := ParseGlob(pattern)
	return err
}

// GlobKind is the kind of one token of a nika:glob pattern.
type GlobKind int

const (
	GlobLiteral      GlobKind = iota // Text: literal text, escapes removed (an escaped `/` included)
	GlobStar                         // `*`: any run of characters within a segment
	GlobQuestion                     // `?`: one character within a segment
	GlobDoubleStar                   // `**`: a whole segment, spanning segments
	GlobClass                        // `[…]`: Negated, Ranges
	GlobSlash                        // `/`: a segment boundary (consecutive slashes are one)
	GlobAlternatives                 // `{a,b}`: Alts, each a token list
)

// GlobToken is one token of a parsed pattern.
type GlobToken struct {
	Kind    GlobKind
	Text    string        // GlobLiteral: consecutive literal characters are one token
	Negated bool          // GlobClass: `[!…]` or `[^…]`
	Ranges  []GlobRange   // GlobClass: the members in order, one character as Lo == Hi
	Alts    [][]GlobToken // GlobAlternatives: the alternatives in order (an empty one is nil)
}

// GlobRange is the character range Lo-Hi of a class.
type GlobRange struct{ Lo, Hi rune }

// ParseGlob parses a nika:glob pattern (the syntax of CheckGlob) into its tokens, or says why it
// is invalid; error offsets are bytes into pattern. What a pattern is anchored at (`/`, `~`) is
// the runtime's business: the tokens are the pattern's text as written.
func ParseGlob(pattern string) ([]GlobToken, error) {
	if pattern == "" {
		return nil, errors.New("the pattern is empty")
	}
	toks, _, err := parseGlobSeq(pattern, 0, 0)
	return toks, err
}

// parseGlobSeq parses p from byte i up to its end or, inside depth open braces, up to the `,`
// or `}` that ends the alternative; it returns the tokens and the offset it stopped at. Errors
// come in the order of the pattern, left to right; an unclosed brace, found at the end, names
// the innermost one.
func parseGlobSeq(p string, i, depth int) ([]GlobToken, int, error) {
	var toks []GlobToken
	lit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].Kind == GlobLiteral {
			toks[n-1].Text += s
			return
		}
		toks = append(toks, GlobToken{Kind: GlobLiteral, Text: s})
	}
	for i < len(p) {
		r, n := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && n == 1 {
			return nil, i, fmt.Errorf("invalid UTF-8 at byte %d", i)
		}
		switch r {
		case '\\':
			if i+1 >= len(p) {
				return nil, i, errors.New("the pattern ends with a lone `\\`")
			}
			_, m := utf8.DecodeRuneInString(p[i+1:])
			lit(p[i+1 : i+1+m])
			i += 1 + m
		case '[':
			tok, end, err := scanClass(p, i)
			if err != nil {
				return nil, i, err
			}
			toks = append(toks, tok)
			i = end
		case '{':
			open := i
			var alts [][]GlobToken
			i++
			for {
				alt, j, err := parseGlobSeq(p, i, depth+1)
				if err != nil {
					return nil, j, err
				}
				alts = append(alts, alt)
				if j >= len(p) {
					return nil, j, fmt.Errorf("unclosed `{` at byte %d", open)
				}
				i = j + 1
				if p[j] == '}' {
					break
				}
			}
			toks = append(toks, GlobToken{Kind: GlobAlternatives, Alts: alts})
		case ',', '}':
			if depth > 0 {
				return toks, i, nil
			}
			if r == '}' {
				return nil, i, fmt.Errorf("unmatched `}` at byte %d", i)
			}
			lit(",")
			i++
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			switch {
			case j-i > 2:
				return nil, i, fmt.Errorf("`%s` at byte %d: use `*` within a segment or `**` across segments", p[i:j], i)
			case j-i == 2:
				if !segmentStart(p, i, depth) || !segmentEnd(p, j, depth) {
					return nil, i, fmt.Errorf("`**` at byte %d must be a whole path segment, as in `src/**/*.go`; use `*` inside a segment", i)
				}
				toks = append(toks, GlobToken{Kind: GlobDoubleStar})
			default:
				toks = append(toks, GlobToken{Kind: GlobStar})
			}
			i = j
		case '?':
			toks = append(toks, GlobToken{Kind: GlobQuestion})
			i++
		case '/':
			if n := len(toks); n == 0 || toks[n-1].Kind != GlobSlash {
				toks = append(toks, GlobToken{Kind: GlobSlash})
			}
			i++
		default:
			lit(p[i : i+n])
			i += n
		}
	}
	return toks, i, nil
}

// segmentStart and segmentEnd tell whether a `**` at p[i:j] is a whole segment: it starts the
// pattern or follows a `/` (or, inside braces, a `{` or `,`), and it ends the pattern or comes
// before a `/` (or, inside braces, a `}` or `,`). They read the bytes as written, so an escaped
// `/` bounds a segment too.
func segmentStart(p string, i, depth int) bool {
	if i == 0 {
		return true
	}
	switch p[i-1] {
	case '/':
		return true
	case '{', ',':
		return depth > 0
	}
	return false
}

func segmentEnd(p string, j, depth int) bool {
	if j == len(p) {
		return true
	}
	switch p[j] {
	case '/':
		return true
	case '}', ',':
		return depth > 0
	}
	return false
}

// scanClass parses the class opening at p[start] == '[' and returns its token and the offset
// after its `]`. A `]` right after the `[` (or `[!`) is an empty class, not a member.
func scanClass(p string, start int) (GlobToken, int, error) {
	tok := GlobToken{Kind: GlobClass}
	i := start + 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		tok.Negated = true
		i++
	}
	if i < len(p) && p[i] == ']' {
		return GlobToken{}, 0, fmt.Errorf("empty character class at byte %d", start)
	}
	for i < len(p) {
		if p[i] == ']' {
			return tok, i + 1, nil
		}
		lo, n, err := classChar(p, i)
		if err != nil {
			return GlobToken{}, 0, err
		}
		i += n
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			h, m, err := classChar(p, i+1)
			if err != nil {
				return GlobToken{}, 0, err
			}
			if h < lo {
				return GlobToken{}, 0, fmt.Errorf("bad range `%c-%c` in the character class at byte %d", lo, h, start)
			}
			hi = h
			i += 1 + m
		}
		tok.Ranges = append(tok.Ranges, GlobRange{Lo: lo, Hi: hi})
	}
	return GlobToken{}, 0, fmt.Errorf("unclosed `[` at byte %d", start)
}

func classChar(p string, i int) (rune, int, error) {
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
