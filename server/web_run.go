package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// runPage is the data of /runs/{id}.
type runPage struct {
	Summary    runSummary
	TraceError string
	Graph      template.HTML
	Tasks      int
	Cancel     bool // queued or running: the cancel button
	Panel      *taskPanel
	Selected   string
	Report     *reportView
}

// findRun returns the run named in the path, or answers 404 with a page.
func (s *Server) findRun(w http.ResponseWriter, r *http.Request) *run {
	id := r.PathValue("id")
	s.mu.Lock()
	run := s.runs[id]
	s.mu.Unlock()
	if run == nil {
		s.webError(w, r, http.StatusNotFound, fmt.Sprintf("No run %q: it never existed or was forgotten (the server keeps the last %d finished runs).", id, s.opts.KeepRuns))
	}
	return run
}

// summaryOf is the runs page's row of one run.
func (s *Server) summaryOf(r *run) runSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summaryLocked(r, s.opts.Clock())
}

// handleRunPage is /runs/{id}: the graph with every task's state as it is now, the run's
// summary and, with ?task=, that task's panel. Script then follows the run live.
func (s *Server) handleRunPage(w http.ResponseWriter, req *http.Request) {
	r := s.findRun(w, req)
	if r == nil {
		return
	}
	d := s.runPageData(r, req.URL.Query().Get("task"))
	if d.Selected != "" && d.Panel == nil {
		s.webError(w, req, http.StatusNotFound, fmt.Sprintf("Run %s has no task %q.", r.id, d.Selected))
		return
	}
	s.render(w, req, http.StatusOK, "run", pageData{Title: r.w.Name + " · " + r.id, Nav: "runs", Data: d})
}

func (s *Server) runPageData(r *run, task string) runPage {
	s.mu.Lock()
	report, traceErr := r.report, r.traceErr
	s.mu.Unlock()
	d := runPage{Summary: s.summaryOf(r), TraceError: traceErr, Tasks: len(r.w.Tasks), Selected: task,
		Report: parseReport(report)}
	d.Cancel = d.Summary.State == stateQueued || d.Summary.State == stateRunning
	states := r.live.taskStates()
	if d.Report != nil {
		for id, t := range d.Report.Tasks {
			states[id] = t.Status
		}
	}
	d.Graph = layoutGraph(r.w).svg(r.id, states, task)
	if task != "" {
		d.Panel, _ = s.buildPanel(r, task)
	}
	return d
}

// handleTaskPanel is the task panel alone, which the run page's script swaps in when a node is
// chosen and refreshes while the task changes.
func (s *Server) handleTaskPanel(w http.ResponseWriter, req *http.Request) {
	r := s.findRun(w, req)
	if r == nil {
		return
	}
	p, ok := s.buildPanel(r, req.PathValue("task"))
	if !ok {
		s.webError(w, req, http.StatusNotFound, "No such task.")
		return
	}
	s.render(w, req, http.StatusOK, "panel", pageData{Data: p})
}

// handleRunStream is a run's Server-Sent Events, read from the same logs as GET /v1/runs/{id}/events:
// `canonical` (each canonical line, masked), `live` (the live notes the view keeps: tasks starting
// and finishing before their canonical events are released, provider requests, tool calls),
// `state` when the run's state changes, and `end` once both logs are complete. Event ids let a
// reconnecting EventSource resume where it was (Last-Event-ID: "<canonical>.<live>").
func (s *Server) handleRunStream(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	r := s.runs[req.PathValue("id")]
	s.mu.Unlock()
	if r == nil {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	nc, nl := resumePoint(req.Header.Get("Last-Event-ID"))
	sse := startSSE(w)
	if sse == nil {
		return
	}
	lastState := ""
	for {
		changed := s.changes.wait()
		s.mu.Lock()
		state := r.state
		s.mu.Unlock()
		lines, cdone, cwake := r.log.since(nc)
		notes, ldone, lwake := r.live.since(nl)
		for _, n := range notes {
			nl++
			b, _ := json.Marshal(n)
			if !sse.send("live", strconv.Itoa(nc)+"."+strconv.Itoa(nl), b) {
				return
			}
		}
		for _, l := range lines {
			nc++
			if !sse.send("canonical", strconv.Itoa(nc)+"."+strconv.Itoa(nl), bytes.TrimRight(l, "\n")) {
				return
			}
		}
		if state != lastState {
			lastState = state
			if !sse.send("state", "", []byte(strconv.Quote(state))) {
				return
			}
		}
		if !sse.flush() {
			return
		}
		if cdone && ldone && len(lines) == 0 && len(notes) == 0 && state != stateQueued && state != stateRunning {
			sse.send("end", "", []byte(strconv.Quote(state)))
			sse.flush()
			return
		}
		select {
		case <-cwake:
		case <-lwake:
		case <-changed:
		case <-req.Context().Done():
			return
		}
	}
}

// resumePoint reads a Last-Event-ID of the run stream.
func resumePoint(id string) (canonical, live int) {
	c, l, ok := strings.Cut(id, ".")
	if !ok {
		return 0, 0
	}
	ci, err1 := strconv.Atoi(c)
	li, err2 := strconv.Atoi(l)
	if err1 != nil || err2 != nil || ci < 0 || li < 0 {
		return 0, 0
	}
	return ci, li
}

// handleTrace is the canonical stream so far as a file to download.
func (s *Server) handleTrace(w http.ResponseWriter, req *http.Request) {
	r := s.findRun(w, req)
	if r == nil {
		return
	}
	lines, _, _ := r.log.since(0)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+r.id+`.ndjson"`)
	w.Header().Set("Cache-Control", "no-store")
	for _, l := range lines {
		if _, err := w.Write(l); err != nil {
			return
		}
	}
}

// handleWebCancel is the run page's cancel button: a form, so it works without script.
func (s *Server) handleWebCancel(w http.ResponseWriter, req *http.Request) {
	r := s.findRun(w, req)
	if r == nil {
		return
	}
	s.cancelRun(r)
	http.Redirect(w, req, "/runs/"+r.id, http.StatusSeeOther)
}
