package event

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
)

func ev(seq int64, kind string, fields map[string]any) Event {
	return Event{Seq: seq, TS: ts0, RunID: "r", Kind: kind, Iteration: NoIteration, Fields: fields}
}

func TestNDJSONOneLinePerEvent(t *testing.T) {
	var w recordingWriter
	s := NewNDJSON(&w)
	s.Emit(ev(1, WorkflowStarted, map[string]any{"workflow": "w", "tasks": 2}))
	s.Emit(ev(2, Log, map[string]any{"level": "info", "message": "<hi & bye>\nnext"}))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// The chain values were computed by hand, outside Go, following the package doc:
	//   c1=$(printf '%s' "$line1" | sha256sum); printf '%s%s' "$c1" "$line2" | sha256sum
	// with line1 and line2 the lines below without their chain member.
	want := `{"chain":"4218a7bbf42ee289160adfc07df718c17df8da29201a7eb3659618692a9aef79","fields":{"tasks":2,"workflow":"w"},"kind":"workflow_started","run_id":"r","seq":1,"ts":"2026-11-30T12:00:00.123Z"}` + "\n" +
		`{"chain":"8509d48ac07a472e8d0bd8bb6edf4c9953764ef3d7917ad4b9f6b049bbcfe86a","fields":{"level":"info","message":"<hi & bye>\nnext"},"kind":"log","run_id":"r","seq":2,"ts":"2026-11-30T12:00:00.123Z"}` + "\n"
	if got := w.buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// One Write per line, each carrying exactly one whole line.
	if len(w.writes) != 2 {
		t.Fatalf("%d writes, want 2", len(w.writes))
	}
	for _, wr := range w.writes {
		if strings.Count(wr, "\n") != 1 || !strings.HasSuffix(wr, "\n") {
			t.Errorf("write %q is not one line", wr)
		}
	}
}

type recordingWriter struct {
	buf    bytes.Buffer
	writes []string
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return w.buf.Write(p)
}

func TestNDJSONFlushesPerLine(t *testing.T) {
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 4096)
	s := NewNDJSON(bw)
	s.Emit(ev(1, Log, nil))
	if out.Len() == 0 || !bytes.HasSuffix(out.Bytes(), []byte("}\n")) {
		t.Fatalf("line not flushed: %q", out.String())
	}
	n := out.Len()
	s.Emit(ev(2, Log, nil))
	if out.Len() <= n {
		t.Fatal("second line not flushed")
	}
}

// failingWriter accepts ok writes, then fails every write with a new error.
type failingWriter struct {
	ok, calls int
	lines     []string
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls > w.ok {
		return 3, fmt.Errorf("disk full #%d", w.calls)
	}
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

func TestNDJSONSurvivesFailingWriter(t *testing.T) {
	w := &failingWriter{ok: 1}
	s := NewNDJSON(w)
	for i := int64(1); i <= 5; i++ {
		s.Emit(ev(i, Log, map[string]any{"message": "m"}))
	}
	err := s.Err()
	if err == nil || !strings.Contains(err.Error(), "disk full #2") || !strings.Contains(err.Error(), "seq 2") {
		t.Fatalf("Err() = %v, want the first write error (seq 2, disk full #2)", err)
	}
	if len(w.lines) != 1 {
		t.Errorf("%d lines written, want 1", len(w.lines))
	}
	if w.calls != 2 {
		t.Errorf("%d write calls, want 2: nothing is written after the trace is cut", w.calls)
	}
}

func TestNDJSONErrorIsWrapped(t *testing.T) {
	sentinel := errors.New("boom")
	s := NewNDJSON(errWriter{sentinel})
	s.Emit(ev(1, Log, nil))
	s.Emit(ev(2, Log, nil))
	if !errors.Is(s.Err(), sentinel) {
		t.Errorf("Err() = %v, want it to wrap %v", s.Err(), sentinel)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }

type flushFails struct{ bytes.Buffer }

func (*flushFails) Flush() error { return errors.New("flush failed") }

func TestNDJSONShortWriteAndFlushError(t *testing.T) {
	s := NewNDJSON(shortWriter{})
	s.Emit(ev(1, Log, nil))
	if !errors.Is(s.Err(), io.ErrShortWrite) {
		t.Errorf("short write: Err() = %v", s.Err())
	}
	f := &flushFails{}
	s = NewNDJSON(f)
	s.Emit(ev(1, Log, nil))
	s.Emit(ev(2, Log, nil))
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "flush failed") {
		t.Errorf("flush: Err() = %v", s.Err())
	}
	if strings.Count(f.String(), "\n") != 1 {
		t.Errorf("wrote %q after a failed flush", f.String())
	}
}

func TestNDJSONNilWriter(t *testing.T) {
	s := NewNDJSON(nil)
	s.Emit(ev(1, Log, nil))
	if s.Err() != nil {
		t.Error(s.Err())
	}
}

func TestNDJSONEncodeErrorKeepsTheRecord(t *testing.T) {
	var out bytes.Buffer
	s := NewNDJSON(&out).WithMasker(func(s string) string { return strings.ReplaceAll(s, "SECRET", "***") })
	s.Emit(ev(1, Log, map[string]any{"x": math.Inf(1), "SECRET": 1}))
	s.Emit(ev(2, Log, map[string]any{"message": "ok"}))
	if s.Err() == nil {
		t.Fatal("want the encoding error")
	}
	lines := strings.Split(strings.TrimSuffix(unchain(t, out.String()), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), out.String())
	}
	if !strings.HasPrefix(lines[0], `{"fields":{"encode_error":"event: seq 1 (log): fields: canon: unsupported number +Inf"}`) {
		t.Errorf("fallback line = %s", lines[0])
	}
	if !strings.Contains(lines[1], `"seq":2`) {
		t.Errorf("second line = %s", lines[1])
	}
}

func TestNDJSONMasker(t *testing.T) {
	var out bytes.Buffer
	mask := func(s string) string { return strings.ReplaceAll(s, "hunter2", "***") }
	s := NewNDJSON(&out).WithMasker(mask)
	// The fields' own keys are the engine's and stay; the keys of nika:log's data are user data.
	fields := map[string]any{"message": "pw=hunter2", "hunter2": []any{"hunter2"}, "data": map[string]any{"hunter2": "hunter2"}}
	s.Emit(Event{Seq: 1, TS: ts0, RunID: "hunter2", Kind: Log, Task: "t", Iteration: NoIteration, Fields: fields})
	want := `{"fields":{"data":{"***":"***"},"hunter2":["***"],"message":"pw=***"},"kind":"log","run_id":"hunter2","seq":1,"task":"t","ts":"2026-11-30T12:00:00.123Z"}` + "\n"
	if got := unchain(t, out.String()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if fields["message"] != "pw=hunter2" {
		t.Error("the emitter's fields were modified")
	}
}

func TestMemory(t *testing.T) {
	m := NewMemory()
	m.Emit(ev(1, Log, map[string]any{"message": "a"}))
	m.Emit(ev(2, Log, nil))
	evs := m.Events()
	if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Fatalf("Events() = %+v", evs)
	}
	evs[0].Seq = 99
	if m.Events()[0].Seq != 1 {
		t.Error("Events() is not a copy")
	}
	var joined strings.Builder
	for _, l := range m.Lines() {
		joined.Write(l)
		joined.WriteByte('\n')
	}
	lines := strings.Split(strings.TrimSuffix(unchain(t, joined.String()), "\n"), "\n")
	want := []string{
		`{"fields":{"message":"a"},"kind":"log","run_id":"r","seq":1,"ts":"2026-11-30T12:00:00.123Z"}`,
		`{"fields":{},"kind":"log","run_id":"r","seq":2,"ts":"2026-11-30T12:00:00.123Z"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("Lines() = %q", lines)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d = %s, want %s", i, lines[i], want[i])
		}
	}
}

func TestMemoryMatchesNDJSON(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "pw", "**") }
	var out bytes.Buffer
	m := NewMemory().WithMasker(mask)
	nd := NewNDJSON(&out).WithMasker(mask)
	sink := Fanout{m, nd}
	sink.Emit(ev(1, UserEvent, map[string]any{"payload": map[string]any{"k": "pw"}, "event_type": "e"}))
	sink.Emit(ev(2, Log, map[string]any{"bad": math.NaN()}))
	var joined bytes.Buffer
	for _, l := range m.Lines() {
		joined.Write(l)
		joined.WriteByte('\n')
	}
	if joined.String() != out.String() {
		t.Errorf("Memory.Lines:\n%s\nNDJSON:\n%s", joined.String(), out.String())
	}
	if got := m.Events()[0].Fields["payload"].(map[string]any)["k"]; got != "**" {
		t.Errorf("Memory.Events not masked: %v", got)
	}
}

func TestMemoryConcurrentEmit(t *testing.T) {
	const writers, each = 32, 200
	m := NewMemory()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				m.Emit(ev(int64(w*each+i), Log, map[string]any{"w": w}))
				if i == each/2 {
					_ = m.Events()
					_ = m.Lines()
				}
			}
		})
	}
	wg.Wait()
	evs := m.Events()
	if len(evs) != writers*each {
		t.Fatalf("%d events, want %d", len(evs), writers*each)
	}
	seen := make(map[int64]bool, len(evs))
	for _, e := range evs {
		seen[e.Seq] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct events, want %d", len(seen), writers*each)
	}
}

func TestNDJSONConcurrentEmit(t *testing.T) {
	var out bytes.Buffer
	s := NewNDJSON(&out)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				s.Emit(ev(int64(w*50+i), Log, map[string]any{"message": strings.Repeat("x", i)}))
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if _, err := Deterministic([]byte(l)); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
	}
}

type recordSink struct {
	name string
	log  *[]string
}

func (r recordSink) Emit(e Event) { *r.log = append(*r.log, fmt.Sprintf("%s:%d", r.name, e.Seq)) }

func TestFanoutOrder(t *testing.T) {
	var log []string
	f := Fanout{recordSink{"a", &log}, nil, recordSink{"b", &log}, recordSink{"c", &log}}
	f.Emit(ev(1, Log, nil))
	f.Emit(ev(2, Log, nil))
	want := "a:1 b:1 c:1 a:2 b:2 c:2"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	Fanout(nil).Emit(ev(3, Log, nil)) // no sinks: nothing happens
}

var _ Sink = (*Memory)(nil)
var _ Sink = (*NDJSON)(nil)
var _ Sink = Fanout(nil)
