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

// capBuffer keeps the first max bytes written to it and counts, then discards, the rest: it
// never refuses a write, so os/exec keeps draining the pipe and the child never blocks on it,
// and what it holds stays within max (its backing array included). It is written by one
// goroutine (os/exec's copier) and read after the process is reaped.
type capBuffer struct {
	max int64
	buf []byte
	n   int64 // bytes written, kept or not
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	room := c.max - int64(len(c.buf))
	if room <= 0 {
		return len(p), nil
	}
	q := p
	if int64(len(q)) > room {
		q = q[:room]
	}
	if need := len(c.buf) + len(q); need > cap(c.buf) {
		grown := int64(max(2*cap(c.buf), need, 512))
		nb := make([]byte, len(c.buf), min(grown, c.max))
		copy(nb, c.buf)
		c.buf = nb
	}
	c.buf = append(c.buf, q...)
	return len(p), nil
}

// over reports whether more than max bytes were written.
func (c *capBuffer) over() bool { return c.n > c.max }

// Bytes returns what was kept: the first max bytes at most.
func (c *capBuffer) Bytes() []byte { return c.buf }
