package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Definitions returns the definition hash of every task of w (doc.go): the SHA-256 of the task's
// YAML mapping as a value (hashNode: mapping keys in sorted order, aliases followed; comments,
// formatting and key order do not count), then its resolved model and its on_finally steps'
// models. What the task says counts, its model included when it comes from a var or --model. A
// task without a node (a workflow built in code) hashes its id instead.
func Definitions(w *workflow.Workflow) map[string]string {
	out := make(map[string]string, len(w.Tasks))
	h := sha256.New()
	var sum [sha256.Size]byte
	for _, t := range w.Tasks {
		h.Reset()
		if t.Node != nil {
			hashNode(h, t.Node, 0)
		} else {
			hashString(h, 's', t.ID)
		}
		hashString(h, 'm', t.Model)
		for _, st := range t.OnFinally {
			hashString(h, 'm', st.Model)
		}
		out[t.ID] = hex.EncodeToString(h.Sum(sum[:0]))
	}
	return out
}

// hashNode writes a node's value to h without materializing it: a tag byte per node, strings
// length-prefixed, so that no two values write the same bytes. A scalar other than a string
// writes its source text (1.0 and 1 are different definitions).
func hashNode(h hash.Hash, n *spec.Node, depth int) {
	if n == nil || depth > canon.MaxDepth {
		h.Write([]byte{'0'})
		return
	}
	switch n.Kind {
	case spec.KindAlias:
		hashNode(h, n.Target, depth+1)
	case spec.KindMap:
		pairs := slices.Clone(n.Pairs)
		slices.SortStableFunc(pairs, func(a, b *spec.Pair) int { return strings.Compare(keyText(a), keyText(b)) })
		h.Write([]byte{'{'})
		for _, p := range pairs {
			hashString(h, 'k', keyText(p))
			hashNode(h, p.Value, depth+1)
		}
		h.Write([]byte{'}'})
	case spec.KindSeq:
		h.Write([]byte{'['})
		for _, it := range n.Items {
			hashNode(h, it, depth+1)
		}
		h.Write([]byte{']'})
	default:
		hashString(h, byte('a'+n.Kind), n.Str)
	}
}

func keyText(p *spec.Pair) string {
	if p.Key == nil {
		return ""
	}
	return p.Key.Str
}

func hashString(h hash.Hash, tag byte, s string) {
	var pre [1 + binary.MaxVarintLen64]byte
	pre[0] = tag
	n := binary.PutUvarint(pre[1:], uint64(len(s)))
	h.Write(pre[:1+n])
	io.WriteString(h, s)
}

// inputs is a job's inputs hash: the SHA-256 of the canonical JSON of {"fields": its evaluated
// verb fields, "model": its model, "with": its evaluated with (absent for a step)}, written
// straight into a pooled buffer in that (sorted) key order; ok is false when they have no JSON
// encoding (NaN): such a job is neither restored nor recorded.
func inputs(job *workflow.Job, with map[string]any) (sum [sha256.Size]byte, ok bool) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	b := append((*bp)[:0], `{"fields":`...)
	b, err := canon.Append(b, job.Fields)
	if err != nil {
		return sum, false
	}
	b = append(b, `,"model":`...)
	b, _ = canon.Append(b, job.Model)
	if with != nil {
		b = append(b, `,"with":`...)
		if b, err = canon.Append(b, with); err != nil {
			return sum, false
		}
	}
	b = append(b, '}')
	if cap(b) <= 64<<10 {
		*bp = b
	}
	return sha256.Sum256(b), true
}

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
