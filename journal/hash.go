package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Definitions returns the definition hash of every task of w (doc.go): the SHA-256 of the
// canonical JSON of {"node": the task's YAML mapping as a value, "model": its resolved model,
// "steps": its on_finally steps' models}. Comments, formatting and key order do not count; what
// the task says does, its model included when it comes from a var or --model. A task without a
// node (a workflow built in code) hashes its id alone.
func Definitions(w *workflow.Workflow) map[string]string {
	out := make(map[string]string, len(w.Tasks))
	for _, t := range w.Tasks {
		out[t.ID] = definition(t)
	}
	return out
}

func definition(t *spec.Task) string {
	var node any = t.ID
	if t.Node != nil {
		if v, err := t.Node.Value(); err == nil {
			node = v
		}
	}
	steps := make([]any, len(t.OnFinally))
	for i, s := range t.OnFinally {
		steps[i] = s.Model
	}
	b, err := canon.Marshal(map[string]any{"node": node, "model": t.Model, "steps": steps})
	if err != nil {
		b = []byte(t.ID)
	}
	return sum(b)
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
