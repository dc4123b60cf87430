package engine

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Prepared is a run ready to execute: its inputs resolved, its masker, its id.
type Prepared struct {
	ID       string
	Workflow *workflow.Workflow
	Inputs   planner.Inputs
	// Mask replaces every secret value in a text (D24); sinks that write the canonical stream
	// and messages shown to people go through it.
	Mask func(string) string
}

// Stage says which input of a run could not be prepared, which decides how a caller reports
// it: `nika run` exits 2 for vars and 3 for the environment (secrets, providers).
type Stage int

const (
	StageVars      Stage = iota + 1 // a var is missing or of the wrong type (exit 2)
	StageSecrets                    // a secret cannot be read (exit 3)
	StageProviders                  // a task's provider is not available (exit 3)
)

// PrepareError is why a run could not be prepared. Err carries the code when there is one
// (vars and secrets); the providers stage's message is already masked.
type PrepareError struct {
	Stage Stage
	Err   *spec.Error // nil for StageProviders
	msg   string
}

func (e *PrepareError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("error[%s] %s", e.Err.Code, e.Err.Message)
	}
	return e.msg
}

// NewRunID returns a fresh run id, "r-" and a UUIDv7 (time-ordered).
func NewRunID() string { return "r-" + uuid.Must(uuid.NewV7()).String() }

// Prepare sets the models of w's var-named tasks and steps (workflow.ResolveModels): a compiled
// workflow serves one prepared run, as both commands compile one per run; a caller that reuses a
// compiled workflow (a resume, a durable worker) must compile it again or copy its tasks.
//
// Prepare resolves what w needs before it runs (LANGUAGE.md §10): the supplied vars (as
// `--var` texts, converted to their declared types) and the models named by a var, the secrets (from the environment or
// files under the run directory) and the masker over them, the env values, and makes sure every
// provider the tasks name is in the engine's set (building it, for an on-demand set). In that
// order: a bad var is reported before a missing key.
func (e *Engine) Prepare(w *workflow.Workflow, vars map[string]string) (*Prepared, *PrepareError) {
	values, verr := workflow.ResolveVars(w, vars)
	if verr == nil {
		verr = workflow.ResolveModels(w, values)
	}
	if verr != nil {
		return nil, &PrepareError{Stage: StageVars, Err: verr}
	}
	if allow := e.opts.AllowSecret; allow != nil {
		for _, sd := range w.Secrets {
			if err := allow(sd); err != nil {
				return nil, &PrepareError{Stage: StageSecrets, Err: err}
			}
		}
	}
	secrets, serr := workflow.ResolveSecrets(w, e.opts.RunDir, e.opts.Env)
	if serr != nil {
		return nil, &PrepareError{Stage: StageSecrets, Err: serr}
	}
	mask := workflow.NewMasker(secrets)
	for _, t := range w.Tasks {
		models := []string{t.Model}
		for _, step := range t.OnFinally {
			models = append(models, step.Model) // an on_finally step's key is checked before the run too
		}
		for _, m := range models {
			if m == "" {
				continue
			}
			if err := e.opts.Providers.ensure(m, e.opts.Env); err != nil {
				sep := ": "
				if !e.opts.Providers.onDemand {
					sep = ", but "
				}
				return nil, &PrepareError{Stage: StageProviders, msg: mask(fmt.Sprintf("task %q uses %s%s%v", t.ID, m, sep, err))}
			}
		}
	}
	env := make(map[string]any, len(w.Env))
	for _, ev := range w.Env {
		env[ev.Name] = ev.Value
	}
	return &Prepared{ID: NewRunID(), Workflow: w, Inputs: planner.Inputs{Vars: values, Env: env, Secrets: secrets}, Mask: mask}, nil
}

// TraceName is the file name of a run's trace under a trace directory:
// <UTC start, basic ISO 8601>-<run id>.ndjson, so that a directory listing is in start order.
func TraceName(start time.Time, runID string) string {
	return start.UTC().Format("20060102T150405Z") + "-" + runID + ".ndjson"
}

// DefaultTracePath is where `nika run` writes a run's trace without --trace.
func DefaultTracePath(start time.Time, runID string) string {
	return filepath.Join(".nika", "traces", TraceName(start, runID))
}

// EncodeReport is the canonical JSON of the run report (D22) of res, masked. A task output JSON
// cannot carry (NaN, ±Inf) is written as null, and warning says so; err is set only when even
// that fails.
func EncodeReport(res planner.Result, runID, workflowName string, seed uint64, mask func(string) string) (b []byte, warning string, err error) {
	rep := event.MaskReport(res.Report(runID, workflowName, seed), event.Masker(mask))
	b, err = canon.Marshal(rep)
	if err != nil {
		warning = fmt.Sprintf("the report holds a value JSON cannot carry (%v); writing it as null", err)
		b, err = canon.Marshal(canon.Finite(rep))
	}
	return b, warning, err
}

// EncodeOutputs is the canonical JSON of a run's outputs, masked.
func EncodeOutputs(res planner.Result, mask func(string) string) ([]byte, error) {
	return canon.Marshal(event.MaskValue(res.Outputs, event.Masker(mask)))
}
