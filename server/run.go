package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// Run states (issue 7).
const (
	stateQueued    = "queued"
	stateRunning   = "running"
	stateSuccess   = "success"
	stateFailure   = "failure"
	stateCancelled = "cancelled"
)

// run is one submitted workflow. Its state, report and cancel are guarded
// by the Server's mu; its event log has its own lock (it is written on the
// planner's settlement path).
type run struct {
	id   string
	w    *workflow.Workflow
	p    *engine.Prepared
	mask func(string) string

	ctx    context.Context
	cancel context.CancelFunc
	// cancelReq is closed when a client cancels the run (a backend's run: Options.Backend).
	cancelReq chan struct{}

	state  string
	report []byte // canonical JSON of the D22 report, once finished
	// traceErr says why the run's --trace-dir file is missing or incomplete, once finished;
	// "" when it is complete or there is none.
	traceErr string
	size     int64 // bytes of events and report, once finished

	log  eventLog
	live *liveLog // the web view's live observations and task states

	queuedAt time.Time // when it entered the queue (zero if it started at once)

	// Durability (durable.go): the submission as stored, the journal it resumes and the answers
	// it resumes with (nil for a new run), the questions it waits on while paused, and whether a
	// client (not a shutdown) cancelled it.
	name            string
	src             []byte
	vars            map[string]string
	resume          *journal.Log
	answers         map[string]any
	questions       []journal.PausedRecord
	clientCancelled bool

	// For the runs page, guarded by the Server's mu: the order of admission (newest first), when
	// it was submitted, started and ended (zero until then), and, once finished, its task counts
	// by state from the report.
	seq                       int64
	submitted, started, ended time.Time
	counts                    map[string]int
}

// prepared is a submission that passed every check and is ready to queue.
type prepared struct {
	p       *engine.Prepared
	refusal *refusal // non-nil: refuse the submission
}

// refusal is a 400 that is not a check report.
type refusal struct {
	status int
	err    *spec.Error
	text   string // when err is nil
}

// prepare does what `nika run` does before executing (engine.Prepare: vars, then secrets under
// the server's rule, allowSecret, then providers). The permits ceiling was applied by the check.
func (s *Server) prepare(w *workflow.Workflow, supplied map[string]string) prepared {
	p, perr := s.engine.Prepare(w, supplied)
	if perr != nil {
		if perr.Err != nil {
			return prepared{refusal: &refusal{status: 400, err: perr.Err}}
		}
		return prepared{refusal: &refusal{status: 400, text: perr.Error()}}
	}
	return prepared{p: p}
}

// allowSecret is the server's rule on secrets (engine.Options.AllowSecret): env secrets only
// from the --secret-env names, file secrets never.
func (s *Server) allowSecret(sd *spec.SecretDecl) *spec.Error {
	switch {
	case sd.Source == "file":
		return spec.NewError(spec.CodeSecPermits,
			fmt.Sprintf("secret %q reads a file, which nika serve does not allow; pass it as an env secret whose variable the server lists with --secret-env", sd.Name),
			map[string]any{"secret": sd.Name, "gate": "secrets"})
	case sd.Source == "env" && !s.secrets[sd.Key]:
		return spec.NewError(spec.CodeSecPermits,
			fmt.Sprintf("secret %q reads environment variable %s, which this server does not allow; start nika serve with --secret-env %s", sd.Name, sd.Key, sd.Key),
			map[string]any{"secret": sd.Name, "variable": sd.Key, "gate": "secrets"})
	}
	return nil
}

// admission is the verdict on a prepared run.
type admission int

const (
	admitted admission = iota
	queueFull
	draining
)

// newRun is the run of a prepared workflow, not admitted yet.
func (s *Server) newRun(p *engine.Prepared) *run {
	r := &run{id: p.ID, w: p.Workflow, p: p, mask: p.Mask, submitted: s.opts.Clock()}
	r.log.wake = make(chan struct{})
	r.live = newLiveLog(r.mask, s.changes.poke)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.cancelReq = make(chan struct{})
	return r
}

// admitRun registers a run: it starts at once when a slot is free, else it waits in the queue,
// else it is refused. A run of an id the server has (a paused run answered) takes its place.
func (s *Server) admitRun(r *run) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.seq == 0 {
		s.admitted++
		r.seq = s.admitted
	}
	defer s.changes.poke()
	switch {
	case s.draining:
		r.cancel()
		return draining
	case s.running < s.opts.MaxRuns:
		s.runs[r.id] = r
		s.logf("run %s (workflow %s) accepted", r.id, r.w.Name) // before its start line
		s.startLocked(r)
	case len(s.queue) < s.opts.QueueSize:
		s.runs[r.id] = r
		r.state, r.queuedAt = stateQueued, s.opts.Clock()
		s.queue = append(s.queue, r)
		s.logf("run %s (workflow %s) accepted and queued (%d waiting)", r.id, r.w.Name, len(s.queue))
	default:
		r.cancel()
		return queueFull
	}
	return admitted
}

// startLocked starts r in its own goroutine; s.mu is held.
func (s *Server) startLocked(r *run) {
	r.state, r.started = stateRunning, s.opts.Clock()
	s.running++
	s.wg.Add(1)
	go s.execute(r)
}

// relativeToTraceDir names files under --trace-dir relative to it in a message a client sees
// (GET /v1/runs/{id}): the server log keeps the absolute path, an API body never shows one.
func (s *Server) relativeToTraceDir(msg string) string {
	if msg == "" || s.opts.TraceDir == "" {
		return msg
	}
	dir := filepath.Clean(s.opts.TraceDir)
	if abs, err := filepath.Abs(dir); err == nil {
		msg = strings.ReplaceAll(msg, abs+string(filepath.Separator), "")
	}
	return strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
}

// execute runs r to the end, records its report, and starts the next
// queued run.
func (s *Server) execute(r *run) {
	defer s.wg.Done()
	s.logf("run %s (workflow %s) started", r.id, r.w.Name)
	sinks := event.Fanout{event.NewNDJSON(&r.log).WithMasker(event.Masker(r.mask)), r.live}
	var trace *event.File
	var traceErr string
	if s.opts.TraceDir != "" {
		name := engine.TraceName(s.opts.Clock(), r.id)
		f, err := event.CreateFile(filepath.Join(s.opts.TraceDir, name))
		if err != nil {
			traceErr = "no trace file: " + err.Error()
			s.logf("run %s: error: %s", r.id, traceErr)
		} else {
			trace = f
			sinks = append(sinks, f.WithMasker(event.Masker(r.mask)))
		}
	}
	live := event.LiveSink(r.live)
	if s.opts.Live != nil {
		live = event.LiveFanout{s.opts.Live, r.live}
	}
	events := s.eventsSink(r)
	if events != nil {
		sinks = append(sinks, events.WithMasker(event.Masker(r.mask)))
	}
	var state string
	var report []byte
	var counts map[string]int
	var paused []planner.Paused
	if s.opts.Backend != nil {
		state, report, counts = s.executeRemote(r, sinks)
	} else {
		res := s.executeLocal(r, sinks, live)
		state, report, counts, paused = string(res.State), s.encodeReport(r, res), resultCounts(res), res.Paused
	}
	if events != nil {
		if err := events.Close(); err != nil {
			s.logf("run %s: error: %v", r.id, err)
		}
	}
	if trace != nil {
		if err := trace.Close(); err != nil {
			traceErr = err.Error()
			s.logf("run %s: error: %s", r.id, traceErr)
		}
	}
	r.cancel()
	isPaused := state == statePaused
	if !isPaused {
		s.finishStored(r, state, report)
	}
	s.mu.Lock()
	r.state, r.report, r.traceErr = state, report, s.relativeToTraceDir(traceErr)
	r.ended, r.counts = s.opts.Clock(), counts
	s.running--
	if isPaused {
		r.questions = questionsOf(paused)
	} else {
		s.retireLocked(r)
	}
	for len(s.queue) > 0 && s.running < s.opts.MaxRuns {
		next := s.queue[0]
		s.queue = s.queue[1:]
		s.startLocked(next)
	}
	s.mu.Unlock()
	r.log.close()
	r.live.close()
	s.changes.poke()
	s.logf("run %s (workflow %s) finished: %s", r.id, r.w.Name, state)
}

// executeLocal runs r in-process on the server's engine, with its journal.
func (s *Server) executeLocal(r *run, sinks event.Sink, live event.LiveSink) planner.Result {
	jr, err := s.openJournal(r)
	if err != nil { // the run still runs, without being durable
		s.logf("run %s: error: no journal: %v", r.id, err)
		jr = nil
	}
	res := s.engine.Execute(r.ctx, r.p, engine.RunOptions{Canonical: sinks, Live: live, Finally: s.finally, Journal: jr})
	if jr != nil {
		if err := jr.Close(); err != nil {
			s.logf("run %s: error: %v", r.id, err)
		}
	}
	return res
}

// finishUnstarted ends a queued run that never started: cancelled, every
// task cancelled with a null error (D22), no events. s.mu is held and r is
// already out of the queue.
func (s *Server) finishUnstarted(r *run) {
	res := planner.Result{State: stateCancelled, Outputs: map[string]any{}}
	for _, t := range r.w.Tasks {
		res.Tasks = append(res.Tasks, planner.TaskResult{ID: t.ID, Status: stateCancelled})
	}
	r.cancel()
	r.state, r.report = stateCancelled, s.encodeReport(r, res)
	r.ended, r.counts = s.opts.Clock(), resultCounts(res)
	s.retireLocked(r)
	r.log.close()
	r.live.close()
	s.changes.poke()
	if s.opts.Live != nil { // the metrics count it like any other run that ended cancelled, its time queued as its duration
		now := s.opts.Clock()
		s.opts.Live.Observe(event.Live{Kind: event.LiveWorkflowStarted, Workflow: r.w.Name, At: now})
		s.opts.Live.Observe(event.Live{Kind: event.LiveWorkflowFinished, Workflow: r.w.Name, Status: stateCancelled,
			Elapsed: now.Sub(r.queuedAt), At: now})
	}
}

// retireLocked records r as finished and forgets the oldest finished runs
// beyond KeepRuns or KeepBytes (r itself stays). s.mu is held, and r's
// event log has its last line.
func (s *Server) retireLocked(r *run) {
	r.size = r.log.bytes() + int64(len(r.report)) + r.live.bytes()
	s.retained += r.size
	s.finished = append(s.finished, r.id)
	for len(s.finished) > s.opts.KeepRuns || s.retained > s.opts.KeepBytes && len(s.finished) > 1 {
		s.retained -= s.runs[s.finished[0]].size
		delete(s.runs, s.finished[0])
		s.finished[0] = ""
		s.finished = s.finished[1:]
	}
}

// resultCounts counts a finished run's tasks by status, for the runs page.
func resultCounts(res planner.Result) map[string]int {
	c := map[string]int{}
	for _, t := range res.Tasks {
		c[string(t.Status)]++
	}
	return c
}

// encodeReport is the masked canonical JSON of the D22 report.
func (s *Server) encodeReport(r *run, res planner.Result) []byte {
	b, warning, err := engine.EncodeReport(res, r.id, r.w.Name, 0, r.mask)
	if warning != "" {
		s.logf("run %s: %s", r.id, warning)
	}
	if err != nil {
		b, _ = canon.Marshal(map[string]any{"run_id": r.id, "workflow": r.w.Name, "workflow_state": string(res.State),
			"error": map[string]any{"message": "the report cannot be encoded: " + err.Error()}})
	}
	return b
}

// eventLog keeps a run's canonical stream as NDJSON lines for its
// followers. The NDJSON sink writes one whole line per Write.
type eventLog struct {
	mu    sync.Mutex
	lines [][]byte
	size  int64 // bytes of lines
	done  bool
	wake  chan struct{} // closed and replaced at every change
}

// Write implements io.Writer for event.NDJSON.
func (l *eventLog) Write(p []byte) (int, error) {
	line := append([]byte(nil), p...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.size += int64(len(line))
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	return len(p), nil
}

func (l *eventLog) bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

func (l *eventLog) close() {
	l.mu.Lock()
	if !l.done {
		l.done = true
		close(l.wake)
	}
	l.mu.Unlock()
}

// since returns the lines from index i on, whether the log is complete,
// and a channel closed at the next change.
func (l *eventLog) since(i int) (lines [][]byte, done bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i = min(i, len(l.lines)) // a resuming client may name more than there is
	return l.lines[i:], l.done, l.wake
}

// varTexts turns the JSON vars of a submission into `--var` texts: a
// string as it is, anything else as its compact JSON text, which the var's
// declared type then converts (numbers, booleans, arrays, objects).
func varTexts(vars map[string]json.RawMessage) (map[string]string, error) {
	out := make(map[string]string, len(vars))
	for k, raw := range vars {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out[k] = s
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, fmt.Errorf("var %q: %w", k, err)
		}
		out[k] = b.String()
	}
	return out, nil
}
