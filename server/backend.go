package server

// Runs handed to another executor (`nika serve --temporal`, issue 16). Decisions where the issue
// is silent:
//   - Options.Backend, when set, runs every admitted run instead of the server's engine: the
//     submission is checked, compiled and prepared here as ever (the same 400s, the same run id,
//     the same queue and MaxRuns, which then bound the runs the server follows), and the
//     backend gets the workflow's text, its prepared inputs and the server's ceiling.
//   - The server follows each run: the canonical events the backend hands it are masked and
//     kept as an in-process run's (GET …/events, --trace-dir, the state directory's
//     events.ndjson), and its end's report is masked and kept. The backend keeps no journal in
//     the state directory (its own history is the run's durable record): a server started on
//     the same state directory again follows its unfinished runs again, from their first event.
//   - A run waiting on a nika:prompt waits in the backend, not paused in the server: GET shows it
//     "paused" with its questions while it has open ones (as an in-process paused run), POST
//     …/answers hands the answers to the backend, which checks them (400 with the reason), and
//     answers 202 {"run_id", "state": "running"}; 409 when the run waits on nothing.
//   - DELETE cancels the run in the backend (its started tasks still run on_finally) and the
//     server follows it to its cancelled end. A shutdown stops following its runs but does not
//     cancel them: they go on in the backend. There is no live stream (D19) of a backend's run.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Backend runs the server's runs elsewhere (Options.Backend); package server/temporalrun is the
// one on Temporal.
type Backend interface {
	// Execute runs one run to its end, handing events its canonical events (unmasked: the
	// server masks them) as the run releases them. cancel is closed when a client cancels the
	// run: the backend cancels it and goes on following it to its end. ctx ending stops the
	// following only (a shutdown): Execute returns ctx's error, and the run goes on.
	Execute(ctx context.Context, run BackendRun, cancel <-chan struct{}, events event.Sink) (BackendEnd, error)
	// Questions are the questions the run waits on, in the order they were asked.
	Questions(ctx context.Context, id string) ([]Question, error)
	// Answer hands answers (TASK or TASK[i] to the text, as `--answer TASK=VALUE`) to the run;
	// answers the run cannot take are an error wrapping ErrBadAnswer, and nothing is sent.
	Answer(ctx context.Context, id string, answers map[string]string) error
}

// ErrBadAnswer is wrapped by a Backend's errors for answers a run cannot take.
var ErrBadAnswer = errors.New("the answers do not fit the run's questions")

// BackendRun is a submission ready to run: checked under Ceiling, compiled and prepared.
type BackendRun struct {
	ID       string
	Name     string // the file name findings use
	Source   []byte
	Prepared *engine.Prepared // the resolved vars, env values and secrets, the masker
	Check    spec.CheckOptions
	Ceiling  *spec.Permits
	// MaxParallelTasks bounds the run's tasks in flight (0: unbounded).
	MaxParallelTasks int
	RunDir           string
}

// BackendEnd is how a run ended: its state and its run report (D22, canonical JSON, unmasked).
type BackendEnd struct {
	State  string
	Report json.RawMessage
}

// Question is a question a run waits on.
type Question struct {
	Task      string
	Iteration int // -1 outside for_each
	Mode      string
	Message   string
	Choices   []string
}

// executeRemote runs r on the backend; it returns the run's state and masked report.
func (s *Server) executeRemote(r *run, sinks event.Sink) (string, []byte, map[string]int) {
	br := BackendRun{ID: r.id, Name: r.name, Source: r.src, Prepared: r.p, Check: s.opts.Check, Ceiling: s.ceiling,
		MaxParallelTasks: s.opts.Engine.Limits.MaxParallelTasks, RunDir: s.opts.Engine.RunDir}
	end, err := s.opts.Backend.Execute(r.ctx, br, r.cancelReq, sinks)
	if err != nil {
		s.logf("run %s: error: %v", r.id, err)
		state := stateFailure
		if r.ctx.Err() != nil {
			state = stateCancelled
		}
		rep, _ := canon.Marshal(map[string]any{"run_id": r.id, "workflow": r.w.Name, "workflow_state": state,
			"tasks": map[string]any{}, "outputs": map[string]any{},
			"error": map[string]any{"message": "the run could not be followed to its end: " + r.mask(err.Error())}})
		return state, rep, map[string]int{}
	}
	v, err := workflow.DecodeValue(string(end.Report))
	rep, _ := v.(map[string]any)
	if err != nil || rep == nil {
		rep = map[string]any{"run_id": r.id, "workflow": r.w.Name, "workflow_state": end.State, "tasks": map[string]any{}, "outputs": map[string]any{}}
	}
	b, err := canon.Marshal(canon.Finite(event.MaskReport(rep, event.Masker(r.mask))))
	if err != nil {
		b = []byte(`{}`)
	}
	counts := map[string]int{}
	if tasks, ok := rep["tasks"].(map[string]any); ok {
		for _, t := range tasks {
			if m, ok := t.(map[string]any); ok {
				st, _ := m["status"].(string)
				counts[st]++
			}
		}
	}
	return end.State, b, counts
}

// remoteQuestions are the open questions of a running run of the backend (nil on any error).
func (s *Server) remoteQuestions(ctx context.Context, r *run) []map[string]any {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qs, err := s.opts.Backend.Questions(ctx, r.id)
	if err != nil || len(qs) == 0 {
		return nil
	}
	out := make([]map[string]any, len(qs))
	for i, q := range qs {
		m := map[string]any{"task": q.Task, "mode": q.Mode, "message": r.mask(q.Message)}
		if q.Iteration >= 0 {
			m["iteration"] = q.Iteration
		}
		if len(q.Choices) > 0 {
			m["choices"] = q.Choices
		}
		out[i] = m
	}
	return out
}

// handleRemoteAnswers is POST /v1/runs/{id}/answers of a run of the backend.
func (s *Server) handleRemoteAnswers(w http.ResponseWriter, req *http.Request, r *run, texts map[string]string) {
	s.mu.Lock()
	state := r.state
	s.mu.Unlock()
	notWaiting := func(st string) {
		writeJSON(w, http.StatusConflict, map[string]any{"run_id": r.id, "state": st,
			"error": map[string]any{"message": "the run is not paused; only a paused run takes answers"}})
	}
	if state != stateRunning {
		notWaiting(state)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	if qs, err := s.opts.Backend.Questions(ctx, r.id); err != nil || len(qs) == 0 {
		if err != nil {
			s.logf("run %s: error: its questions cannot be read: %v", r.id, err)
		}
		notWaiting(state)
		return
	}
	if err := s.opts.Backend.Answer(ctx, r.id, texts); err != nil {
		if errors.Is(err, ErrBadAnswer) {
			writeError(w, http.StatusBadRequest, r.mask(err.Error()))
			return
		}
		writeError(w, http.StatusBadGateway, "the answers could not be handed to the run: "+r.mask(err.Error()))
		return
	}
	s.logf("run %s: answered", r.id)
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": r.id, "state": stateRunning})
}
