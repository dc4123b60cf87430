// Package workflow holds the executable form of a checked workflow: the
// compiled expressions, jq programs and schemas the checker produced, the
// task graph and the canonical order. Compile never compiles anything again.
package workflow

import (
	"errors"
	"fmt"

	"github.com/nikahq/nika/dag"
	"github.com/nikahq/nika/spec"
)

// Workflow is a compiled workflow, ready for the planner.
type Workflow struct {
	Name    string
	Model   string
	Vars    []*spec.VarDecl
	Env     []*spec.EnvDecl
	Secrets []*spec.SecretDecl
	Permits *spec.Permits
	Outputs []*spec.OutputDecl
	Graph   *dag.Graph

	// Tasks in declaration order, and Order, the canonical order (by wave,
	// then declaration order) in which results are released.
	Tasks []*spec.Task
	Order []*spec.Task
	Waves [][]*spec.Task

	byID map[string]*spec.Task
}

// ErrInvalid is returned when the analysis has errors.
var ErrInvalid = errors.New("workflow: the file has static errors")

// Compile builds the executable Workflow from a valid analysis.
func Compile(a *spec.Analysis) (*Workflow, error) {
	if a == nil || !a.Valid() {
		return nil, ErrInvalid
	}
	w := &Workflow{
		Name: a.Name, Model: a.Model, Vars: a.Vars, Env: a.Env, Secrets: a.Secrets,
		Permits: a.Permits, Outputs: a.Outputs, Graph: a.Graph, Tasks: a.Tasks,
		byID: make(map[string]*spec.Task, len(a.Tasks)),
	}
	for _, t := range a.Tasks {
		w.byID[t.ID] = t
	}
	for _, id := range a.Graph.Order() {
		t, ok := w.byID[id]
		if !ok {
			return nil, fmt.Errorf("workflow: task %q of the graph has no definition", id)
		}
		w.Order = append(w.Order, t)
	}
	if len(w.Order) != len(w.Tasks) {
		return nil, fmt.Errorf("workflow: the graph orders %d of %d tasks", len(w.Order), len(w.Tasks))
	}
	for _, wave := range a.Graph.Waves() {
		ts := make([]*spec.Task, len(wave))
		for i, id := range wave {
			ts[i] = w.byID[id]
		}
		w.Waves = append(w.Waves, ts)
	}
	return w, nil
}

// Task returns the task with the given id, or nil.
func (w *Workflow) Task(id string) *spec.Task { return w.byID[id] }
