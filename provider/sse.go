package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// SSEEvent is one server-sent event.
type SSEEvent struct {
	Type string // the event field; "" when the event had none (the "message" type)
	Data []byte // the data lines, joined with "\n"; the slice is the caller's
}

// ErrSSETooLarge is returned once a stream has delivered more bytes than its reader's bound.
var ErrSSETooLarge = errors.New("event stream exceeds its size bound")

// SSEReader reads a text/event-stream (the WHATWG HTML "server-sent events" format) as the three
// wires stream their replies: lines end in CRLF, LF or a lone CR, in any mix and wherever the
// network cut the bytes (a CRLF split across two reads is one line end, a multi-byte character
// split across two reads is reassembled, since events are bytes until a blank line closes them);
// a leading byte-order mark is dropped; a line starting with ":" is a comment (": keep-alive",
// ": OPENROUTER PROCESSING") and is ignored; "data" lines are joined with "\n"; "event" names the
// type; every other field ("id", "retry", unknown ones) is ignored; an event without data is not
// delivered. It is not safe for concurrent use.
type SSEReader struct {
	r    *bufio.Reader
	max  int64 // bytes the whole stream may hold
	read int64
	line []byte
	cr   bool // the last line ended with a CR: a LF right after it belongs to it
	bom  bool // the stream start was checked for a byte-order mark
}

// NewSSEReader reads events from r, which may deliver at most max bytes in all (max ≤ 0: no bound).
func NewSSEReader(r io.Reader, max int64) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 32<<10), max: max}
}

// Next returns the next event. At the end of the stream it returns io.EOF, or
// io.ErrUnexpectedEOF when the stream ended inside an event or a line (that event is never
// delivered: the wires' replies are then cut short). A read error is returned as it is, and
// ErrSSETooLarge once the bound is passed.
func (s *SSEReader) Next() (SSEEvent, error) {
	var (
		ev      SSEEvent
		data    []byte
		hasData bool
	)
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && (hasData || ev.Type != "") {
				err = io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		if len(line) == 0 { // a blank line dispatches the event
			if hasData {
				ev.Data = data[:len(data)-1] // the "\n" after the last data line
				return ev, nil
			}
			ev = SSEEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '}) // one space only, as the format says
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
			hasData = true
		}
	}
}

// readLine returns the next line without its end; the slice is valid until the next call. A
// partial line at the end of the stream is io.ErrUnexpectedEOF.
func (s *SSEReader) readLine() ([]byte, error) {
	if !s.bom {
		s.bom = true
		if b, err := s.r.Peek(3); err == nil && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
			_, _ = s.r.Discard(3)
			s.read += 3
		}
	}
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if s.read++; s.max > 0 && s.read > s.max {
			return nil, ErrSSETooLarge
		}
		cr := s.cr
		s.cr = false
		switch b {
		case '\n':
			if cr && len(s.line) == 0 {
				continue // the LF of a CRLF
			}
			return s.line, nil
		case '\r':
			s.cr = true
			return s.line, nil
		}
		s.line = append(s.line, b)
	}
}
