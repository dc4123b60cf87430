package journal

import (
	"bytes"
	"encoding/json"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// Record kinds (doc.go).
const (
	KindRun    = "run"    // the header, first line: which run, of which workflow, with which inputs
	KindResume = "resume" // a later process goes on with the run (--resume, a restarted nika serve)
	KindJob    = "job"    // a job's outcome: an attempt or an on_finally step
	KindStep   = "step"   // one step of a verb's own progress (an agent's model response, a tool batch)
	KindEnd    = "end"    // a process's run ended: success, failure, cancelled or paused
)

// Job statuses (Record.Status).
const (
	StatusSuccess   = "success"
	StatusFailure   = "failure"
	StatusCancelled = "cancelled"
	StatusPaused    = "paused"
)

// Record is one journal record (the "r" of a line); which fields are set depends on Kind.
type Record struct {
	Kind string `json:"kind"`

	// run, resume (and Time on end)
	RunID    string            `json:"run_id,omitempty"`
	Workflow string            `json:"workflow,omitempty"` // the workflow's name
	File     string            `json:"file,omitempty"`     // the workflow file, absolute ("" for a submitted one)
	Source   string            `json:"source,omitempty"`   // SHA-256 (hex) of the workflow's bytes
	Vars     map[string]string `json:"vars,omitempty"`     // the --var texts the run was given
	Seed     uint64            `json:"seed,omitempty"`
	Model    string            `json:"model,omitempty"` // --model
	Version  string            `json:"version,omitempty"`
	Time     string            `json:"time,omitempty"`    // RFC 3339 UTC, milliseconds
	Answers  map[string]any    `json:"answers,omitempty"` // resume: the answers it was given (TASK or TASK[i])

	// job, step
	Task      string `json:"task,omitempty"`
	Iteration *int   `json:"iteration,omitempty"`  // absent outside for_each
	Attempt   int    `json:"attempt,omitempty"`    // absent for an on_finally step
	Finally   *int   `json:"on_finally,omitempty"` // the on_finally step's index; absent for an attempt
	Def       string `json:"def,omitempty"`        // SHA-256 of the task's definition
	In        string `json:"in,omitempty"`         // SHA-256 of the job's evaluated inputs

	// job
	Status   string             `json:"status,omitempty"`
	Output   json.RawMessage    `json:"output,omitempty"`   // success
	Bindings json.RawMessage    `json:"bindings,omitempty"` // success, when the task binds
	Error    *ErrorRecord       `json:"error,omitempty"`    // failure, cancelled
	Question *workflow.Question `json:"question,omitempty"` // paused

	// step
	N    int             `json:"n,omitempty"` // its index in the attempt, from 0
	Data json.RawMessage `json:"data,omitempty"`

	// end
	State     string         `json:"state,omitempty"`
	Questions []PausedRecord `json:"questions,omitempty"` // paused

	raw json.RawMessage
}

// ErrorRecord is a job's error, as spec.Error writes it (LANGUAGE.md §8.1).
type ErrorRecord struct {
	Code      *string        `json:"code"`
	Category  string         `json:"category"`
	Message   string         `json:"message"`
	Transient bool           `json:"transient"`
	Details   map[string]any `json:"details"`
	TaskID    string         `json:"task_id"`
	Attempt   int            `json:"attempt"`
}

// SpecError turns the record back into an error.
func (e *ErrorRecord) SpecError() *spec.Error {
	if e == nil {
		return nil
	}
	out := &spec.Error{Category: e.Category, Message: e.Message, Transient: e.Transient, Details: e.Details, TaskID: e.TaskID, Attempt: e.Attempt}
	if e.Code != nil {
		out.Code = *e.Code
	}
	if out.Details == nil {
		out.Details = map[string]any{}
	}
	return out
}

func errorRecord(e *spec.Error) *ErrorRecord {
	if e == nil {
		return nil
	}
	r := &ErrorRecord{Category: e.Category, Message: e.Message, Transient: e.Transient, Details: e.Details, TaskID: e.TaskID, Attempt: e.Attempt}
	if e.Code != "" {
		code := e.Code
		r.Code = &code
	}
	return r
}

// PausedRecord is a question a paused run waits on.
type PausedRecord struct {
	Task      string            `json:"task"`
	Iteration *int              `json:"iteration,omitempty"`
	Attempt   int               `json:"attempt"`
	Question  workflow.Question `json:"question"`
}

// Raw is the record's bytes as the journal holds them.
func (r *Record) Raw() json.RawMessage { return r.raw }

// encode is a record's bytes: compact JSON without HTML escaping (a line never holds a raw
// newline: JSON escapes those inside strings).
func encode(r *Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func intp(i int) *int { return &i }
