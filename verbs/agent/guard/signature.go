package guard

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strconv"
)

// Signature is the 64-bit turn signature of AGENT.md §7.1. It is never persisted.
type Signature uint64

// Call is one tool call of a dispatch turn, in request order.
type Call struct {
	Name string
	Args []byte // the raw JSON arguments as the provider sent them
}

// Observation is one tool result of a dispatch turn, in request order.
type Observation struct {
	Content string // the full fed-back content
	IsError bool
}

const signatureDomain = "nika/guard/v1"

// Sign computes the turn signature over the calls and observations of one
// dispatch turn, both in request order (AGENT.md §7.1), with FNV-1a 64.
func Sign(calls []Call, obs []Observation) Signature {
	h := fnv.New64a()
	w := &encoder{h: h}
	w.raw([]byte(signatureDomain))
	w.byte(0)
	w.u64(uint64(len(calls)))
	for _, c := range calls {
		w.byte('c')
		w.str(c.Name)
		w.canonRaw(c.Args)
	}
	w.u64(uint64(len(obs)))
	for _, o := range obs {
		w.byte('o')
		w.str(o.Content)
		if o.IsError {
			w.byte(1)
		} else {
			w.byte(0)
		}
	}
	return Signature(h.Sum64())
}

// Canonical returns the canon(args) byte stream of §7.1 for raw JSON input.
// It is exposed for tests and diagnostics; Sign feeds the same bytes to the hash.
func Canonical(args []byte) []byte {
	var b bytes.Buffer
	w := &encoder{h: &b}
	w.canonRaw(args)
	return b.Bytes()
}

type encoder struct {
	h   io.Writer
	tmp [8]byte
}

func (w *encoder) raw(b []byte) { _, _ = w.h.Write(b) }
func (w *encoder) byte(c byte) {
	w.tmp[0] = c
	_, _ = w.h.Write(w.tmp[:1])
}
func (w *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(w.tmp[:], x)
	_, _ = w.h.Write(w.tmp[:])
}
func (w *encoder) str(s string) {
	w.u64(uint64(len(s)))
	_, _ = io.WriteString(w.h, s)
}

// canonRaw writes canon(v) for raw bytes: the canonical form of the JSON value,
// or 'r' str(raw) when the input is not valid JSON (exactly one value,
// optional surrounding white space).
func (w *encoder) canonRaw(raw []byte) {
	v, ok := decode(raw)
	if !ok {
		w.byte('r')
		w.str(string(raw))
		return
	}
	w.canon(v)
}

func decode(raw []byte) (any, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func (w *encoder) canon(v any) {
	switch x := v.(type) {
	case nil:
		w.byte('n')
	case bool:
		if x {
			w.byte('t')
		} else {
			w.byte('f')
		}
	case json.Number:
		w.number(x)
	case string:
		w.byte('s')
		w.str(x)
	case []any:
		w.byte('a')
		w.u64(uint64(len(x)))
		for _, e := range x {
			w.canon(e)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // bytewise
		w.byte('o')
		w.u64(uint64(len(keys)))
		for _, k := range keys {
			w.str(k)
			w.canon(x[k])
		}
	}
}

// number writes 'i' i64le(x) when the value is integral and fits int64
// exactly, else 'd' u64le(Float64bits(x)) with −0 folded to +0.
func (w *encoder) number(n json.Number) {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		w.byte('i')
		w.u64(uint64(i))
		return
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		// Cannot happen for json.Valid input; keep the spelling distinct.
		w.byte('r')
		w.str(s)
		return
	}
	if i, ok := exactInt64(f); ok {
		w.byte('i')
		w.u64(uint64(i))
		return
	}
	if f == 0 {
		f = 0 // −0 → +0
	}
	w.byte('d')
	w.u64(math.Float64bits(f))
}

// exactInt64 reports whether f is integral and representable as int64.
func exactInt64(f float64) (int64, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) {
		return 0, false
	}
	// int64 range is [-2^63, 2^63); 2^63 itself is a float64 but not an int64.
	if f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
		return 0, false
	}
	return int64(f), true
}
