package tracefmt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nikahq/nika/event"
)

// Trace is a parsed canonical trace.
type Trace struct {
	// Events is the number of lines read as events.
	Events int
	// Skipped lists the lines that are not events, in file order.
	Skipped []Skipped

	start, end *line   // workflow_started, and the last workflow_* event after it
	runEvents  []*line // events about no task, other than start and end
	tasks      []*task // in order of first appearance
	byID       map[string]*task
}

// Skipped is a line Read could not use.
type Skipped struct {
	Line int    // 1-based
	Why  string // "torn last line (no newline at the end)", "not a JSON event: …"
}

// line is one event as the trace holds it. Numbers stay json.Number, so they print as written.
type line struct {
	TS        string         `json:"ts"`
	RunID     string         `json:"run_id"`
	Kind      string         `json:"kind"`
	Task      string         `json:"task"`
	Attempt   int            `json:"attempt"`
	Iteration *int           `json:"iteration"`
	Fields    map[string]any `json:"fields"`
}

// iteration is the event's for_each iteration, or -1.
func (l *line) iteration() int {
	if l.Iteration == nil || *l.Iteration < 0 {
		return -1
	}
	return *l.Iteration
}

// task gathers one task's events.
type task struct {
	id     string
	verb   string  // from task_started; "" when it never started
	events []*line // every event but the terminal one, in trace order
	end    *line   // task_completed / task_failed / task_skipped / task_cancelled, or nil
}

// forEach says whether any event of the task is about an iteration.
func (t *task) forEach() bool {
	for _, e := range t.events {
		if e.iteration() >= 0 {
			return true
		}
	}
	return false
}

// The kinds Read files as a task's end.
var taskEnds = map[string]string{
	event.TaskCompleted: "success",
	event.TaskFailed:    "failure",
	event.TaskSkipped:   "skipped",
	event.TaskCancelled: "cancelled",
}

// Read parses a trace. Its only error is a read error; lines it cannot use are in Trace.Skipped.
func Read(r io.Reader) (*Trace, error) {
	t := &Trace{byID: map[string]*task{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		var err error
		buf, err = readLine(br, buf[:0])
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading line %d: %w", n, err)
		}
		if err == io.EOF {
			if len(buf) > 0 {
				t.Skipped = append(t.Skipped, Skipped{n, "torn last line (no newline at the end)"})
			}
			return t, nil
		}
		l, why := parse(buf[:len(buf)-1])
		if l == nil {
			t.Skipped = append(t.Skipped, Skipped{n, why})
			continue
		}
		t.Events++
		t.add(l)
	}
}

// readLine appends the next line, newline included, to buf; at the end of the input, what is left with
// io.EOF.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// parse decodes one line, or says why it is not an event.
func parse(b []byte) (*line, string) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, "empty line"
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var l line
	if err := dec.Decode(&l); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Sprintf("not a JSON event: at byte %d: %v", se.Offset, se)
		case errors.As(err, &te) && te.Field == "":
			return nil, "not a JSON event: not an object"
		case errors.As(err, &te):
			return nil, fmt.Sprintf("not a JSON event: %q is a JSON %s", te.Field, te.Value)
		}
		return nil, "not a JSON event: " + err.Error()
	}
	if dec.More() {
		return nil, "not a JSON event: data after the object"
	}
	if l.Kind == "" {
		return nil, `not a JSON event: no "kind"`
	}
	return &l, ""
}

// add files an event.
func (t *Trace) add(l *line) {
	if l.Task == "" {
		switch {
		case l.Kind == event.WorkflowStarted && t.start == nil:
			t.start = l
		case strings.HasPrefix(l.Kind, "workflow_") && l.Kind != event.WorkflowStarted:
			t.end = l // a run-level end, known (completed, failed, cancelled) or not (paused…): the last wins
		default:
			t.runEvents = append(t.runEvents, l)
		}
		return
	}
	tk := t.byID[l.Task]
	if tk == nil {
		tk = &task{id: l.Task}
		t.byID[l.Task] = tk
		t.tasks = append(t.tasks, tk)
	}
	if l.Kind == event.TaskStarted && l.iteration() < 0 {
		tk.verb, _ = l.Fields["verb"].(string)
		return
	}
	if _, ok := taskEnds[l.Kind]; ok && l.iteration() < 0 {
		tk.end = l
		return
	}
	tk.events = append(tk.events, l)
}
