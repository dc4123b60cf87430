package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// runsStreamCoalesce is how long the runs page's stream gathers changes before it sends them: a
// busy server changes many times a second, and a person reads a table more slowly than that.
const runsStreamCoalesce = 250 * time.Millisecond

// taskCounts are a run's tasks by state, for the runs page.
type taskCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Success   int `json:"success"`
	Failure   int `json:"failure"`
	Skipped   int `json:"skipped"`
	Cancelled int `json:"cancelled"`
}

// runSummary is one row of the runs page.
type runSummary struct {
	ID        string     `json:"id"`
	Workflow  string     `json:"workflow"`
	State     string     `json:"state"`
	Submitted time.Time  `json:"-"`
	Started   time.Time  `json:"-"`
	Ended     time.Time  `json:"-"`
	Start     string     `json:"start"`    // when it started (or was submitted, while queued)
	Duration  string     `json:"duration"` // so far, while running
	Tasks     taskCounts `json:"tasks"`
	seq       int64
}

func (c *taskCounts) add(state string, n int) {
	switch state {
	case stateRunning:
		c.Running += n
	case stateSuccess:
		c.Success += n
	case stateFailure:
		c.Failure += n
	case "skipped":
		c.Skipped += n
	case stateCancelled:
		c.Cancelled += n
	default:
		return
	}
	c.Pending -= n
}

// summaries returns the runs that pass the filter, newest first.
func (s *Server) summaries(state, workflow string) []runSummary {
	now := s.opts.Clock()
	workflow = strings.ToLower(strings.TrimSpace(workflow))
	s.mu.Lock()
	out := make([]runSummary, 0, len(s.runs))
	for _, r := range s.runs {
		if state != "" && r.state != state || workflow != "" && !strings.Contains(strings.ToLower(r.w.Name), workflow) {
			continue
		}
		out = append(out, s.summaryLocked(r, now))
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b runSummary) int { return int(b.seq - a.seq) })
	return out
}

// summaryLocked is one run's row; s.mu is held. A finished run's counts come from its report
// (kept at the end), a running run's from its live log.
func (s *Server) summaryLocked(r *run, now time.Time) runSummary {
	sum := runSummary{ID: r.id, Workflow: r.w.Name, State: r.state, Submitted: r.submitted, Started: r.started,
		Ended: r.ended, seq: r.seq, Tasks: taskCounts{Total: len(r.w.Tasks), Pending: len(r.w.Tasks)}}
	if r.counts != nil {
		for st, n := range r.counts {
			sum.Tasks.add(st, n)
		}
	} else if r.state == stateRunning {
		for _, st := range r.live.taskStates() {
			sum.Tasks.add(st, 1)
		}
	}
	sum.Start = clockText(sum.Started)
	if sum.Started.IsZero() {
		sum.Start = clockText(sum.Submitted)
	}
	end := sum.Ended
	if end.IsZero() && !sum.Started.IsZero() {
		end = now
	}
	sum.Duration = sinceText(sum.Started, end)
	return sum
}

// runsPage is the data of the runs page.
type runsPage struct {
	Runs            []runSummary
	State, Workflow string
	States          []string
	Workflows       []string // the names among the kept runs, for the filter's suggestions
	Total           int
}

var runStates = []string{stateQueued, stateRunning, stateSuccess, stateFailure, stateCancelled}

// handleRunsPage is `/`: the kept runs, newest first, filtered by ?state= and ?workflow=.
func (s *Server) handleRunsPage(w http.ResponseWriter, r *http.Request) {
	state, wf := r.URL.Query().Get("state"), r.URL.Query().Get("workflow")
	if state != "" && !slices.Contains(runStates, state) {
		state = ""
	}
	all := s.summaries("", "")
	d := runsPage{State: state, Workflow: wf, States: runStates, Total: len(all)}
	seen := map[string]bool{}
	for _, sum := range all {
		if !seen[sum.Workflow] {
			seen[sum.Workflow] = true
			d.Workflows = append(d.Workflows, sum.Workflow)
		}
	}
	slices.Sort(d.Workflows)
	if state == "" && wf == "" {
		d.Runs = all
	} else {
		d.Runs = s.summaries(state, wf)
	}
	s.render(w, r, http.StatusOK, "runs", pageData{Title: "Runs", Nav: "runs", Data: d})
}

// handleRunsStream is the runs page's Server-Sent Events: every kept run as `event: run` at
// first, then each run whose row changed, and `event: gone` for a run forgotten; `event: end`
// once the server is shutting down and no run is left running. The page filters them itself.
func (s *Server) handleRunsStream(w http.ResponseWriter, r *http.Request) {
	sse := startSSE(w)
	if sse == nil {
		return
	}
	sent := map[string]string{}
	for {
		wake := s.changes.wait()
		now := map[string]string{}
		for _, sum := range slices.Backward(s.summaries("", "")) { // oldest first: the page prepends
			b, _ := json.Marshal(sum)
			now[sum.ID] = string(b)
			if sent[sum.ID] != string(b) && !sse.send("run", "", b) {
				return
			}
		}
		for id := range sent {
			if _, ok := now[id]; !ok {
				b, _ := json.Marshal(map[string]string{"id": id})
				if !sse.send("gone", "", b) {
					return
				}
			}
		}
		sent = now
		if !sse.flush() {
			return
		}
		if s.Draining() {
			if running, _ := s.Active(); running == 0 {
				// Nothing will change any more: end, so that shutting down does not wait on
				// the pages that follow the runs.
				sse.send("end", "", []byte("{}"))
				sse.flush()
				return
			}
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
		// Let a burst of changes (a wide wave settling) arrive before the next read. A run that
		// is still running changes its duration too, so a quiet page still ticks.
		t := time.NewTimer(runsStreamCoalesce)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
}

// sseWriter writes Server-Sent Events, one flush per event.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if s.rc.Flush() != nil {
		return nil
	}
	return s
}

// send writes one event, unflushed (a replay of thousands of events goes out in a few writes);
// data is one line of JSON (it holds no newline). It reports whether the client is still there.
func (s *sseWriter) send(kind, id string, data []byte) bool {
	s.buf = s.buf[:0]
	if id != "" {
		s.buf = append(append(append(s.buf, "id: "...), id...), '\n')
	}
	s.buf = append(append(append(s.buf, "event: "...), kind...), '\n')
	s.buf = append(append(append(s.buf, "data: "...), data...), "\n\n"...)
	_, err := s.w.Write(s.buf)
	return err == nil
}

// flush sends what was written; the streams flush before they wait.
func (s *sseWriter) flush() bool { return s.rc.Flush() == nil }
