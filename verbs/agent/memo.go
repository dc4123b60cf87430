package agent

import (
	"bytes"
	"encoding/json"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
)

// Durable agents (issue 15, D50). The core is a deterministic state machine over its inputs: the
// model's replies and the tool batches' results. So the driver records each of them in the job's
// Memo (the run's journal) as it feeds it to the core, and an attempt resumed after a crash feeds
// the core the recorded ones first, without calling the model or a tool, then goes on live: the
// core asks, step for step, for what it asked before, and its first live request is the one the
// interrupted attempt was sending. A replayed step is recorded again, so that the attempt's
// journal holds all its steps. A reply that is an error or a cancellation is not recorded (the
// attempt ends on it), nor is a batch the run's cancellation interrupted. Replay stops at the
// first recorded step that does not fit what the core asks (a reply where it wants a batch, a
// batch of another size, bytes that do not decode): from there the attempt runs live.

// memoStep is one recorded step: a model reply or a batch's results (docs/journal.md).
type memoStep struct {
	Reply *provider.Response `json:"reply,omitempty"`
	Batch []memoResult       `json:"batch,omitempty"`
}

// memoResult is core.Result as the journal keeps it.
type memoResult struct {
	Content string        `json:"content"`
	Spilled string        `json:"spilled,omitempty"`
	Err     *memoError    `json:"error,omitempty"`
	Events  []memoEmitted `json:"events,omitempty"`
}

type memoError struct {
	Code      string         `json:"code"`
	Category  string         `json:"category"`
	Message   string         `json:"message"`
	Transient bool           `json:"transient"`
	Details   map[string]any `json:"details,omitempty"`
}

type memoEmitted struct {
	Kind   string         `json:"kind"`
	Fields map[string]any `json:"fields"`
}

// replay is the recorded steps an attempt has yet to feed the core.
type replay struct{ steps []json.RawMessage }

// next decodes the next recorded step, or reports that replay is over (and ends it).
func (p *replay) next() (memoStep, bool) {
	if len(p.steps) == 0 {
		return memoStep{}, false
	}
	var s memoStep
	dec := json.NewDecoder(bytes.NewReader(p.steps[0]))
	dec.UseNumber() // event fields and details keep their numbers' text
	if err := dec.Decode(&s); err != nil {
		p.steps = nil
		return memoStep{}, false
	}
	p.steps = p.steps[1:]
	return s, true
}

// reply is the next recorded reply, if the next step is one.
func (p *replay) reply() (core.Reply, bool) {
	s, ok := p.next()
	if !ok || s.Reply == nil {
		p.steps = nil
		return core.Reply{}, false
	}
	return core.Reply{Response: s.Reply}, true
}

// batch is the next recorded batch, if the next step is one of n results.
func (p *replay) batch(n int) ([]core.Result, bool) {
	s, ok := p.next()
	if !ok || s.Reply != nil || len(s.Batch) != n {
		p.steps = nil
		return nil, false
	}
	out := make([]core.Result, n)
	for i, m := range s.Batch {
		out[i] = core.Result{Content: m.Content, Spilled: m.Spilled}
		if e := m.Err; e != nil {
			details := e.Details
			if details == nil {
				details = map[string]any{}
			}
			out[i].Err = &spec.Error{Code: e.Code, Category: e.Category, Message: e.Message, Transient: e.Transient, Details: details}
		}
		for _, ev := range m.Events {
			out[i].Events = append(out[i].Events, core.Emitted{Kind: ev.Kind, Fields: ev.Fields})
		}
	}
	return out, true
}

// recordReply journals a reply the core is fed, when it is a response.
func (r *run) recordReply(rep core.Reply) {
	if r.job.Memo == nil || rep.Response == nil {
		return
	}
	r.record(memoStep{Reply: rep.Response})
}

// recordBatch journals a batch's results the core is fed.
func (r *run) recordBatch(res []core.Result) {
	if r.job.Memo == nil {
		return
	}
	s := memoStep{Batch: make([]memoResult, len(res))}
	for i, x := range res {
		m := memoResult{Content: x.Content, Spilled: x.Spilled}
		if x.Err != nil {
			m.Err = &memoError{Code: x.Err.Code, Category: x.Err.Category, Message: x.Err.Message, Transient: x.Err.Transient, Details: x.Err.Details}
		}
		for _, e := range x.Events {
			m.Events = append(m.Events, memoEmitted{Kind: e.Kind, Fields: e.Fields})
		}
		s.Batch[i] = m
	}
	r.record(s)
}

func (r *run) record(s memoStep) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return // a value with no JSON encoding: this step is not journaled, and a resume runs it live
	}
	r.job.Memo.Record(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
