package lsp

import (
	"testing"

	"github.com/nikahq/nika/spec"
)

// Positions are UTF-16 code units: é and — are one unit each (two and
// three bytes), 🚀 two units (four bytes, a surrogate pair).
func TestPositions(t *testing.T) {
	text := "a: é—🚀x\r\nb: 1\rc: 2\n\n"
	x := newLineIndex([]byte(text))
	for _, tc := range []struct {
		off int
		pos Position
	}{
		{0, Position{0, 0}},
		{3, Position{0, 3}},             // é
		{5, Position{0, 4}},             // —
		{8, Position{0, 5}},             // 🚀
		{12, Position{0, 7}},            // x, after the pair
		{13, Position{0, 8}},            // the CR of CRLF
		{15, Position{1, 0}},            // b
		{20, Position{2, 0}},            // c, after a lone CR
		{len(text), Position{4, 0}},     // the end, after an empty line
		{len(text) + 5, Position{4, 0}}, // past the end: clamped
		{9, Position{0, 5}},             // inside 🚀's bytes: its start
	} {
		if got := x.position(tc.off); got != tc.pos {
			t.Errorf("position(%d) = %+v, want %+v", tc.off, got, tc.pos)
		}
	}
	for _, tc := range []struct {
		pos Position
		off int
	}{
		{Position{0, 5}, 8},
		{Position{0, 6}, 8}, // inside the surrogate pair: the character's start
		{Position{0, 7}, 12},
		{Position{0, 99}, 13}, // past the line's end: the line's end, before CRLF
		{Position{1, 2}, 17},
		{Position{2, 1}, 21},
		{Position{9, 0}, len(text)},
	} {
		if got := x.offset(tc.pos); got != tc.off {
			t.Errorf("offset(%+v) = %d, want %d", tc.pos, got, tc.off)
		}
	}
}

// The checker's positions (1-based line, rune column, byte offset after a
// byte-order mark) land on the same character.
func TestSpecPositions(t *testing.T) {
	text := "\xef\xbb\xbfnika: v1\nworkflow: w\ntasks: [é, ü]\n"
	x := newLineIndex([]byte(text))
	src := []byte(text)[3:]
	f, _ := spec.Parse("a.yaml", src)
	tasks := f.Root.Get("tasks")
	second := tasks.Items[1]
	off := x.specOffset(second.Pos, 3)
	if got := text[off : off+2]; got != "ü" {
		t.Fatalf("the item's offset points at %q", got)
	}
	if got := x.position(off); got != (Position{2, 11}) {
		t.Errorf("position = %+v, want 2:11", got)
	}
	if got := x.specOffset(tasks.Items[0].Pos, 3); text[got:got+2] != "é" {
		t.Errorf("the first item's offset points at %q", text[got:])
	}
	if col := x.runeColumn(off, 3); col != second.Pos.Column {
		t.Errorf("rune column %d, want %d", col, second.Pos.Column)
	}
	// A position without a usable offset is placed by line and rune column.
	if got := x.specOffset(spec.Pos{Line: 3, Column: 9}, 3); text[got:got+2] != "é" {
		t.Errorf("line/column fallback points at %q", text[got:])
	}
	if got := x.specOffset(spec.Pos{Line: 1, Column: 1}, 3); got != 3 {
		t.Errorf("the first character after the mark: %d, want 3", got)
	}
}

func TestApplyChange(t *testing.T) {
	text := []byte("a: 🚀é\nb: 2\n")
	r := Range{Position{0, 3}, Position{0, 5}}
	got := applyChange(text, contentChange{Range: &r, Text: "x"})
	if string(got) != "a: xé\nb: 2\n" {
		t.Errorf("applyChange = %q", got)
	}
	if string(text) != "a: 🚀é\nb: 2\n" {
		t.Errorf("the old text changed: %q", text)
	}
	r = Range{Position{1, 3}, Position{5, 0}}
	if got := applyChange(text, contentChange{Range: &r, Text: "3\n"}); string(got) != "a: 🚀é\nb: 3\n" {
		t.Errorf("a range past the end: %q", got)
	}
}
