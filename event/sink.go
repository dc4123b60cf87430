package event

import (
	"fmt"
	"io"
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
// NDJSON sink with the same masker would have written. Lines are encoded on demand, so emitting stays
// cheap.
func (s *Memory) Lines() [][]byte {
	s.mu.Lock()
	events, mask := slices.Clone(s.events), s.mask
	s.mu.Unlock()
	lines := make([][]byte, len(events))
	for i, e := range events {
		lines[i], _ = appendLine(nil, e, mask)
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
// It never fails the run. The first error is kept for Err. After a write or flush error nothing more is
// written — the trace is cut at the failure rather than left with a torn line followed by more events —
// and later Emits return at once. An event whose fields cannot be encoded (a programming error) is written
// with fields {"encode_error": message}, and that error is kept for Err as well.
type NDJSON struct {
	mu     sync.Mutex
	w      io.Writer
	flush  func() error
	mask   Masker
	buf    []byte
	err    error // first error, of any kind
	broken bool  // a write or flush failed: write nothing more
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
	if s.broken {
		return
	}
	e.Fields = maskFields(e.Fields, s.mask)
	line, err := appendLine(s.buf[:0], e, s.mask)
	if err != nil && s.err == nil {
		s.err = err
	}
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
		s.broken = true
		if s.err == nil {
			s.err = fmt.Errorf("event: writing seq %d: %w", e.Seq, err)
		}
	}
}

// Err returns the first error the sink met (write, flush or encoding), or nil.
func (s *NDJSON) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
