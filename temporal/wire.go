package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/workflow"
)

// What crosses Temporal's boundary (workflow input and result, activity input and result) is
// JSON, which the SDK's default converter writes into the history. Values of nika's value model
// (LANGUAGE.md §4.3) go as Value: canonical JSON out, workflow.DecodeValue in, so an integer
// comes back an int and not a float64, as the journal restores outputs. What JSON cannot carry
// is not carried exactly: NaN and ±Inf become null, bytes a base64 string, and a float64 with
// an integral value (2.0) comes back an int (the canonical JSON writes it as 2).

// Value is one value of the value model, as canonical JSON.
type Value struct{ V any }

// MarshalJSON writes the value as canonical JSON (null for what JSON cannot carry).
func (v Value) MarshalJSON() ([]byte, error) {
	b, err := canon.Marshal(v.V)
	if err != nil {
		return canon.Marshal(canon.Finite(v.V))
	}
	return b, nil
}

// UnmarshalJSON decodes into the value model.
func (v *Value) UnmarshalJSON(b []byte) error {
	x, err := workflow.DecodeValue(string(b))
	if err != nil {
		return err
	}
	v.V = x
	return nil
}

// Map is the value as an object (nil when it is not one).
func (v Value) Map() map[string]any {
	m, _ := v.V.(map[string]any)
	return m
}

// Error is a *spec.Error on the wire.
type Error struct {
	Code      string `json:",omitempty"`
	Category  string `json:",omitempty"`
	Message   string
	Transient bool   `json:",omitempty"`
	Details   Value  `json:",omitempty"`
	TaskID    string `json:",omitempty"`
	Attempt   int    `json:",omitempty"`
}

func wireError(e *spec.Error) *Error {
	if e == nil {
		return nil
	}
	return &Error{Code: e.Code, Category: e.Category, Message: e.Message, Transient: e.Transient,
		Details: Value{e.Details}, TaskID: e.TaskID, Attempt: e.Attempt}
}

func (e *Error) spec() *spec.Error {
	if e == nil {
		return nil
	}
	d := e.Details.Map()
	if d == nil {
		d = map[string]any{}
	}
	return &spec.Error{Code: e.Code, Category: e.Category, Message: e.Message, Transient: e.Transient,
		Details: d, TaskID: e.TaskID, Attempt: e.Attempt}
}

// JobInput is one verb call, its fields evaluated in the workflow: what the activity needs to
// rebuild the workflow.Job (a verb reads of the task only its id).
type JobInput struct {
	RunID     string
	Task      string
	Verb      string
	Fields    Value
	Model     string `json:",omitempty"`
	Attempt   int
	Iteration int
	Finally   int           // the on_finally step's index; -1 for an attempt
	Permits   *spec.Permits `json:",omitempty"`
	RunDir    string
	Workflow  string
	// Inspect is the answer to the job's nika:inspect call, when it makes one (inspectView).
	Inspect *InspectView `json:",omitempty"`
	// Recorded are the steps the job's last dispatch recorded (its Memo) before its worker was
	// lost; nil on the first.
	Recorded []json.RawMessage `json:",omitempty"`
}

// InspectView is one nika:inspect view and its answer.
type InspectView struct {
	View   string
	Answer Value
}

func jobInput(runID string, id planner.JobID, job *workflow.Job) JobInput {
	task := ""
	if job.Task != nil {
		task = job.Task.ID
	}
	return JobInput{RunID: runID, Task: task, Verb: job.Verb, Fields: Value{job.Fields}, Model: job.Model,
		Attempt: job.Attempt, Iteration: job.Iteration, Finally: id.Finally, Permits: job.Permits,
		RunDir: job.RunDir, Workflow: job.Workflow}
}

// job is the job the activity runs, its nika:inspect answered with in.Inspect.
func (in JobInput) job() workflow.Job {
	fields := in.Fields.Map()
	if fields == nil {
		fields = map[string]any{}
	}
	job := workflow.Job{Task: &spec.Task{ID: in.Task}, Verb: in.Verb, Fields: fields, Model: in.Model,
		Attempt: in.Attempt, Iteration: in.Iteration, Permits: in.Permits, RunDir: in.RunDir, Workflow: in.Workflow}
	if v := in.Inspect; v != nil {
		job.Inspect = func(_ context.Context, view string) (any, error) {
			if view != v.View {
				return nil, fmt.Errorf("the view %q was not asked for when the job started", view)
			}
			return v.Answer.V, nil
		}
	}
	return job
}

// Emitted is an event the verb asked for while it ran (nika:log, nika:emit).
type Emitted struct {
	Kind   string
	Fields Value
}

// JobOutcome is what the activity returns: the verb's outcome and the events it emitted.
type JobOutcome struct {
	Output  Value              `json:",omitempty"`
	Err     *Error             `json:",omitempty"`
	Usage   []workflow.Usage   `json:",omitempty"`
	Pause   *workflow.Question `json:",omitempty"`
	Emitted []Emitted          `json:",omitempty"`
}

func (o JobOutcome) outcome() workflow.Outcome {
	return workflow.Outcome{Output: o.Output.V, Err: o.Err.spec(), Usage: o.Usage, Pause: o.Pause}
}

// Input starts one run: the workflow's text (the workflow compiles it, a pure function of it,
// at every replay), its check options and the run's resolved inputs. The history keeps it,
// secrets included: a deployment that must not store them there encrypts payloads with a
// Temporal codec (the SDK's converter.PayloadCodec), which this package leaves to its worker.
type Input struct {
	Name       string // the file name, for messages
	Source     string
	Model      string   `json:",omitempty"` // the default model (`nika check --model`)
	MCPServers []string `json:",omitempty"` // the engine's MCP registry names, as checking needs them
	// Ceiling is the permits ceiling the run is checked and runs under (nika serve's --permits,
	// D35: spec.CheckOptions.Ceiling); nil: the workflow's own permits, as `nika run`.
	Ceiling *spec.Permits `json:",omitempty"`
	RunID   string        `json:",omitempty"` // "": the workflow id
	Seed    uint64        `json:",omitempty"`
	RunDir  string
	// MaxParallelTasks bounds the tasks in flight (D4); 0: unbounded.
	MaxParallelTasks int `json:",omitempty"`
	// JobTimeout bounds one verb call (an activity's start-to-close timeout) where nika sets no
	// bound of its own; 0: DefaultJobTimeout. nika's task timeouts are the core's timers.
	JobTimeout time.Duration `json:",omitempty"`
	// HeartbeatTimeout is how long a job's worker may stay silent before Temporal takes it for
	// lost and the job is dispatched again; 0: DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:",omitempty"`
	// Vars are the resolved vars (engine.Prepare), Env the env values, Secrets the secrets.
	Vars, Env, Secrets Value
}

// Output is the run's end: its state, the run report (D22, canonical JSON, unmasked), its
// outputs, and the canonical event lines the core released (unmasked; the caller masks them
// with the run's secrets as it writes them, as a local run's sinks do). Events holds them all
// when they are small enough for one payload, else nothing: the caller then reads the
// EventCount lines through QueryEvents, which a closed workflow still answers.
type Output struct {
	State      string
	Report     json.RawMessage
	Outputs    Value
	Events     []string `json:",omitempty"`
	EventCount int
}

// Answer is the signal that answers a question a nika:prompt gate waits on: Name is TASK (or
// TASK[i] for one for_each iteration), Text the answer as `nika run --answer` takes it.
type Answer struct {
	Name string
	Text string
}

// Question is an open question of a run (QueryQuestions).
type Question struct {
	Task      string
	Iteration int // -1 outside for_each
	Attempt   int
	Mode      string
	Message   string
	Choices   []string `json:",omitempty"`
}

func (q Question) name() string {
	if q.Iteration >= 0 {
		return fmt.Sprintf("%s[%d]", q.Task, q.Iteration)
	}
	return q.Task
}

// The agent core's steps on the wire (agent.go): the arming, each model request and its reply,
// each tool call and its result. A field of the value model goes as Value; a step activity's
// job is the attempt's JobInput without its fields, which no step reads.

// Arming is core.Arming on the wire: its Schema as a Value.
type Arming struct {
	core.Arming
	Schema Value // shadows core.Arming.Schema (JSON takes the shallower field)
}

func (a Arming) core() core.Arming {
	c := a.Arming
	c.Schema = a.Schema.V
	c.Universe = toolDefs(c.Universe)
	return c
}

// toolDefs restores the tool definitions a JSON round trip changed: a nil Parameters comes back
// as the JSON null, which an adapter would send as such.
func toolDefs(defs []provider.ToolDef) []provider.ToolDef {
	for i := range defs {
		if string(defs[i].Parameters) == "null" {
			defs[i].Parameters = nil
		}
	}
	return defs
}

// ArmOutcome is what the agent arming activity (AgentArmActivity) returns: the arming and the
// number of a batch's calls in flight at once, or the job's error, or Whole when the worker's
// agent verb cannot run in steps (the job then runs as one JobActivity).
type ArmOutcome struct {
	Arming      *Arming `json:",omitempty"`
	MaxParallel int     `json:",omitempty"`
	Err         *Error  `json:",omitempty"`
	Whole       bool    `json:",omitempty"`
}

// AskInput is one model request of an agent's loop (AgentAskActivity).
type AskInput struct {
	Job     JobInput
	Request provider.Request
	Schema  Value // Request.Schema
}

// AskOutcome is a model request's reply: exactly one of Response and Err.
type AskOutcome struct {
	Response *provider.Response `json:",omitempty"`
	Err      *Error             `json:",omitempty"`
}

func (o AskOutcome) reply() core.Reply { return core.Reply{Response: o.Response, Err: o.Err.spec()} }

// CallInput is one tool call of an agent's batch (AgentCallActivity).
type CallInput struct {
	Job  JobInput
	Call core.ToolCall
}

// CallOutcome is a tool call's result.
type CallOutcome struct {
	Content string    `json:",omitempty"`
	Spilled string    `json:",omitempty"`
	Err     *Error    `json:",omitempty"`
	Events  []Emitted `json:",omitempty"`
}

func (o CallOutcome) result() core.Result {
	r := core.Result{Content: o.Content, Spilled: o.Spilled, Err: o.Err.spec()}
	for _, e := range o.Events {
		r.Events = append(r.Events, core.Emitted{Kind: e.Kind, Fields: orEmpty(e.Fields.Map())})
	}
	return r
}

func callOutcome(r core.Result) CallOutcome {
	o := CallOutcome{Content: r.Content, Spilled: r.Spilled, Err: wireError(r.Err)}
	for _, e := range r.Events {
		o.Events = append(o.Events, Emitted{Kind: e.Kind, Fields: Value{e.Fields}})
	}
	return o
}
