package server

// Durable runs in nika serve (issue 15). Decisions where the issue is silent:
//   - Every run keeps a journal in the state directory (Options.StateDir, `--state-dir`; without
//     one a private temporary directory, removed when the server stops): <state>/runs/<run-id>/
//     holds request.json (the submission: its name, workflow text and vars), journal.ndjson,
//     events.ndjson (the masked canonical stream of the run's last process) and, once it has
//     finished, report.json; files 0600 in 0700 directories (the journal may hold secrets).
//   - A run whose prompt nobody can answer pauses: its slot goes to the next queued run, its
//     state is "paused", and GET /v1/runs/{id} lists its questions ({task, iteration?, mode,
//     message, choices?}) beside the report so far. POST /v1/runs/{id}/answers with
//     {"answers": {"TASK": "VALUE", "TASK[i]": …}} checks them against the questions (400 with
//     the reason), and runs it again under its id from its journal (202, queued like a
//     submission); 409 when the run is not paused. DELETE cancels a paused run: its unfinished
//     tasks are cancelled.
//   - A server started on a state directory takes up what it holds, in submission order:
//     finished runs answer GET (report, events) as before, paused runs stay paused, and every
//     other run (running or queued when the process died, or cancelled by a shutdown's deadline
//     rather than by a client) is checked again under the current ceiling and resumed from its
//     journal. A run that no longer passes the check is failed with the findings in the log.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

const (
	statePaused = "paused"

	requestFile = "request.json"
	reportFile  = "report.json"
	eventsFile  = "events.ndjson"
)

// storedRun is a run's request.json.
type storedRun struct {
	Name      string            `json:"name"`
	Workflow  string            `json:"workflow"`
	Vars      map[string]string `json:"vars"`
	Submitted time.Time         `json:"submitted"`
}

// openState makes the state directory (a private temporary one when dir is ""); it reports
// whether it is the server's own, to remove when it stops.
func openState(dir string) (string, bool, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "nika-serve-state-")
		return d, true, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
		return "", false, err
	}
	return dir, false, os.Chmod(filepath.Join(dir, "runs"), 0o700)
}

func (s *Server) runDir(id string) string { return filepath.Join(s.state, "runs", id) }

// persist writes a submission's request.json before the run is admitted.
func (s *Server) persist(id string, st storedRun) error {
	dir := s.runDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, requestFile), b)
}

// writeAtomic writes a file of the state directory whole or not at all.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// openJournal starts the run's journal in its directory, or goes on with the one it resumes.
func (s *Server) openJournal(r *run) (*journal.Run, error) {
	h := journal.Header{Source: r.src, Vars: r.vars, Time: s.opts.Clock()}
	if r.resume != nil {
		return s.engine.ResumeJournal(r.p, r.resume, h, r.answers)
	}
	return s.engine.CreateJournal(s.runDir(r.id), r.p, h)
}

// questionsOf is what GET shows of a paused run's questions.
func questionsOf(ps []planner.Paused) []journal.PausedRecord {
	out := make([]journal.PausedRecord, len(ps))
	for i, p := range ps {
		out[i] = journal.PausedRecord{Task: p.Task, Attempt: p.Attempt, Question: p.Question}
		if p.Iteration >= 0 {
			it := p.Iteration
			out[i].Iteration = &it
		}
	}
	return out
}

func questionsJSON(qs []journal.PausedRecord) []map[string]any {
	out := make([]map[string]any, len(qs))
	for i, q := range qs {
		m := map[string]any{"task": q.Task, "mode": q.Question.Mode, "message": q.Question.Message}
		if q.Iteration != nil {
			m["iteration"] = *q.Iteration
		}
		if len(q.Question.Choices) > 0 {
			m["choices"] = q.Question.Choices
		}
		out[i] = m
	}
	return out
}

// handleAnswers is POST /v1/runs/{id}/answers: the answers to a paused run's questions.
func (s *Server) handleAnswers(w http.ResponseWriter, req *http.Request) {
	r := s.lookup(w, req)
	if r == nil {
		return
	}
	var body struct {
		Answers map[string]json.RawMessage `json:"answers"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, s.opts.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Answers) == 0 {
		writeError(w, http.StatusBadRequest, `the body must be {"answers": {"TASK": "VALUE", …}} with at least one answer`)
		return
	}
	texts, err := varTexts(body.Answers)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.opts.Backend != nil {
		s.handleRemoteAnswers(w, req, r, texts)
		return
	}
	s.mu.Lock()
	state := r.state
	if state == statePaused && !s.draining {
		r.state = stateQueued // claimed: a second answer waits for this one's verdict
	}
	s.mu.Unlock()
	if state != statePaused || s.Draining() {
		writeJSON(w, http.StatusConflict, map[string]any{"run_id": r.id, "state": state,
			"error": map[string]any{"message": "the run is not paused; only a paused run takes answers"}})
		return
	}
	unclaim := func() {
		s.mu.Lock()
		r.state = statePaused
		s.mu.Unlock()
	}
	l, err := journal.ReadFile(filepath.Join(s.runDir(r.id), journal.FileName))
	if err != nil {
		unclaim()
		writeError(w, http.StatusInternalServerError, "the run's journal cannot be read: "+err.Error())
		return
	}
	answers, err := engine.ParseAnswers(l, texts)
	if err != nil {
		unclaim()
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	nr, ref := s.resumed(r.id, r.name, r.src, r.vars, l, answers)
	if ref != nil {
		unclaim()
		writeRefusal(w, ref)
		return
	}
	nr.seq, nr.submitted = r.seq, r.submitted
	switch s.admitRun(nr) {
	case admitted:
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": r.id, "state": nr.state})
	default:
		unclaim()
		w.Header().Set("Retry-After", fmt.Sprint(queueFullRetryAfter))
		writeError(w, http.StatusTooManyRequests, "the queue is full; answer again later")
	}
}

// resumed prepares a stored run again under its id (its check under the current ceiling, its
// inputs), to run from its journal l (nil: from the start) with answers.
func (s *Server) resumed(id, name string, src []byte, vars map[string]string, l *journal.Log, answers map[string]any) (*run, *refusal) {
	result, a := s.check(name, src)
	if !result.Valid() {
		var buf bytes.Buffer
		for _, f := range result.Findings {
			fmt.Fprintln(&buf, f.Message)
		}
		return nil, &refusal{status: http.StatusBadRequest, text: "the workflow no longer passes the check: " + buf.String()}
	}
	wf, err := workflow.Compile(a)
	if err != nil {
		return nil, &refusal{status: http.StatusBadRequest, text: err.Error()}
	}
	p := s.prepare(wf, vars)
	if p.refusal != nil {
		return nil, p.refusal
	}
	p.p.ID = id
	r := s.newRun(p.p)
	r.name, r.src, r.vars, r.resume, r.answers = name, src, vars, l, answers
	return r, nil
}

// recover takes up the runs of the state directory (see the decisions above).
func (s *Server) recover() error {
	entries, err := os.ReadDir(filepath.Join(s.state, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() }) // run ids are time-ordered
	for _, e := range entries {
		if e.IsDir() {
			s.recoverRun(e.Name())
		}
	}
	return nil
}

func (s *Server) recoverRun(id string) {
	dir := s.runDir(id)
	var st storedRun
	b, err := os.ReadFile(filepath.Join(dir, requestFile))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		s.logf("run %s: not taken up: its %s cannot be read: %v", id, requestFile, err)
		return
	}
	if rep, err := os.ReadFile(filepath.Join(dir, reportFile)); err == nil {
		s.restoreFinished(id, st, rep)
		return
	}
	var l *journal.Log
	if _, err := os.Stat(filepath.Join(dir, journal.FileName)); err == nil {
		if l, err = journal.ReadFile(filepath.Join(dir, journal.FileName)); err != nil {
			s.logf("run %s: not taken up: %v", id, err)
			return
		}
	}
	r, ref := s.resumed(id, st.Name, []byte(st.Workflow), st.Vars, l, nil)
	if ref != nil {
		s.logf("run %s: not taken up: %s", id, ref.text+errText(ref))
		return
	}
	r.submitted = st.Submitted
	if l != nil {
		if state, _ := l.State(); state == statePaused {
			r.state, r.questions = statePaused, l.Questions()
			r.cancel()
			s.mu.Lock()
			s.admitted++
			r.seq = s.admitted
			s.runs[id] = r
			s.mu.Unlock()
			r.log.close()
			r.live.close()
			s.logf("run %s (workflow %s) taken up: paused", id, r.w.Name)
			return
		}
	}
	if s.admitRun(r) != admitted {
		s.logf("run %s: not taken up: the queue is full", id)
		return
	}
	s.logf("run %s (workflow %s) taken up: resumed from its journal", id, r.w.Name)
}

func errText(r *refusal) string {
	if r.err != nil {
		return r.err.Error()
	}
	return ""
}

// restoreFinished registers a finished run of the state directory: its report and events.
func (s *Server) restoreFinished(id string, st storedRun, rep []byte) {
	var head struct {
		State    string `json:"workflow_state"`
		Workflow string `json:"workflow"`
	}
	json.Unmarshal(rep, &head)
	r := &run{id: id, state: head.State, report: rep, name: st.Name, src: []byte(st.Workflow), vars: st.Vars, submitted: st.Submitted}
	r.w = &workflow.Workflow{Name: head.Workflow}
	if _, a := s.check(st.Name, []byte(st.Workflow)); a != nil {
		if wf, err := workflow.Compile(a); err == nil {
			r.w = wf
		}
	}
	r.mask = func(s string) string { return s } // the stored events and report are masked already
	r.log.wake = make(chan struct{})
	if f, err := os.Open(filepath.Join(s.runDir(id), eventsFile)); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			r.log.Write(append(sc.Bytes(), '\n'))
		}
		f.Close()
	}
	r.log.close()
	r.live = newLiveLog(r.mask, s.changes.poke)
	r.live.close()
	s.mu.Lock()
	s.admitted++
	r.seq = s.admitted
	s.runs[id] = r
	s.retireLocked(r)
	s.mu.Unlock()
}

// cancelPausedLocked ends a paused run a client cancelled: its tasks that had not finished are
// cancelled in its report (those that had keep their status), which is stored. s.mu is held.
func (s *Server) cancelPausedLocked(r *run) {
	var rep map[string]any
	if json.Unmarshal(r.report, &rep) != nil || rep == nil {
		rep = map[string]any{"run_id": r.id, "workflow": r.w.Name, "tasks": map[string]any{}, "outputs": map[string]any{}}
	}
	rep["workflow_state"] = stateCancelled
	if tasks, ok := rep["tasks"].(map[string]any); ok {
		for _, t := range tasks {
			if e, ok := t.(map[string]any); ok && (e["status"] == statePaused || e["status"] == string(planner.StatusPending)) {
				e["status"] = stateCancelled
			}
		}
	}
	b, _ := canon.Marshal(rep)
	r.state, r.report, r.questions, r.clientCancelled = stateCancelled, b, nil, true
	r.ended = s.opts.Clock()
	if err := writeAtomic(filepath.Join(s.runDir(r.id), reportFile), b); err != nil {
		s.logf("run %s: error: its report could not be stored: %v", r.id, err)
	}
	s.retireLocked(r)
	s.changes.poke()
}

// finishStored writes a finished run's report to its directory; a run a shutdown interrupted
// (not a client) keeps none, so that the next server resumes it.
func (s *Server) finishStored(r *run, state string, report []byte) {
	if state == stateCancelled && !r.clientCancelled && s.Draining() && !s.ownState {
		return
	}
	if err := writeAtomic(filepath.Join(s.runDir(r.id), reportFile), report); err != nil {
		s.logf("run %s: error: its report could not be stored: %v", r.id, err)
	}
}

// eventsSink is the run's events.ndjson, or nil when it cannot be created (logged).
func (s *Server) eventsSink(r *run) *event.File {
	path := filepath.Join(s.runDir(r.id), eventsFile)
	f, err := event.CreateFile(path)
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		s.logf("run %s: error: its events cannot be stored: %v", r.id, err)
		if f != nil {
			f.Close()
		}
		return nil
	}
	return f
}

var _ io.Writer = (*eventLog)(nil)
