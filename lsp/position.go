package lsp

import (
	"sort"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
)

// lineIndex maps between byte offsets of a text and LSP positions. LSP
// counts lines from 0 and characters in UTF-16 code units; the checker
// counts lines from 1 and columns in runes, and keeps the byte offset as the
// authoritative coordinate. Line breaks are LF, CRLF and a lone CR, as in
// both YAML 1.2 and LSP.
type lineIndex struct {
	text  []byte
	start []int // start[i] is the byte offset where line i begins
}

func newLineIndex(text []byte) *lineIndex {
	starts := make([]int, 1, 64)
	for i, b := range text {
		switch {
		case b == '\n':
			starts = append(starts, i+1)
		case b == '\r' && (i+1 == len(text) || text[i+1] != '\n'):
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{text: text, start: starts}
}

// lineEnd is the offset of line l's break (or the end of the text).
func (x *lineIndex) lineEnd(l int) int {
	end := len(x.text)
	if l+1 < len(x.start) {
		end = x.start[l+1] - 1
		if end > x.start[l] && x.text[end] == '\n' && x.text[end-1] == '\r' {
			end--
		}
	}
	return end
}

// line returns the 0-based line holding byte offset off.
func (x *lineIndex) line(off int) int {
	return sort.Search(len(x.start), func(i int) bool { return x.start[i] > off }) - 1
}

// position converts a byte offset into an LSP position. An offset inside a
// multi-byte character counts as the character's start.
func (x *lineIndex) position(off int) Position {
	off = max(0, min(off, len(x.text)))
	l := x.line(off)
	for off > x.start[l] && off < len(x.text) && !utf8.RuneStart(x.text[off]) {
		off--
	}
	return Position{Line: l, Character: utf16Len(x.text[x.start[l]:off])}
}

// offset converts an LSP position into a byte offset. A line past the end is
// the end of the text; a character past the end of its line is the line's
// end (LSP says to clamp both), and one inside a surrogate pair is the
// character's start.
func (x *lineIndex) offset(p Position) int {
	if p.Line < 0 {
		return 0
	}
	if p.Line >= len(x.start) {
		return len(x.text)
	}
	off, end := x.start[p.Line], x.lineEnd(p.Line)
	for units := 0; off < end; {
		r, size := utf8.DecodeRune(x.text[off:end])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > p.Character {
			break
		}
		units += w
		off += size
	}
	return off
}

// utf16Len counts the UTF-16 code units of b; a byte that is not UTF-8 counts
// as one (it reaches the client as U+FFFD).
func utf16Len(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		b = b[size:]
	}
	return n
}

// specPos converts a checker position into a byte offset of the document
// text. The checker drops a leading byte-order mark, so its offsets start
// after it (bom is its length in the document: 0 or 3). The offset is
// authoritative; a position that carries none (or one that disagrees with
// its line) is placed by its line and rune column instead.
func (x *lineIndex) specOffset(p spec.Pos, bom int) int {
	if !p.IsValid() {
		return 0
	}
	off := p.Offset + bom
	if off <= len(x.text) && x.line(off) == p.Line-1 {
		return off
	}
	l := min(p.Line-1, len(x.start)-1)
	off, end := x.start[l], x.lineEnd(l)
	for i := 1; i < p.Column && off < end; i++ {
		_, size := utf8.DecodeRune(x.text[off:end])
		off += size
	}
	return off
}

// runeColumn is the 1-based rune column of a byte offset, as the checker
// counts it (after a byte-order mark on line 1).
func (x *lineIndex) runeColumn(off, bom int) int {
	l := x.line(off)
	from := x.start[l]
	if l == 0 {
		from = min(bom, off)
	}
	return 1 + utf8.RuneCount(x.text[from:off])
}

func (x *lineIndex) rangeOf(from, to int) Range {
	return Range{Start: x.position(from), End: x.position(to)}
}
