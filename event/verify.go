package event

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ChainProblem is what is wrong with the line a ChainError names.
type ChainProblem int

// The problems VerifyChain reports, in the order it checks a line.
const (
	TornLine      ChainProblem = iota + 1 // the last line has no newline: the writer stopped mid-line
	BadJSON                               // the line is not a JSON object
	MissingChain                          // no well-formed chain member where the canonical line puts it
	ChainMismatch                         // the chain value is not the one the line's bytes and the previous chain give
	BadSeq                                // seq missing, or not the previous line's plus one (the first line's is 1)
)

var problemNames = [...]string{
	TornLine:      "torn last line",
	BadJSON:       "bad JSON",
	MissingChain:  "missing chain",
	ChainMismatch: "chain mismatch",
	BadSeq:        "bad seq",
}

// String names the problem the way a ChainError's message starts.
func (p ChainProblem) String() string {
	if p > 0 && int(p) < len(problemNames) {
		return problemNames[p]
	}
	return "ChainProblem(" + strconv.Itoa(int(p)) + ")"
}

// ChainError is the first bad line VerifyChain met: a trace is intact up to the line before it.
type ChainError struct {
	Line    int // 1-based
	Problem ChainProblem
	Detail  string // why, in words; never the line's content (it may be long, and it is data)
}

// Error is "line N: problem: detail".
func (e *ChainError) Error() string {
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Problem, e.Detail)
}

// VerifyChain reads a canonical trace (NDJSON lines as an NDJSON sink writes them) and checks, line by
// line, that each is a whole line (it ends with a newline), a JSON object, carries a chain value at its
// place, that the value is the one the recipe of the package doc gives, and that seq counts 1, 2, 3…
// It returns the number of lines that passed and, at the first that did not, a *ChainError naming it; a
// read error is returned as such (wrapped, with the line it happened on). An empty input is an intact
// trace of 0 events.
//
// The chain detects any change to a line, any line removed or inserted before the last, and lines
// reordered. It cannot see lines cut off at the end on a line boundary (that is a shorter intact trace),
// and it is not a signature: whoever can rewrite the whole file can recompute every chain value. The
// last line's chain value stands for the whole trace, so comparing it with a copy kept elsewhere detects
// both.
func VerifyChain(r io.Reader) (n int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		buf  []byte
		prev [chainLen]byte
		seq  int64
	)
	for lineNo := 1; ; lineNo++ {
		var rerr error
		buf, rerr = readLine(br, buf[:0])
		if rerr != nil && rerr != io.EOF {
			return n, fmt.Errorf("reading line %d: %w", lineNo, rerr)
		}
		if rerr == io.EOF {
			if len(buf) == 0 {
				return n, nil
			}
			return n, &ChainError{lineNo, TornLine, fmt.Sprintf("no newline at the end of its %d bytes (the writer stopped mid-line)", len(buf))}
		}
		line := buf[:len(buf)-1]
		var prevChain []byte
		if lineNo > 1 {
			prevChain = prev[:]
		}
		if p, detail := checkLine(line, prevChain, &prev, seq); p != 0 {
			return n, &ChainError{lineNo, p, detail}
		}
		seq++
		n++
	}
}

// readLine appends the next line, newline included, to buf. At the end of the input it returns what is
// left (no newline: a torn line, or nothing) with io.EOF.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// checkLine checks one line (without its newline) against the previous chain value (nil on the first
// line) and the previous seq; once the chain holds, it stores the line's chain value in *sum (prevChain
// may alias it: it is read first). It returns 0 or the problem and why.
func checkLine(line, prevChain []byte, sum *[chainLen]byte, prevSeq int64) (ChainProblem, string) {
	var env struct {
		Seq json.RawMessage `json:"seq"`
	}
	if len(line) == 0 {
		return BadJSON, "empty line"
	}
	if err := json.Unmarshal(line, &env); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			return BadJSON, fmt.Sprintf("at byte %d: %v", se.Offset, se)
		}
		return BadJSON, "not a JSON object"
	}
	if bytes.TrimLeft(line, " \t\r")[0] != '{' { // Unmarshal into a struct accepts null
		return BadJSON, "not a JSON object"
	}
	at := chainOffset(line)
	if at < 0 || !bytes.HasPrefix(line[at:], chainPrefix) {
		return MissingChain, missingChainDetail(line)
	}
	end := at + chainMemberLen
	if end > len(line) || !bytes.Equal(line[end-2:end], []byte(`",`)) {
		return MissingChain, fmt.Sprintf("the %q value is not %d hex digits followed by the next key", ChainKey, chainLen)
	}
	h := sha256.New()
	h.Write(prevChain)
	h.Write(line[:at])
	h.Write(line[end:])
	var raw [sha256.Size]byte
	var want [chainLen]byte
	hex.Encode(want[:], h.Sum(raw[:0]))
	if got := line[at+len(chainPrefix) : end-2]; !bytes.Equal(got, want[:]) {
		return ChainMismatch, fmt.Sprintf("the line says %.12s…, its bytes and the previous line's chain give %.12s… (this line was changed, or lines before it)", got, want[:])
	}
	*sum = want // the chain holds: the next line links to this value, whatever its seq says
	if len(env.Seq) == 0 {
		return BadSeq, "no seq"
	}
	seq, err := strconv.ParseInt(string(env.Seq), 10, 64)
	switch {
	case err != nil:
		return BadSeq, fmt.Sprintf("seq %s is not an integer", env.Seq)
	case prevSeq == 0 && seq != 1:
		return BadSeq, fmt.Sprintf("the first line's seq is %d, want 1", seq)
	case prevSeq != 0 && seq != prevSeq+1:
		return BadSeq, fmt.Sprintf("seq %d after seq %d, want %d", seq, prevSeq, prevSeq+1)
	}
	return 0, ""
}

// missingChainDetail says whether the line has no chain at all (a trace written before traces were
// chained, or not by an NDJSON sink) or has one elsewhere than its place.
func missingChainDetail(line []byte) string {
	var keys map[string]json.RawMessage
	if json.Unmarshal(line, &keys) == nil {
		if _, ok := keys[ChainKey]; ok {
			return fmt.Sprintf("%q is not where the canonical line puts it (right after \"attempt\", else first)", ChainKey)
		}
	}
	return fmt.Sprintf("no %q key (a trace written before traces were chained?)", ChainKey)
}
