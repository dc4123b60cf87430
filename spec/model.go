package spec

import (
	"time"

	"github.com/nikahq/nika/dag"
	"github.com/nikahq/nika/spec/expr"
	"github.com/nikahq/nika/spec/jq"
	"github.com/nikahq/nika/spec/schema"
)

// Analysis is what the checker learned about a file: its findings and, for
// the parts that passed, the typed model with every expression, jq program
// and schema already compiled. workflow.Compile turns a valid Analysis into
// an executable Workflow without compiling anything again.
type Analysis struct {
	File     *File
	Findings []Finding // sorted; errors and warnings

	Name        string
	Description string
	Model       string // envelope model
	ModelVar    string // the var the envelope model comes from (`${{ vars.NAME }}`); Model is then ""
	Vars        []*VarDecl
	Env         []*EnvDecl
	Secrets     []*SecretDecl
	Permits     *Permits // nil when absent
	Tasks       []*Task
	Outputs     []*OutputDecl
	Graph       *dag.Graph
}

// Valid reports whether the analysis has no error findings.
func (a *Analysis) Valid() bool { return !HasErrors(a.Findings) }

// Task returns the task with the given id, or nil.
func (a *Analysis) Task(id string) *Task {
	for _, t := range a.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// VarDecl is one declared input.
type VarDecl struct {
	Name       string
	Type       string // string, number, integer, boolean, array, object; "" when untyped with a null default
	Typed      bool   // written in typed form
	Required   bool
	Default    any
	HasDefault bool
	Node       *Node
}

// EnvDecl is one env constant.
type EnvDecl struct {
	Name  string
	Value any
}

// SecretDecl is one secret reference.
type SecretDecl struct {
	Name   string
	Source string // env | file
	Key    string
	Path   string
}

// Permits is the capability boundary; nil fields mean "denied" once Permits exists.
type Permits struct {
	FSRead, FSWrite []string
	NetHTTP         []string
	Exec            bool     // true: both forms allowed
	ExecList        []string // when non-nil: only argv form with argv[0] in the list
	Tools           []string
	ToolsSet        bool
}

// OutputDecl is one entry of the envelope's outputs.
type OutputDecl struct {
	Name  string
	Type  string // "" when untyped
	Value Value
}

// Task is one checked task.
type Task struct {
	ID        string
	Index     int
	Node      *Node
	DependsOn []string
	Verb      string // infer, exec, invoke, agent
	Body      Value  // the verb body: literal values with templates inside
	// Model is the resolved model id for infer/agent; "" while ModelVar names the var it comes
	// from (`model: ${{ vars.NAME }}`), until the run resolves it (workflow.ResolveModels).
	Model    string
	ModelVar string
	// Tool is invoke's tool name.
	Tool string

	When        Value // nil: default gate; bool or *Template
	ForEach     Value // nil when absent; []any (templates inside) or *Template
	MaxParallel int   // 0: unbounded
	FailFast    bool
	Retry       *Retry
	Timeout     time.Duration
	OnError     *OnError
	OnFinally   []*FinallyItem
	With        []NamedValue
	Bindings    []*Binding
	Schema      *schema.Schema // infer/agent schema
	SchemaDoc   any
}

// NamedValue is one with: entry, in file order.
type NamedValue struct {
	Name  string
	Value Value
}

// Retry is a task's retry policy.
type Retry struct {
	MaxAttempts  int
	BackoffMS    int
	Strategy     string
	BackoffMaxMS int
	Jitter       bool
	OnCodes      []string
}

// OnError is a task's error handler.
type OnError struct {
	Recover      Value
	HasRecover   bool
	Skip         bool
	FailWorkflow bool
	OnCodes      []string
}

// FinallyItem is one on_finally step.
type FinallyItem struct {
	Verb    string
	Body    Value
	When    Value
	Timeout time.Duration
	Tool    string
	// Model is an infer or agent step's model, resolved as a task's is (§6.1: the step's own,
	// then --model, then the envelope's); ModelVar names the envelope's var instead, until the
	// run resolves it (workflow.ResolveModels).
	Model, ModelVar string
}

// Binding is one output: jq binding.
type Binding struct {
	Name    string
	Source  string
	Program *jq.Program
}

// Value is a literal value of the nika value model in which every string
// that holds a placeholder has been replaced by its compiled *Template.
type Value = any

// Template is a string scalar with placeholders, compiled.
type Template struct {
	Source string
	Parts  []TemplatePart
	Node   *Node
	Path   string
}

// TemplatePart is a literal run or one compiled expression.
type TemplatePart struct {
	Text    string
	Program *expr.Program // nil for a literal run
}

// Whole reports whether the template is exactly one placeholder, so its value
// keeps its type (LANGUAGE.md §4.7).
func (t *Template) Whole() bool { return len(t.Parts) == 1 && t.Parts[0].Program != nil }
