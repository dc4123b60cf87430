package event

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// ChainKey is the envelope key of a line's chain value (see the package doc for the recipe).
const ChainKey = "chain"

// chainLen is the length of a chain value: the lowercase hex of a SHA-256.
const chainLen = 2 * sha256.Size

// chain is the running value of a hash chain over canonical lines: the chain value of the last line
// linked, or nothing before the first line. The zero value starts a new chain.
type chain struct {
	last [chainLen]byte
	has  bool
}

// link computes the chain value of line, a canonical line without the chain key and without a newline,
// makes it the running value, and returns line with the chain member inserted at its place. line is
// grown in place (its bytes after the insertion point move), so the caller must own it.
func (c *chain) link(line []byte) []byte {
	c.last = nextChain(c.prev(), line)
	c.has = true
	return insertChain(line, &c.last)
}

// prev is the running value as the hash input wants it: its 64 hex characters, or nothing at the start.
func (c *chain) prev() []byte {
	if !c.has {
		return nil
	}
	return c.last[:]
}

// nextChain returns hex(SHA-256(prev || line)).
func nextChain(prev, line []byte) [chainLen]byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(line)
	var sum [sha256.Size]byte
	var out [chainLen]byte
	hex.Encode(out[:], h.Sum(sum[:0]))
	return out
}

var (
	attemptPrefix = []byte(`{"attempt":`)
	chainPrefix   = []byte(`"` + ChainKey + `":"`)
)

// chainMemberLen is the length of `"chain":"<64 hex>",`.
const chainMemberLen = len(`"`+ChainKey+`":"`) + chainLen + len(`",`)

// chainOffset is where the chain member goes in a canonical line without it, keeping the keys sorted:
// right after the "attempt" member when the line starts with one, else right after the opening brace.
// Every canonical line has a "fields" member after attempt, so a comma always follows attempt's value;
// -1 means the line is not shaped like one (no comma after `{"attempt":`).
func chainOffset(line []byte) int {
	if !bytes.HasPrefix(line, attemptPrefix) {
		return 1
	}
	i := bytes.IndexByte(line[len(attemptPrefix):], ',')
	if i < 0 {
		return -1
	}
	return len(attemptPrefix) + i + 1
}

// insertChain inserts `"chain":"<sum>",` into line at chainOffset, in place.
func insertChain(line []byte, sum *[chainLen]byte) []byte {
	at := chainOffset(line)
	if at < 0 { // not a line AppendJSON writes: cannot happen; keep the bytes rather than lose them
		return line
	}
	n := len(line)
	line = append(line, make([]byte, chainMemberLen)...)
	copy(line[at+chainMemberLen:], line[at:n])
	m := line[at : at+chainMemberLen]
	copy(m, chainPrefix)
	copy(m[len(chainPrefix):], sum[:])
	copy(m[len(chainPrefix)+chainLen:], `",`)
	return line
}
