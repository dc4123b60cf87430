package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// queueFullRetryAfter is the Retry-After, in seconds, of a 429 "queue is full": a slot frees only when
// a run ends, which takes seconds for anything that calls a model, so a client waiting this long
// neither misses a freed slot by much nor makes the server re-check its workflow many times a second
// (a submission is fully checked before it is queued or refused).
const queueFullRetryAfter = 5

// submittedName is the file name findings carry for an inline workflow: a
// .nika.yaml name, so the file-extension lint stays quiet (D47).
const submittedName = "submitted.nika.yaml"

// Handler returns the HTTP API and the web view (see the package doc).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs", s.handleSubmit)
	mux.HandleFunc("GET /v1/runs/{id}", s.handleGet)
	mux.HandleFunc("DELETE /v1/runs/{id}", s.handleCancel)
	mux.HandleFunc("GET /v1/runs/{id}/events", s.handleEvents)
	mux.HandleFunc("POST /v1/runs/{id}/answers", s.handleAnswers)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Metrics == nil {
			writeError(w, http.StatusNotFound, "this server has no metrics handler")
			return
		}
		s.opts.Metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.Draining() {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "shutting down\n")
			return
		}
		io.WriteString(w, "ready\n")
	})
	s.webRoutes(mux)
	// A browser on this machine is not a local client: cross-origin
	// requests that change state (a page's form or no-cors fetch) are 403.
	csrf := http.NewCrossOriginProtection()
	if s.opts.AuthToken == "" {
		// Trusting loopback (D35) means trusting the Host too: a page that
		// reached 127.0.0.1 through DNS rebinding names its own domain.
		return csrf.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !loopbackHost(r.Host) {
				writeError(w, http.StatusForbidden, "without --auth-token this server answers only requests addressed to a loopback host (127.0.0.1, [::1] or localhost)")
				return
			}
			if webPath(r.URL.Path) && !s.webGate(w, r) {
				return
			}
			mux.ServeHTTP(w, r)
		}))
	}
	return csrf.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if webPath(r.URL.Path) { // the pages sign in with a session cookie; the API keeps the bearer header
			if s.webGate(w, r) {
				mux.ServeHTTP(w, r)
			}
			return
		}
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nika"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <the server's --auth-token>")
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// loopbackHost reports whether a request's Host names a loopback address
// (with or without a port).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return IsLoopback(net.JoinHostPort(host, "0"))
}

func digest(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// authorized compares the bearer token in constant time; hashing first
// makes the comparison independent of the length too. The scheme name is
// case-insensitive (RFC 9110 §11.1): `bearer TOKEN` and `BEARER TOKEN` count.
func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	d := digest(strings.TrimSpace(tok))
	return subtle.ConstantTimeCompare(d[:], s.token[:]) == 1
}

// submission is the body of POST /v1/runs.
type submission struct {
	Workflow *string                    `json:"workflow"`
	Path     *string                    `json:"path"`
	Vars     map[string]json.RawMessage `json:"vars"`
}

func (s *Server) handleSubmit(w http.ResponseWriter, req *http.Request) {
	if s.Draining() {
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down; submit the run elsewhere or later")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes; shorten the workflow or raise --max-body", s.opts.MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	var sub submission
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sub); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be one JSON object {"workflow": "<YAML text>" or "path": "<file under --workflows>", "vars": {…}}: `+err.Error())
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "the body must hold exactly one JSON object")
		return
	}
	var name string
	var src []byte
	switch {
	case (sub.Workflow == nil) == (sub.Path == nil):
		writeError(w, http.StatusBadRequest, `give exactly one of "workflow" (the YAML text) and "path" (a file under the server's --workflows directory)`)
		return
	case sub.Workflow != nil:
		name, src = submittedName, []byte(*sub.Workflow)
	default:
		name = *sub.Path
		if src, err = s.readWorkflow(name); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	vars, err := varTexts(sub.Vars)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res := s.submit(name, src, vars)
	switch {
	case res.findings != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		spec.WriteJSON(w, []spec.FileResult{*res.findings})
	case res.refusal != nil:
		if res.refusal.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(queueFullRetryAfter))
		}
		writeRefusal(w, res.refusal)
	default:
		w.Header().Set("Location", "/v1/runs/"+res.id)
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": res.id})
	}
}

// submitted is the verdict on a submission: its run id, or the checker's findings, or another
// refusal.
type submitted struct {
	id       string
	findings *spec.FileResult // not valid: 400 with the `nika check --json` report
	refusal  *refusal
}

// submit checks, compiles, prepares and admits a workflow text: POST /v1/runs and the web view's
// /new go through it, so both refuse the same things the same way.
func (s *Server) submit(name string, src []byte, vars map[string]string) submitted {
	// Checked under the ceiling: what the run would refuse (an exec under `{}`) is a 400 with
	// its finding now, and the compiled workflow carries the effective permits.
	result, a := s.check(name, src)
	if !result.Valid() {
		return submitted{findings: &result}
	}
	wf, err := workflow.Compile(a)
	if err != nil {
		return submitted{refusal: &refusal{status: http.StatusBadRequest, text: err.Error()}}
	}
	p := s.prepare(wf, vars)
	if p.refusal != nil {
		return submitted{refusal: p.refusal}
	}
	r := s.newRun(p.p)
	r.name, r.src, r.vars = name, src, vars
	if err := s.persist(r.id, storedRun{Name: name, Workflow: string(src), Vars: vars, Submitted: r.submitted}); err != nil {
		s.logf("run %s: error: the submission cannot be stored: %v", r.id, err)
		return submitted{refusal: &refusal{status: http.StatusInternalServerError, text: "the server cannot store the run: " + err.Error()}}
	}
	verdict := s.admitRun(r)
	if verdict != admitted {
		os.RemoveAll(s.runDir(r.id))
	}
	switch verdict {
	case queueFull:
		running, queued := s.Active()
		return submitted{refusal: &refusal{status: http.StatusTooManyRequests,
			text: fmt.Sprintf("the queue is full (%d running, %d queued); retry in %d seconds", running, queued, queueFullRetryAfter)}}
	case draining:
		return submitted{refusal: &refusal{status: http.StatusServiceUnavailable, text: "the server is shutting down; submit the run elsewhere or later"}}
	}
	return submitted{id: r.id}
}

// check is the checker every submission passes, under the server's ceiling; the editor's inline
// findings come from it too.
func (s *Server) check(name string, src []byte) (spec.FileResult, *spec.Analysis) {
	opts := s.opts.Check
	opts.Ceiling = s.ceiling
	a := spec.CheckSource(name, src, opts)
	return spec.FileResult{Name: name, File: a.File, Findings: a.Findings}, a
}

// readWorkflow reads a path submission inside the workflows root; os.Root
// refuses `..` and symlinks that leave it. Only a regular file is read:
// opening a FIFO would wait for a writer forever, and a device could do
// anything. So the file's type is checked before it is opened, and again
// on the opened file, which is opened non-blocking in case a FIFO took its
// place in between. Errors name the file as the client did (relative to
// the workflows directory), never the server's own paths.
func (s *Server) readWorkflow(name string) ([]byte, error) {
	if s.opts.Workflows == "" {
		return nil, errors.New(`"path" submissions are off: start nika serve with --workflows DIR, or send the YAML text as "workflow"`)
	}
	root, err := os.OpenRoot(s.opts.Workflows)
	if err != nil {
		return nil, fmt.Errorf("the workflows directory cannot be opened: %v", withoutPath(err))
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		return nil, workflowOpenError(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, fi.Mode())
	}
	f, err := root.OpenFile(name, openReadNonblock, 0)
	if err != nil {
		return nil, workflowOpenError(name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		if err != nil {
			return nil, fmt.Errorf("reading workflow %q: %v", name, withoutPath(err))
		}
		return nil, notRegular(name, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, s.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading workflow %q: %v", name, withoutPath(err))
	}
	if int64(len(b)) > s.opts.MaxBodyBytes {
		return nil, fmt.Errorf("workflow %q is over %d bytes", name, s.opts.MaxBodyBytes)
	}
	return b, nil
}

// lookup returns the run named in the path, or writes 404.
func (s *Server) lookup(w http.ResponseWriter, req *http.Request) *run {
	id := req.PathValue("id")
	s.mu.Lock()
	r := s.runs[id]
	s.mu.Unlock()
	if r == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no run %q: it never existed or was forgotten (the server keeps the last %d finished runs)", id, s.opts.KeepRuns))
	}
	return r
}

func (s *Server) handleGet(w http.ResponseWriter, req *http.Request) {
	r := s.lookup(w, req)
	if r == nil {
		return
	}
	s.mu.Lock()
	state, report, traceErr, questions := r.state, r.report, r.traceErr, r.questions
	s.mu.Unlock()
	out := map[string]any{"run_id": r.id, "state": state, "report": nil} // null until the run ends
	if report != nil {
		out["report"] = json.RawMessage(report)
	}
	if state == statePaused {
		out["questions"] = questionsJSON(questions)
	}
	if state == stateRunning && s.opts.Backend != nil { // waiting on a gate in the backend (backend.go)
		if qs := s.remoteQuestions(req.Context(), r); qs != nil {
			out["state"], out["questions"] = statePaused, qs
		}
	}
	if traceErr != "" {
		out["trace_error"] = traceErr
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleCancel(w http.ResponseWriter, req *http.Request) {
	r := s.lookup(w, req)
	if r == nil {
		return
	}
	switch state, verdict := s.cancelRun(r); verdict {
	case cancelDequeued:
		writeJSON(w, http.StatusOK, map[string]any{"run_id": r.id, "state": state})
	case cancelRequested:
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": r.id, "state": state})
	default:
		writeJSON(w, http.StatusConflict, map[string]any{"run_id": r.id, "state": state,
			"error": map[string]any{"message": "the run has already finished; there is nothing to cancel"}})
	}
}

// cancelVerdict is what a cancellation did.
type cancelVerdict int

const (
	cancelDequeued  cancelVerdict = iota // it was queued: cancelled at once
	cancelRequested                      // it is running: cancellation requested
	cancelTooLate                        // it had already finished
)

// cancelRun cancels r (DELETE /v1/runs/{id} and the run page's button) and returns its state.
func (s *Server) cancelRun(r *run) (string, cancelVerdict) {
	s.mu.Lock()
	state, verdict := r.state, cancelTooLate
	switch state {
	case stateQueued:
		for i, q := range s.queue {
			if q == r {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
		s.finishUnstarted(r)
		state, verdict = r.state, cancelDequeued
	case stateRunning:
		first := !r.clientCancelled
		r.clientCancelled = true // before the cancellation: the run's goroutine reads it after
		if s.opts.Backend == nil {
			r.cancel()
		} else if first {
			close(r.cancelReq) // the backend cancels it; the server follows it to its end
		}
		verdict = cancelRequested
	case statePaused:
		s.cancelPausedLocked(r)
		state, verdict = r.state, cancelDequeued
	}
	s.mu.Unlock()
	switch verdict {
	case cancelDequeued:
		s.logf("run %s cancelled while queued", r.id)
	case cancelRequested:
		s.logf("run %s: cancellation requested", r.id)
	}
	return state, verdict
}

// handleEvents streams the canonical events as NDJSON, one flush per
// event, following the run until it ends or the client goes.
func (s *Server) handleEvents(w http.ResponseWriter, req *http.Request) {
	r := s.lookup(w, req)
	if r == nil {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	next := 0
	for {
		lines, done, wake := r.log.since(next)
		for _, line := range lines {
			if _, err := w.Write(line); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		next += len(lines)
		if done && len(lines) == 0 {
			return
		}
		if done {
			continue // pick up anything written between the read and done
		}
		select {
		case <-wake:
		case <-req.Context().Done():
			return
		}
	}
}

func writeRefusal(w http.ResponseWriter, r *refusal) {
	if r.err != nil {
		writeJSON(w, r.status, map[string]any{"error": r.err})
		return
	}
	writeError(w, r.status, r.text)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg}})
}

// writeJSON writes v as canonical JSON and a newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		b, err = canon.Marshal(json.RawMessage(b))
	}
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
