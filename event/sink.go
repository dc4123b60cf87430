package event

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// Sink receives the canonical stream, in release order.
//
// Emit is called by one goroutine at a time (the stream that releases events) and must not block for
// long: it sits on the planner's settlement path. Sinks never fail the run: Emit returns nothing, and a
// sink that cannot record an event keeps the problem to itself and reports it afterwards if it can
// (NDJSON.Err). A sink treats the event as read-only.
type Sink interface {
	Emit(Event)
}

// Fanout emits each event to every sink, in slice order. Nil entries are skipped.
type Fanout []Sink

// Emit implements Sink.
func (f Fanout) Emit(e Event) {
	for _, s := range f {
		if s != nil {
			s.Emit(e)
		}
	}
}

// Memory keeps the stream in memory, for tests and for watchers of an in-process run. It is safe for
// concurrent use.
type Memory struct {
	mu     sync.Mutex
	events []Event
	mask   Masker
}

// NewMemory returns an empty Memory sink.
func NewMemory() *Memory { return &Memory{} }

// WithMasker sets the masker applied to the Fields of every later event (call it before the first Emit)
// and returns s.
func (s *Memory) WithMasker(m Masker) *Memory {
	s.mu.Lock()
	s.mask = m
	s.mu.Unlock()
	return s
}

// Emit implements Sink.
func (s *Memory) Emit(e Event) {
	s.mu.Lock()
	mask := s.mask
	s.mu.Unlock()
	e.Fields = maskFields(e.Fields, mask) // outside the lock: concurrent emitters mask in parallel
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

// Events returns the events received so far (masked), in order. The slice is a copy; the events' Fields
// are shared and must be treated as read-only.
func (s *Memory) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Lines returns the canonical JSON line of every event received so far, without newlines: the bytes an
// NDJSON sink with the same masker would have written, chain values included (the chain starts at the
// first event this sink received). Lines are encoded on demand, so emitting stays cheap.
func (s *Memory) Lines() [][]byte {
	s.mu.Lock()
	events, mask := slices.Clone(s.events), s.mask
	s.mu.Unlock()
	lines := make([][]byte, len(events))
	var c chain
	for i, e := range events {
		line, _ := appendLine(nil, e, mask)
		lines[i] = c.link(line)
	}
	return lines
}

// maxRetainedBuf bounds the line buffer an NDJSON sink keeps between events: one huge event should not
// pin its size for the rest of the run.
const maxRetainedBuf = 64 << 10

// NDJSON writes the stream as newline-delimited canonical JSON (the trace file): one Write call per event
// carrying one whole line, followed by Flush when the writer has a `Flush() error` method (a
// *bufio.Writer); an *os.File gets the Write and nothing else. It is safe for concurrent use.
//
// Every line carries its chain value (the package doc has the recipe; VerifyChain checks it), chained
// from the first line this sink wrote: one sink, one chain.
//
// It never fails the run. The first error is kept for Err. After a write or flush error nothing more is
// written — the trace is cut at the failure rather than left with a torn line followed by more events —
// and later Emits return at once. An event whose fields cannot be encoded (a programming error) is written
// with fields {"encode_error": message}, and that error is kept for Err as well.
type NDJSON struct {
	mu    sync.Mutex
	w     io.Writer
	flush func() error
	mask  Masker
	buf   []byte
	chain chain // over the lines written so far
	err   error // first error, of any kind
	werr  error // first write or flush error: write nothing more
}

// NewNDJSON returns a sink writing to w. A nil w discards everything.
func NewNDJSON(w io.Writer) *NDJSON {
	if w == nil {
		w = io.Discard
	}
	s := &NDJSON{w: w}
	if f, ok := w.(interface{ Flush() error }); ok {
		s.flush = f.Flush
	}
	return s
}

// WithMasker sets the masker applied to the Fields of every later event (call it before the first Emit)
// and returns s.
func (s *NDJSON) WithMasker(m Masker) *NDJSON {
	s.mu.Lock()
	s.mask = m
	s.mu.Unlock()
	return s
}

// Emit implements Sink.
func (s *NDJSON) Emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.werr != nil {
		return
	}
	e.Fields = maskFields(e.Fields, s.mask)
	line, err := appendLine(s.buf[:0], e, s.mask)
	if err != nil && s.err == nil {
		s.err = err
	}
	line = s.chain.link(line)
	line = append(line, '\n')
	if cap(line) <= maxRetainedBuf {
		s.buf = line[:0]
	} else {
		s.buf = nil
	}
	n, err := s.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err == nil && s.flush != nil {
		err = s.flush()
	}
	if err != nil {
		s.werr = fmt.Errorf("event: writing seq %d: %w", e.Seq, err)
		if s.err == nil {
			s.err = s.werr
		}
	}
}

// Err returns the first error the sink met (write, flush or encoding), or nil.
func (s *NDJSON) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// WriteErr returns the first write or flush error, after which the sink wrote nothing more, or nil. Unlike
// an encoding error (the event is still written, with an encode_error field), it means events are missing.
func (s *NDJSON) WriteErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// File is an NDJSON sink that owns the file it writes: a trace. A write that fails (a full disk) cuts a
// regular file back to the whole lines written before it, so the trace is always a valid prefix of the
// stream, never a torn line; nothing more is written. Close reports every such failure: the owner of a
// trace calls it once the stream has ended and must not ignore its error.
type File struct {
	*NDJSON
	path string
	f    *os.File
	out  *cutWriter
}

// CreateFile creates (or truncates) the file at path and returns a sink writing to it.
func CreateFile(path string) (*File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &File{path: path, f: f}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		t.out = &cutWriter{f: f, regular: true}
	} else {
		t.out = &cutWriter{f: f} // a device or a pipe: no sync, nothing to cut
	}
	t.NDJSON = NewNDJSON(t.out)
	return t, nil
}

// Path returns the path the file was created at.
func (t *File) Path() string { return t.path }

// Close syncs a regular file to disk and closes it. It returns nil only when every event emitted is on
// disk; otherwise an error naming the file and why, which also says how many events the file holds after
// a failed write. Errors that a write only meets at fsync or close (a network file system) count too.
func (t *File) Close() error {
	werr := t.WriteErr()
	var serr error
	if t.out.regular && werr == nil {
		serr = t.f.Sync()
	}
	cerr := t.f.Close()
	switch {
	case werr != nil:
		if t.out.cutErr != nil {
			return fmt.Errorf("the trace %s is incomplete, and its last line may be torn (cutting it back failed: %v): %w", t.path, t.out.cutErr, werr)
		}
		if !t.out.regular {
			return fmt.Errorf("the trace %s is incomplete: %w", t.path, werr)
		}
		return fmt.Errorf("the trace %s is incomplete (it holds only the first %d events): %w", t.path, t.out.lines, werr)
	case serr != nil:
		return fmt.Errorf("the trace %s may be incomplete: syncing it to disk: %w", t.path, serr)
	case cerr != nil:
		return fmt.Errorf("the trace %s may be incomplete: closing it: %w", t.path, cerr)
	}
	return nil
}

// cutWriter writes the lines of an NDJSON sink (one whole line per Write) to a file and, when a write
// fails part-way, truncates a regular file back to the lines before it.
type cutWriter struct {
	f       *os.File
	regular bool
	size    int64 // bytes of whole lines written
	lines   int64
	cutErr  error
}

func (w *cutWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 && w.regular {
			if terr := w.f.Truncate(w.size); terr != nil {
				w.cutErr = terr
			}
		}
		return n, err
	}
	w.size += int64(n)
	w.lines++
	return n, nil
}
