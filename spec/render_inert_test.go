package spec

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkText is what `nika check` prints for src (text, with snippets).
func checkText(t *testing.T, name, src string) string {
	t.Helper()
	a := CheckSource(name, []byte(src), CheckOptions{})
	var b strings.Builder
	if err := WriteText(&b, []FileResult{{Name: name, File: a.File, Findings: a.Findings}}, TextOptions{Snippet: true}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A workflow's ESC and BEL bytes reach the terminal escaped, in the
// snippet and in the message that quotes them, and the caret still points
// at the field the finding is about.
func TestWriteTextEscapesControlCharacters(t *testing.T) {
	src := "nika: v1\nworkflow: w\ntasks:\n" +
		"  - id: a\n" +
		"    exec: { command: [\"printf\", \"\x1b[31mred\x1b]0;title\x07\"], bogus: 1 }\n" +
		"  - id: b\n" +
		"    exec: { command: [\"true\"] }\n" +
		"    \"re\x1b]0;pwn\x07try\": 3\n"
	got := checkText(t, "hostile.nika.yaml", src)
	want := "hostile.nika.yaml:5:56: error[NIKA-PARSE-005] tasks[0].exec.bogus: unknown field `bogus` in `exec` — Remove `bogus`; the fields allowed in `exec` are: command, cwd, env, stdin, capture.\n" +
		" 5 |     exec: { command: [\"printf\", \"\\x1b[31mred\\x1b]0;title\\x07\"], bogus: 1 }\n" +
		"   |                                                                 ^\n" +
		"hostile.nika.yaml:8:5: error[NIKA-PARSE-005] tasks[1][\"re\\u001b]0;pwn\\u0007try\"]: unknown field `re\\x1b]0;pwn\\x07try` in a task — Remove `re\\x1b]0;pwn\\x07try`; the fields allowed in a task are: id, depends_on, when, for_each, max_parallel, fail_fast, retry, timeout, on_error, on_finally, with, output, infer, exec, invoke, agent.\n" +
		" 8 |     \"re\\x1b]0;pwn\\x07try\": 3\n" +
		"   |     ^\n"
	if got != want {
		t.Errorf("text output:\n%s\nwant:\n%s", got, want)
	}
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("raw ESC or BEL in the text output: %q", got)
	}
	caretUnder(t, got, 5, "bogus")
}

// A 10,000-character line is cut to a window around the caret, `…` on the
// cut sides, and the caret still points at the field.
func TestWriteTextCutsLongLines(t *testing.T) {
	line := "    exec: { command: [\"echo\", \"" + strings.Repeat("x", 5000) + "\"], bogus: 1, env: { PAD: \"" + strings.Repeat("y", 5000) + "\" } }"
	if len(line) < 10000 {
		t.Fatalf("the line is %d characters", len(line))
	}
	src := "nika: v1\nworkflow: w\ntasks:\n  - id: a\n" + line + "\n"
	got := checkText(t, "long.nika.yaml", src)
	at := strings.Index(line, "bogus") // 0-based; the finding's column is at+1
	want := "long.nika.yaml:5:" + strconv.Itoa(at+1) + ": error[NIKA-PARSE-005] tasks[0].exec.bogus: unknown field `bogus` in `exec` — Remove `bogus`; the fields allowed in `exec` are: command, cwd, env, stdin, capture.\n" +
		" 5 | …" + line[at-39:at+81] + "…\n" +
		"   | " + strings.Repeat(" ", 40) + "^\n"
	if got != want {
		t.Errorf("text output:\n%s\nwant:\n%s", got, want)
	}
	caretUnder(t, got, 5, "bogus")

	// Near the start and the end of the line the window leans inwards, with
	// `…` on one side only; the caret past the end of a line stays right
	// after it.
	for _, tc := range []struct {
		col        int
		head, tail string
	}{
		{1, " ", "…"},
		{len(line), "…", "}"},
		{len(line) + 1, "…", "}"},
	} {
		text, caret := snippet(line, tc.col)
		if n := utf8.RuneCountInString(text); n > snippetWidth+2 {
			t.Errorf("column %d: snippet is %d characters", tc.col, n)
		}
		if !strings.HasPrefix(text, tc.head) || !strings.HasSuffix(text, tc.tail) {
			t.Errorf("column %d: snippet %q, want it to start %q and end %q", tc.col, text, tc.head, tc.tail)
		}
		rs := []rune(text)
		switch {
		case tc.col <= len(line) && (len(caret) >= len(rs) || rs[len(caret)] != rune(line[tc.col-1])):
			t.Errorf("column %d: the caret (indent %d) of %q is not under %q", tc.col, len(caret), text, line[tc.col-1])
		case tc.col > len(line) && len(caret) != len(rs):
			t.Errorf("column %d past the end: caret indent %d, want %d (right after the line)", tc.col, len(caret), len(rs))
		}
	}
}

// A caret after wide escapes and tabs still points at its character, and
// a window never splits an escape.
func TestSnippetCaretAfterEscapes(t *testing.T) {
	line := "\tk: \"" + strings.Repeat("\x1b", 100) + "\" # here"
	col := utf8.RuneCountInString(line[:strings.Index(line, "here")]) + 1
	text, caret := snippet(line, col)
	if got := string([]rune(text)[len(caret):]); !strings.HasPrefix(got, "here") {
		t.Errorf("the caret (indent %d) of %q points at %q, want \"here\"", len(caret), text, got)
	}
	if body, ok := strings.CutPrefix(text, "…"); !ok || !strings.HasPrefix(body, `\x1b`) || strings.Contains(text, "\x1b") {
		t.Errorf("snippet %q: want `…` then whole `\\x1b` escapes, no raw ESC", text)
	}
}

func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"plain — ünïcode":   "plain — ünïcode",
		"a\x1b[2Jb":         `a\x1b[2Jb`,
		"bell\a":            `bell\x07`,
		"two\nlines\r":      `two\x0alines\x0d`,
		"tab\there":         "tab here",
		"del\x7f":           `del\x7f`,
		"c1\u009b31m":       `c1\u009b31m`,
		"bidi\u202eevil":    `bidi\u202eevil`,
		"isolate\u2066x":    `isolate\u2066x`,
		"bad\xffutf8":       `bad\xffutf8`,
		"real \ufffd stays": "real \ufffd stays",
	} {
		if got := Inert(in); got != want {
			t.Errorf("Inert(%q) = %q, want %q", in, got, want)
		}
	}
}

// caretUnder checks that the caret under source line num points at a
// character that starts sub.
func caretUnder(t *testing.T, out string, num int, sub string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	prefix := " " + strconv.Itoa(num) + " | "
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) || i+1 >= len(lines) {
			continue
		}
		text := []rune(strings.TrimPrefix(l, prefix))
		caret := []rune(lines[i+1])[len([]rune(prefix)):]
		at := len(caret) - 1 // the index of '^'
		if at < 0 || caret[at] != '^' || at >= len(text) || !strings.HasPrefix(string(text[at:]), sub) {
			t.Errorf("the caret under line %d does not point at %q:\n%s\n%s", num, sub, l, lines[i+1])
		}
		return
	}
	t.Errorf("no snippet of line %d in:\n%s", num, out)
}
