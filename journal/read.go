package journal

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine bounds one journal line (an output, an agent response): a longer one is damage.
const MaxLine = 256 << 20

// Log is a journal as read back: its records in order, verified.
type Log struct {
	Path    string
	Records []Record
	// Torn: the file ended with an incomplete line (the process died while writing it); it is
	// ignored, and a writer that goes on cuts it off first.
	Torn bool

	size int64  // bytes of whole lines
	prev []byte // the chain value of the last whole line
}

// CorruptError says where a journal is damaged: the line (1-based) and why.
type CorruptError struct {
	Path   string
	Line   int
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the journal %s is damaged at line %d: %s", e.Path, e.Line, e.Reason)
}

// ReadFile reads and verifies the journal at path.
func ReadFile(path string) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := Read(f)
	if l != nil {
		l.Path = path
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.Path = path
	}
	return l, err
}

// Read reads and verifies a journal: every line a chained record (doc.go), the first one a run
// header. A last line without its newline is torn and ignored; anything else that is wrong is a
// *CorruptError naming the line. It never panics, whatever the bytes.
func Read(r io.Reader) (*Log, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	l := &Log{}
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err == errTorn {
			l.Torn = true
			break
		}
		if err != nil {
			if errors.Is(err, errTooLong) {
				return nil, &CorruptError{Line: n, Reason: err.Error()}
			}
			return nil, err
		}
		rec, sum, reason := parseLine(line, l.prev)
		if reason != "" {
			return nil, &CorruptError{Line: n, Reason: reason}
		}
		if n == 1 && rec.Kind != KindRun {
			return nil, &CorruptError{Line: n, Reason: "the first record is not a run header (kind \"run\")"}
		}
		if n > 1 && rec.Kind == KindRun {
			return nil, &CorruptError{Line: n, Reason: "a second run header"}
		}
		l.Records = append(l.Records, rec)
		l.prev = sum
		l.size += int64(len(line)) + 1
	}
	if len(l.Records) == 0 {
		return nil, &CorruptError{Line: 1, Reason: "no record: the journal is empty"}
	}
	return l, nil
}

var (
	errTorn    = errors.New("torn last line")
	errTooLong = fmt.Errorf("a line longer than %d bytes", MaxLine)
)

// readLine returns the next line without its newline; errTorn for a last line without one.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, errTooLong
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, errTorn
		default:
			return nil, err
		}
	}
}

// lineShape is a journal line: the chain value and the record's bytes, kept verbatim.
type lineShape struct {
	H string          `json:"h"`
	R json.RawMessage `json:"r"`
}

// parseLine checks one line against the previous chain value and decodes its record; reason is
// "" when the line is sound.
func parseLine(line, prev []byte) (rec Record, sum []byte, reason string) {
	var ls lineShape
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&ls); err != nil {
		return rec, nil, "not a JSON object: " + err.Error()
	}
	if dec.More() {
		return rec, nil, "more than one JSON value on the line"
	}
	if b, err := hex.DecodeString(ls.H); err != nil || len(b) != 32 {
		return rec, nil, "no chain value (\"h\" must be 64 hex characters)"
	}
	if len(ls.R) == 0 || ls.R[0] != '{' {
		return rec, nil, "no record (\"r\" must be an object)"
	}
	got := chain(prev, ls.R)
	if hex.EncodeToString(got[:]) != ls.H {
		return rec, nil, "chain mismatch: the line, or one before it, was changed"
	}
	if err := json.Unmarshal(ls.R, &rec); err != nil {
		return rec, nil, "a record that does not decode: " + err.Error()
	}
	if rec.Kind == "" {
		return rec, nil, "a record without a kind"
	}
	rec.raw = ls.R
	return rec, []byte(ls.H), ""
}
