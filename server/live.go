package server

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nikahq/nika/event"
)

// maxLiveNotes bounds the live observations one run keeps for its web view: a 10,000-task run
// needs 20,000 for its task lifecycle; past the bound, notes are counted and dropped (the page
// says so), so a runaway run cannot hold the server's memory.
const maxLiveNotes = 50_000

// maxTurnText bounds the model text a turn of the web view shows (agent_text, masked first).
const maxTurnText = 2000

// cutText cuts s to at most n bytes at a rune boundary, marking the cut with "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// liveNoteBytes is what one kept note is counted as against KeepBytes (the struct and its strings).
const liveNoteBytes = 192

// liveNote is the part of an event.Live observation the web view shows: no free text but the
// model's own words of an agent turn (agent_text, masked; a tool's progress Message is not
// kept), and the one name a model chooses, Tool, masked.
type liveNote struct {
	Kind      string        `json:"kind"`
	Task      string        `json:"task,omitempty"`
	Verb      string        `json:"verb,omitempty"`
	Iteration int           `json:"iteration"`
	Attempt   int           `json:"attempt,omitempty"`
	Status    string        `json:"status,omitempty"`
	Code      string        `json:"code,omitempty"`
	Elapsed   time.Duration `json:"-"`
	ElapsedMS float64       `json:"elapsed_ms,omitempty"`
	Turn      int           `json:"turn,omitempty"`
	Index     int           `json:"index"`
	Size      int           `json:"size,omitempty"`
	Tool      string        `json:"tool,omitempty"`
	Model     string        `json:"model,omitempty"`
	Outcome   string        `json:"outcome,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	InTokens  int           `json:"input_tokens,omitempty"`
	OutTokens int           `json:"output_tokens,omitempty"`
	IsError   bool          `json:"is_error,omitempty"`
	Text      string        `json:"text,omitempty"` // agent_text: the model's words, masked, then cut to maxTurnText bytes
	At        time.Time     `json:"-"`
	AtMS      int64         `json:"at_ms"` // Unix milliseconds
}

// liveKept are the kinds a run's web view reads; the rest (provider_state, tool progress) are
// for metrics and the terminal.
var liveKept = map[string]bool{
	event.LiveTaskStarted: true, event.LiveTaskFinished: true, event.LiveTaskRetrying: true,
	event.LiveProviderRequest: true, event.LiveToolCallStarted: true, event.LiveToolCallFinished: true,
	event.LiveBatchDispatched: true, event.LiveAgentNudge: true, event.LiveAgentStalled: true,
	event.LiveAgentFinished: true, event.LiveAgentText: true,
}

// liveLog keeps one run's live observations for the web view and follows its task lifecycle
// (running and settled counts) for the runs page. Observe is called from many goroutines.
type liveLog struct {
	mask    func(string) string
	changed func() // tells the runs page something moved; may be nil

	mu      sync.Mutex
	notes   []liveNote
	dropped int
	// textBytes are the bytes of the kept notes' Text, counted against KeepBytes on top of
	// liveNoteBytes a note.
	textBytes int64
	done      bool
	wake      chan struct{}
	running   map[string]int    // task -> jobs started and not finished (attempts ≥ 1)
	settled   map[string]string // task -> how its last job ended (live; a retry or recover may follow)
	final     map[string]string // task -> its terminal state, from the canonical stream
}

func newLiveLog(mask func(string) string, changed func()) *liveLog {
	return &liveLog{mask: mask, changed: changed, wake: make(chan struct{}),
		running: map[string]int{}, settled: map[string]string{}, final: map[string]string{}}
}

// Observe implements event.LiveSink.
func (l *liveLog) Observe(o event.Live) {
	if !liveKept[o.Kind] {
		return
	}
	n := liveNote{Kind: o.Kind, Task: o.Task, Verb: o.Verb, Iteration: o.Iteration, Attempt: o.Attempt,
		Status: o.Status, Code: o.Code, Elapsed: o.Elapsed, ElapsedMS: float64(o.Elapsed.Microseconds()) / 1000,
		Turn: o.Turn, Index: o.Index, Size: o.Size, Tool: o.Tool, Model: o.Model, Outcome: o.Outcome,
		Reason: o.Reason, InTokens: o.InputTokens, OutTokens: o.OutputTokens, IsError: o.IsError, At: o.At, AtMS: o.At.UnixMilli()}
	if o.Kind == event.LiveAgentText {
		n.Text = o.Message
		if l.mask != nil {
			n.Text = l.mask(n.Text) // the model may repeat a secret it was given
		}
		n.Text = cutText(n.Text, maxTurnText) // after masking: a cut through a secret would show its start
	}
	if l.mask != nil && n.Tool != "" {
		n.Tool = l.mask(n.Tool)
	}
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	lifecycle := l.track(n)
	if len(l.notes) < maxLiveNotes {
		l.notes = append(l.notes, n)
		l.textBytes += int64(len(n.Text))
	} else {
		l.dropped++
	}
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	if lifecycle && l.changed != nil {
		l.changed()
	}
}

// track follows a task's jobs (an on_finally step, attempt 0, is not the task's): it reports
// whether the task counts of the runs page moved. l.mu is held.
func (l *liveLog) track(n liveNote) bool {
	if n.Attempt == 0 || n.Task == "" {
		return false
	}
	switch n.Kind {
	case event.LiveTaskStarted:
		l.running[n.Task]++
		delete(l.settled, n.Task)
		return true
	case event.LiveTaskRetrying:
		delete(l.settled, n.Task)
		return true
	case event.LiveTaskFinished:
		if l.running[n.Task] > 0 {
			l.running[n.Task]--
		}
		if n.Iteration < 0 {
			l.settled[n.Task] = n.Status
		}
		return true
	}
	return false
}

// terminalKinds maps the canonical terminal kinds of a task to its state.
var terminalKinds = map[string]string{
	event.TaskCompleted: stateSuccess, event.TaskFailed: stateFailure,
	event.TaskSkipped: "skipped", event.TaskCancelled: stateCancelled,
}

// Emit implements event.Sink: a task's terminal event (not an iteration's) is its final state,
// whatever the live stream said (a failed attempt that on_error recovered is a success).
func (l *liveLog) Emit(e event.Event) {
	st, ok := terminalKinds[e.Kind]
	if !ok || e.Task == "" || e.Iteration >= 0 {
		return
	}
	l.mu.Lock()
	l.final[e.Task] = st
	l.mu.Unlock()
	if l.changed != nil {
		l.changed()
	}
}

// close ends the log: nothing is recorded after it.
func (l *liveLog) close() {
	l.mu.Lock()
	if !l.done {
		l.done = true
		close(l.wake)
	}
	l.mu.Unlock()
}

// since returns the notes from index i on, whether the log is complete, and a channel closed at
// the next change.
func (l *liveLog) since(i int) (notes []liveNote, done bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i > len(l.notes) {
		i = len(l.notes)
	}
	return l.notes[i:len(l.notes):len(l.notes)], l.done, l.wake
}

// forTask returns the notes about one task, in arrival order, and how many notes were dropped.
func (l *liveLog) forTask(task string) ([]liveNote, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []liveNote
	for _, n := range l.notes {
		if n.Task == task {
			out = append(out, n)
		}
	}
	return out, l.dropped
}

// taskStates returns each task's state so far: its terminal state once the canonical stream has
// it, else "running" while one of its jobs runs, else how its last job ended.
func (l *liveLog) taskStates() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.running)+len(l.settled)+len(l.final))
	for t, s := range l.settled {
		out[t] = s
	}
	for t, n := range l.running {
		if n > 0 {
			out[t] = stateRunning
		}
	}
	for t, s := range l.final {
		out[t] = s
	}
	return out
}

// bytes is what the log counts against KeepBytes.
func (l *liveLog) bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.notes))*liveNoteBytes + l.textBytes
}
