package event

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// sampleTrace is a chained trace of five events, as an NDJSON sink writes it.
func sampleTrace(t testing.TB) []string {
	t.Helper()
	var out bytes.Buffer
	s := NewNDJSON(&out)
	s.Emit(ev(1, WorkflowStarted, map[string]any{"workflow": "w", "tasks": 1}))
	s.Emit(Event{Seq: 2, TS: ts0, RunID: "r", Kind: TaskStarted, Task: "a", Attempt: 1, Iteration: NoIteration, Fields: map[string]any{"verb": "exec"}})
	s.Emit(Event{Seq: 3, TS: ts0, RunID: "r", Kind: TaskRetrying, Task: "a", Attempt: 1, Iteration: NoIteration, Fields: map[string]any{"code": "NIKA-EXEC-001"}})
	s.Emit(Event{Seq: 4, TS: ts0, RunID: "r", Kind: TaskCompleted, Task: "a", Attempt: 2, Iteration: NoIteration, Fields: map[string]any{"status": "success"}})
	s.Emit(ev(5, WorkflowCompleted, map[string]any{"state": "success"}))
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	return slices.Collect(strings.Lines(out.String()))
}

// chained chains lines (each without chain and newline) the way a sink does, for inputs a sink would
// never write.
func chained(lines ...string) string {
	var c chain
	var b strings.Builder
	for _, l := range lines {
		b.Write(c.link([]byte(l)))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestVerifyChain(t *testing.T) {
	tr := sampleTrace(t)
	join := func(lines ...string) string { return strings.Join(lines, "") }
	line := func(i int) string { return tr[i-1] } // 1-based, with its newline
	replace := func(i int, old, new string) string {
		l := slices.Clone(tr)
		if !strings.Contains(l[i-1], old) {
			t.Fatalf("line %d has no %q", i, old)
		}
		l[i-1] = strings.Replace(l[i-1], old, new, 1)
		return join(l...)
	}
	chainOf := func(i int) string {
		at := chainOffset([]byte(line(i))) + len(chainPrefix)
		return line(i)[at : at+chainLen]
	}
	tests := []struct {
		name    string
		in      string
		n       int
		line    int // 0: no error
		problem ChainProblem
		detail  string // a part of the message
	}{
		{name: "intact", in: join(tr...), n: 5},
		{name: "empty", in: "", n: 0},
		{name: "one line", in: line(1), n: 1},
		{name: "changed field", in: replace(3, "EXEC", "EXEX"), n: 2, line: 3, problem: ChainMismatch, detail: "this line was changed"},
		{name: "changed chain", in: replace(3, chainOf(3)[:4], "0000"), n: 2, line: 3, problem: ChainMismatch},
		{name: "upper-case chain", in: replace(2, chainOf(2), strings.ToUpper(chainOf(2))), n: 1, line: 2, problem: ChainMismatch},
		{name: "line removed", in: join(line(1), line(3), line(4), line(5)), n: 1, line: 2, problem: ChainMismatch},
		{name: "first line removed", in: join(tr[1:]...), n: 0, line: 1, problem: ChainMismatch},
		{name: "lines swapped", in: join(line(1), line(3), line(2), line(4), line(5)), n: 1, line: 2, problem: ChainMismatch},
		{name: "line repeated", in: join(line(1), line(2), line(2), line(3)), n: 2, line: 3, problem: ChainMismatch},
		{name: "torn last line", in: join(tr[:4]...) + line(5)[:20], n: 4, line: 5, problem: TornLine, detail: "no newline at the end of its 20 bytes"},
		{name: "whole last line without newline", in: join(tr[:4]...) + strings.TrimSuffix(line(5), "\n"), n: 4, line: 5, problem: TornLine},
		{name: "garbage", in: join(line(1), line(2), "not json\n", line(4)), n: 2, line: 3, problem: BadJSON, detail: "at byte 2: invalid character"},
		{name: "torn line in the middle", in: join(line(1), line(2)[:30]+"\n", line(3)), n: 1, line: 2, problem: BadJSON, detail: "unexpected end of JSON input"},
		{name: "blank line", in: join(line(1), "\n", line(2)), n: 1, line: 2, problem: BadJSON, detail: "empty line"},
		{name: "array", in: join(line(1), "[1,2]\n"), n: 1, line: 2, problem: BadJSON, detail: "not a JSON object"},
		{name: "null", in: "null\n", n: 0, line: 1, problem: BadJSON, detail: "not a JSON object"},
		{name: "space before the object", in: " " + line(1), n: 0, line: 1, problem: MissingChain, detail: "not where the canonical line puts it"},
		{name: "space after the object", in: strings.TrimSuffix(line(1), "\n") + " \n", n: 0, line: 1, problem: ChainMismatch},
		{name: "CRLF", in: strings.TrimSuffix(line(1), "\n") + "\r\n", n: 0, line: 1, problem: ChainMismatch},
		{name: "unchained trace", in: `{"fields":{},"kind":"log","run_id":"r","seq":1,"ts":"x"}` + "\n", n: 0, line: 1, problem: MissingChain, detail: `no "chain" key`},
		{name: "chain removed", in: replace(2, `"chain":"`+chainOf(2)+`",`, ""), n: 1, line: 2, problem: MissingChain, detail: `no "chain" key`},
		{name: "chain moved", in: replace(1, `"chain":"`+chainOf(1)+`",`, `"zz":1,`), n: 0, line: 1, problem: MissingChain},
		{name: "chain elsewhere", in: `{"fields":{},"chain":"x"}` + "\n", n: 0, line: 1, problem: MissingChain, detail: "not where the canonical line puts it"},
		{name: "chain too short", in: `{"chain":"abc","fields":{}}` + "\n", n: 0, line: 1, problem: MissingChain, detail: "not 64 hex digits"},
		{name: "chain at the end of a short line", in: `{"chain":"abc"}` + "\n", n: 0, line: 1, problem: MissingChain, detail: "not 64 hex digits"},
		{name: "attempt without comma", in: `{"attempt":1}` + "\n", n: 0, line: 1, problem: MissingChain},
		{name: "seq gap", in: chained(`{"fields":{},"seq":1}`, `{"fields":{},"seq":2}`, `{"fields":{},"seq":4}`), n: 2, line: 3, problem: BadSeq, detail: "seq 4 after seq 2, want 3"},
		{name: "first seq", in: chained(`{"fields":{},"seq":2}`), n: 0, line: 1, problem: BadSeq, detail: "the first line's seq is 2, want 1"},
		{name: "no seq", in: chained(`{"fields":{}}`), n: 0, line: 1, problem: BadSeq, detail: "no seq"},
		{name: "seq not an integer", in: chained(`{"fields":{},"seq":1.5}`), n: 0, line: 1, problem: BadSeq, detail: "seq 1.5 is not an integer"},
		{name: "seq a string", in: chained(`{"fields":{},"seq":"1"}`), n: 0, line: 1, problem: BadSeq, detail: `seq "1" is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := VerifyChain(strings.NewReader(tt.in))
			if n != tt.n {
				t.Errorf("n = %d, want %d", n, tt.n)
			}
			if tt.line == 0 {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			ce, ok := errors.AsType[*ChainError](err)
			if !ok {
				t.Fatalf("err = %v, want a *ChainError", err)
			}
			if ce.Line != tt.line || ce.Problem != tt.problem || !strings.Contains(ce.Error(), tt.detail) {
				t.Errorf("err = %q (line %d, %v), want line %d, %v, containing %q", ce, ce.Line, ce.Problem, tt.line, tt.problem, tt.detail)
			}
			if want := fmt.Sprintf("line %d: %s: ", tt.line, tt.problem); !strings.HasPrefix(ce.Error(), want) {
				t.Errorf("err = %q, want it to start with %q", ce, want)
			}
		})
	}
}

// Every single-byte change to a trace is detected, at the line the byte belongs to.
func TestVerifyChainSeesEveryByte(t *testing.T) {
	trace := []byte(strings.Join(sampleTrace(t), ""))
	lineOf := 1
	for i := range trace {
		for _, x := range []byte{0x01, 0x20, 0x80} {
			mut := bytes.Clone(trace)
			mut[i] ^= x
			_, err := VerifyChain(bytes.NewReader(mut))
			ce, ok := errors.AsType[*ChainError](err)
			if !ok || ce.Line != lineOf {
				t.Fatalf("byte %d (line %d) ^ %#x: err = %v, want a *ChainError on line %d", i, lineOf, x, err, lineOf)
			}
		}
		if trace[i] == '\n' {
			lineOf++
		}
	}
}

func TestVerifyChainReadError(t *testing.T) {
	tr := sampleTrace(t)
	sentinel := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader(tr[0]+tr[1]), iotest.ErrReader(sentinel))
	n, err := VerifyChain(r)
	if n != 2 || !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "reading line 3") {
		t.Errorf("VerifyChain = %d, %v; want 2 and the read error on line 3", n, err)
	}
	if _, ok := errors.AsType[*ChainError](err); ok {
		t.Error("a read error is not a ChainError")
	}
}

func TestChainProblemString(t *testing.T) {
	if got := ChainProblem(0).String(); got != "ChainProblem(0)" {
		t.Errorf("got %q", got)
	}
	if got := ChainProblem(99).String(); got != "ChainProblem(99)" {
		t.Errorf("got %q", got)
	}
}

// VerifyChain never panics: it returns nil for an intact trace (whole lines, as many as it counts) or a
// ChainError on the line after the last good one.
func FuzzVerifyChain(f *testing.F) {
	tr := strings.Join(sampleTrace(f), "")
	f.Add([]byte(tr))
	f.Add([]byte(tr[:len(tr)-7]))
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte(`{"attempt":1}` + "\n"))
	f.Add([]byte(`{"attempt":1,"chain":"` + strings.Repeat("0", 64) + `",` + "\n"))
	f.Add([]byte(chained(`{"fields":{},"seq":1}`, `{"fields":{},"seq":3}`)))
	f.Add([]byte(chained(`{"attempt":3,"fields":{},"seq":1}`, `{}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := VerifyChain(bytes.NewReader(data))
		lines := bytes.Count(data, []byte("\n"))
		if err == nil {
			if len(data) > 0 && data[len(data)-1] != '\n' {
				t.Fatalf("a torn last line verified: %q", data)
			}
			if n != lines {
				t.Fatalf("n = %d for %d lines", n, lines)
			}
			return
		}
		ce, ok := errors.AsType[*ChainError](err)
		if !ok {
			t.Fatalf("err = %v, want a *ChainError", err)
		}
		if ce.Line != n+1 || ce.Line > lines+1 || ce.Problem < TornLine || ce.Problem > BadSeq || ce.Detail == "" {
			t.Fatalf("n = %d, %d lines, err = %+v", n, lines, ce)
		}
	})
}
