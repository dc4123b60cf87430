package provider

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every event of r and the error that ended the stream.
func readAll(r *SSEReader) ([]SSEEvent, error) {
	var evs []SSEEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSEReader(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want []SSEEvent
		err  error
	}{
		{"data only", "data: {\"a\":1}\n\n", []SSEEvent{{Data: []byte(`{"a":1}`)}}, io.EOF},
		{"typed", "event: ping\ndata: {}\n\n", []SSEEvent{{Type: "ping", Data: []byte(`{}`)}}, io.EOF},
		{"CRLF and lone CR", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata:3\n\n",
			[]SSEEvent{{Type: "a", Data: []byte("1")}, {Data: []byte("2")}, {Data: []byte("3")}}, io.EOF},
		{"multi-line data", "data: a\ndata:  b\ndata\n\n", []SSEEvent{{Data: []byte("a\n b\n")}}, io.EOF},
		{"comments and unknown fields", ": keep-alive\n\nid: 7\nretry: 10\nfoo: bar\ndata: x\n: mid\n\n",
			[]SSEEvent{{Data: []byte("x")}}, io.EOF},
		{"an event without data is not delivered", "event: ping\n\ndata: y\n\n", []SSEEvent{{Data: []byte("y")}}, io.EOF},
		{"the type does not leak into the next event", "event: a\n\ndata: y\n\n", []SSEEvent{{Data: []byte("y")}}, io.EOF},
		{"byte-order mark", "\uFEFFdata: z\n\n", []SSEEvent{{Data: []byte("z")}}, io.EOF},
		{"no space after the colon", "data:z\n\n", []SSEEvent{{Data: []byte("z")}}, io.EOF},
		{"cut inside an event", "data: 1\n\ndata: 2\n", []SSEEvent{{Data: []byte("1")}}, io.ErrUnexpectedEOF},
		{"cut inside a line", "data: 1\n\ndata: {\"a", []SSEEvent{{Data: []byte("1")}}, io.ErrUnexpectedEOF},
		{"comment at the end", "data: 1\n\n: bye\n", []SSEEvent{{Data: []byte("1")}}, io.EOF},
		{"empty", "", nil, io.EOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(NewSSEReader(r, 0))
				if !errors.Is(err, tt.err) {
					t.Errorf("error = %v, want %v", err, tt.err)
				}
				if !sameEvents(got, tt.want) {
					t.Errorf("events = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestSSEReaderBound(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := readAll(NewSSEReader(strings.NewReader(in), 50)); !errors.Is(err, ErrSSETooLarge) {
		t.Errorf("error = %v, want ErrSSETooLarge", err)
	}
	if evs, err := readAll(NewSSEReader(strings.NewReader(in), int64(len(in)))); err != io.EOF || len(evs) != 1 {
		t.Errorf("a stream of exactly the bound: %d events, %v; want 1, EOF", len(evs), err)
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(boom))
	evs, err := readAll(NewSSEReader(r, 0))
	if !errors.Is(err, boom) || len(evs) != 1 {
		t.Errorf("%d events, %v; want 1, boom", len(evs), err)
	}
}

func sameEvents(a, b []SSEEvent) bool {
	return slices.EqualFunc(a, b, func(x, y SSEEvent) bool { return x.Type == y.Type && bytes.Equal(x.Data, y.Data) })
}

var lineEnd = regexp.MustCompile(`\r\n|\r|\n`)

// referenceSSE is the event-stream algorithm written straight from the WHATWG text over the whole
// input at once: the reader must agree with it however the bytes arrive.
func referenceSSE(in []byte) ([]SSEEvent, error) {
	in = bytes.TrimPrefix(in, []byte("\uFEFF"))
	lines := lineEnd.Split(string(in), -1)
	partial := lines[len(lines)-1] != "" // the text after the last line end
	lines = lines[:len(lines)-1]
	var (
		evs  []SSEEvent
		typ  string
		data []string
		has  bool
	)
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				evs = append(evs, SSEEvent{Type: typ, Data: []byte(strings.Join(data, "\n"))})
			}
			typ, data, has = "", nil, false
		case l[0] == ':':
		default:
			f, v, _ := strings.Cut(l, ":")
			v = strings.TrimPrefix(v, " ")
			switch f {
			case "event":
				typ = v
			case "data":
				data, has = append(data, v), true
			}
		}
	}
	if partial || has || typ != "" {
		return evs, io.ErrUnexpectedEOF
	}
	return evs, io.EOF
}

// FuzzSSEReader checks the reader against referenceSSE, reading the input whole, a byte at a
// time, and in the reads iotest.HalfReader makes (CRLFs and characters split across reads).
func FuzzSSEReader(f *testing.F) {
	for _, seed := range []string{
		"data: {\"a\":1}\n\n",
		"event: message_start\r\ndata: {}\r\n\r\n: keep-alive\r\n\r\n",
		"data: a\rdata: b\r\r",
		"data: é日本🎉\n\ndata: [DONE]\n\n",
		"\uFEFFdata:x\n\nevent: e\n\n",
		"data: cut",
		"data\n\n:\n\nid\n\nevent\ndata\n\n",
		"\r\n\r\n\n\r",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := referenceSSE(in)
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(in),
			"one byte": iotest.OneByteReader(bytes.NewReader(in)),
			"halves":   iotest.HalfReader(bytes.NewReader(in)),
		} {
			got, err := readAll(NewSSEReader(r, 0))
			if err != wantErr {
				t.Errorf("%s: error = %v, want %v", name, err, wantErr)
			}
			if !sameEvents(got, want) {
				t.Errorf("%s: events = %q, want %q", name, got, want)
			}
		}
	})
}
