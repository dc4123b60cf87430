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
// alternatives may nest, and `\` escapes the next character. The tools share this function, so
// the static and the runtime verdicts agree.
func CheckGlob(pattern string) error {
	if pattern == "" {
		return errors.New("the pattern is empty")
	}
	depth := 0
	var opens []int // byte offsets of the open braces
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		}
		switch r {
		case '\\':
			if i+1 >= len(pattern) {
				return errors.New("the pattern ends with a lone `\\`")
			}
			_, m := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + m
			continue
		case '[':
			end, err := scanClass(pattern, i)
			if err != nil {
				return err
			}
			i = end
			continue
		case '{':
			depth++
			opens = append(opens, i)
		case '}':
			if depth == 0 {
				return fmt.Errorf("unmatched `}` at byte %d", i)
			}
			depth--
			opens = opens[:len(opens)-1]
		case '*':
			j := i
			for j < len(pattern) && pattern[j] == '*' {
				j++
			}
			switch {
			case j-i > 2:
				return fmt.Errorf("`%s` at byte %d: use `*` within a segment or `**` across segments", pattern[i:j], i)
			case j-i == 2:
				if !segmentStart(pattern, i, depth) || !segmentEnd(pattern, j, depth) {
					return fmt.Errorf("`**` at byte %d must be a whole path segment, as in `src/**/*.go`; use `*` inside a segment", i)
				}
			}
			i = j
			continue
		}
		i += n
	}
	if depth > 0 {
		return fmt.Errorf("unclosed `{` at byte %d", opens[len(opens)-1])
	}
	return nil
}

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

// scanClass checks the class opening at p[start] == '[' and returns the offset after its `]`.
func scanClass(p string, start int) (int, error) {
	i := start + 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	if i < len(p) && p[i] == ']' {
		return 0, fmt.Errorf("empty character class at byte %d", start)
	}
	for i < len(p) {
		if p[i] == ']' {
			return i + 1, nil
		}
		lo, n, err := classChar(p, i)
		if err != nil {
			return 0, err
		}
		i += n
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, m, err := classChar(p, i+1)
			if err != nil {
				return 0, err
			}
			if hi < lo {
				return 0, fmt.Errorf("bad range `%c-%c` in the character class at byte %d", lo, hi, start)
			}
			i += 1 + m
		}
	}
	return 0, fmt.Errorf("unclosed `[` at byte %d", start)
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
