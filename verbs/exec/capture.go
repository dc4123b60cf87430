package exec

import (
	"strings"
	"unicode/utf8"
)

// text is a text capture (LANGUAGE.md §5.2): invalid UTF-8 becomes U+FFFD and every trailing
// "\n" or "\r\n" is dropped, as shell command substitution does.
func text(b []byte) string {
	for {
		switch {
		case len(b) >= 2 && b[len(b)-2] == '\r' && b[len(b)-1] == '\n':
			b = b[:len(b)-2]
		case len(b) >= 1 && b[len(b)-1] == '\n':
			b = b[:len(b)-1]
		default:
			return validUTF8(b)
		}
	}
}

// validUTF8 converts b to a string, each invalid byte becoming U+FFFD (as encoding/json does).
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			sb.WriteRune(utf8.RuneError)
			b = b[1:]
			continue
		}
		sb.Write(b[:n])
		b = b[n:]
	}
	return sb.String()
}

// lastBytes returns at most the last n bytes of b, starting at a rune boundary when one is near
// (a cut through a multi-byte character would otherwise read as U+FFFD).
func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// tailBuffer keeps the last max bytes written to it. It is written by one goroutine (os/exec's
// copier) and read after the process is reaped.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max { // compact now and then, not on every write
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return n, nil
}

// Bytes returns the last (at most) max bytes, from a rune boundary when one is near.
func (t *tailBuffer) Bytes() []byte { return lastBytes(t.buf, t.max) }
