package tracefmt

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec/canon"
)

// taskRestored is the kind of a resumed run's restored attempt (issue 15), spelled out here so that
// the rendering does not wait for the constant.
const taskRestored = "task_restored"

// WriteText writes the rendering of t (see the package doc) and returns the first write error.
func (t *Trace) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := &printer{w: bw}
	t.writeHeader(p)
	for _, tk := range t.tasks {
		tk.write(p)
	}
	if len(t.runEvents) > 0 {
		p.line("", "run events:")
		for _, e := range t.runEvents {
			p.line("  ", describe(e))
		}
	}
	return bw.Flush()
}

// printer writes indented lines; a write error is kept by the bufio.Writer and returned by Flush.
type printer struct{ w *bufio.Writer }

func (p *printer) line(indent, s string) {
	p.w.WriteString(indent)
	p.w.WriteString(s)
	p.w.WriteByte('\n')
}

func (t *Trace) writeHeader(p *printer) {
	first := t.start
	if first == nil && t.end != nil {
		first = t.end
	}
	wf, run, started, tasks := "?", "?", "?", "?"
	if t.start != nil {
		wf = text(t.start.Fields["workflow"])
		tasks = text(t.start.Fields["tasks"])
	}
	if first != nil {
		run, started = clean(first.RunID), clean(first.TS)
	}
	state, duration := "unfinished (the trace ends before the run did)", "unknown"
	if t.end != nil {
		state = text(t.end.Fields["state"])
		if state == "" {
			state = clean(strings.TrimPrefix(t.end.Kind, "workflow_"))
		}
		if code := text(t.end.Fields["error"]); code != "" {
			state += " (" + code + ")"
		}
		if d, ok := durationOf(t.end); ok {
			duration = d
		}
	}
	p.line("", "workflow  "+wf)
	p.line("", "run       "+run)
	p.line("", "state     "+state)
	p.line("", "started   "+started)
	p.line("", "duration  "+duration)
	if n := strconv.Itoa(len(t.tasks)); tasks != n {
		tasks += " (" + n + " in the trace)" // a run that paused or crashed before the others
	}
	p.line("", "tasks     "+tasks)
	if t.end != nil {
		for _, k := range sortedKeys(t.end.Fields) {
			if k != "state" && k != "error" && k != event.TimingKey {
				p.line("", fmt.Sprintf("%-9s %s", clean(k), compact(t.end.Fields[k])))
			}
		}
	}
	p.line("", "")
}

// write renders one task: its header line, what its attempts (or iterations) did, its error.
func (tk *task) write(p *printer) {
	status := "unfinished"
	if tk.end != nil {
		status = taskEnds[tk.end.Kind]
	}
	var facts []string
	if tk.verb != "" {
		facts = append(facts, clean(tk.verb))
	}
	each := tk.forEach()
	var own []*line // the events not about an iteration
	for _, e := range tk.events {
		if e.iteration() < 0 {
			own = append(own, e)
		}
	}
	if each {
		facts = append(facts, "for_each")
	} else if tk.verb != "" {
		facts = append(facts, plural(attemptsOf(own, tk.end), "attempt"))
	}
	if tk.end != nil {
		if d, ok := durationOf(tk.end); ok {
			facts = append(facts, d)
		}
		if status == "skipped" || status == "cancelled" {
			facts = appendText(facts, tk.end.Fields["reason"])
			facts = appendText(facts, tk.end.Fields["code"])
		}
	}
	head := clean(tk.id) + ": " + status
	if len(facts) > 0 {
		head += " (" + strings.Join(facts, ", ") + ")"
	}
	p.line("", head)
	if each {
		writeIterations(p, tk.events)
	}
	writeAttempts(p, "  ", own)
	if tk.end != nil && tk.end.Kind == event.TaskFailed {
		p.line("  ", errorLine(tk.end))
	}
}

// writeIterations summarizes a for_each task's iterations (those the trace has events for), then
// renders each.
func writeIterations(p *printer, events []*line) {
	var order []int
	byIter := map[int][]*line{}
	for _, e := range events {
		i := e.iteration()
		if i < 0 {
			continue
		}
		if _, ok := byIter[i]; !ok {
			order = append(order, i)
		}
		byIter[i] = append(byIter[i], e)
	}
	retried, restored := 0, 0
	for _, i := range order {
		if countKind(byIter[i], event.TaskRetrying) > 0 {
			retried++
		}
		if countKind(byIter[i], taskRestored) > 0 {
			restored++
		}
	}
	sum := fmt.Sprintf("iterations: %d in the trace (%s)", len(order), ranges(order))
	if retried > 0 {
		sum += fmt.Sprintf(", %d retried", retried)
	}
	if restored > 0 {
		sum += fmt.Sprintf(", %d restored", restored)
	}
	p.line("  ", sum)
	for _, i := range order {
		evs := byIter[i]
		head := "[" + strconv.Itoa(i) + "]"
		if n := attemptsOf(evs, nil); n > 1 {
			head += " " + plural(n, "attempt")
		}
		p.line("  ", head)
		writeAttempts(p, "    ", evs)
	}
}

// writeAttempts renders the events of one job (a task, or an iteration) attempt by attempt: a header
// per attempt when there were several, each attempt's events, then its retry.
func writeAttempts(p *printer, indent string, events []*line) {
	var order []int
	byAttempt := map[int][]*line{}
	for _, e := range events {
		if _, ok := byAttempt[e.Attempt]; !ok {
			order = append(order, e.Attempt)
		}
		byAttempt[e.Attempt] = append(byAttempt[e.Attempt], e)
	}
	multi := len(order) > 1 || countKind(events, event.TaskRetrying) > 0
	for _, a := range order {
		var body, retries []*line
		for _, e := range byAttempt[a] {
			if e.Kind == event.TaskRetrying {
				retries = append(retries, e)
			} else {
				body = append(body, e)
			}
		}
		sub := indent
		if multi && a > 0 && len(body) > 0 {
			p.line(indent, "attempt "+strconv.Itoa(a)+":")
			sub = indent + "  "
		}
		writeEvents(p, sub, body)
		for _, e := range retries {
			p.line(indent, retryLine(e))
		}
	}
}

// writeEvents renders the events of one attempt in trace order; an agent's events of one turn make
// one line.
func writeEvents(p *printer, indent string, events []*line) {
	for i := 0; i < len(events); {
		turn, ok := turnOf(events[i])
		if !ok {
			p.line(indent, describe(events[i]))
			i++
			continue
		}
		j := i + 1
		for j < len(events) {
			if t, ok := turnOf(events[j]); !ok || t != turn {
				break
			}
			j++
		}
		p.line(indent, turnLine(turn, events[i:j]))
		i = j
	}
}

// turnOf is the agent turn an event belongs to: the agent kinds and the infer and tool events of an
// agent carry fields.turn.
func turnOf(e *line) (string, bool) {
	switch e.Kind {
	case event.AgentToolsSelected, event.InferCompleted, event.AgentBudgetCheckpoint, event.ToolInvoked,
		event.AgentComposeChecked, event.AgentNudge, event.AgentStalled:
	default:
		return "", false
	}
	t := text(e.Fields["turn"])
	return t, t != ""
}

// turnLine renders one agent turn: the model request, the tools offered, the batch and what the
// guard said.
func turnLine(turn string, events []*line) string {
	var parts, batch, guard []string
	for _, e := range events {
		f := e.Fields
		switch e.Kind {
		case event.InferCompleted:
			parts = append(parts, inferText(f))
		case event.AgentToolsSelected:
			parts = append(parts, text(f["offered"])+" tools offered")
		case event.AgentBudgetCheckpoint:
			if b := text(f["budget"]); b != "" {
				parts = append(parts, fmt.Sprintf("%s of %s tokens spent", text(f["total_tokens"]), b))
			}
		case event.ToolInvoked:
			batch = append(batch, toolText(f))
		case event.AgentComposeChecked:
			if f["valid"] == true {
				batch = append(batch, "nika:compose (valid)")
			} else {
				batch = append(batch, "nika:compose ("+plural(atoi(f["violations"]), "violation")+")")
			}
		case event.AgentNudge:
			guard = append(guard, "nudged ("+text(f["reason"])+")")
		case event.AgentStalled:
			guard = append(guard, "stalled ("+text(f["repeats"])+" repeats)")
		}
	}
	if len(batch) > 0 {
		parts = append(parts, "batch: "+strings.Join(batch, ", "))
	}
	parts = append(parts, guard...) // the guard speaks after the batch it judged
	return "turn " + turn + ": " + strings.Join(parts, "; ")
}

// describe renders one event that is not part of an agent turn.
func describe(e *line) string {
	f := e.Fields
	switch e.Kind {
	case event.InferCompleted:
		return "model request: " + inferText(f)
	case event.ToolInvoked:
		return "tool call: " + toolText(f)
	case event.Log:
		return "log " + text(f["level"]) + ": " + text(f["message"])
	case event.UserEvent:
		return "event " + text(f["event_type"]) + ": " + compact(f["payload"])
	case taskRestored:
		s := "restored from the journal (not run again)"
		if st := text(f["on_finally"]); st != "" {
			s = "on_finally step " + st + " " + s
		}
		return s
	}
	s := clean(e.Kind)
	if e.Task == "" && e.Attempt > 0 {
		s += " (attempt " + strconv.Itoa(e.Attempt) + ")"
	}
	if len(f) > 0 {
		s += ": " + compact(f)
	}
	return s
}

func inferText(f map[string]any) string {
	s := text(f["model"])
	if f["usage_reported"] == false {
		return s + ", usage not reported"
	}
	return s + ", " + text(f["input_tokens"]) + " in / " + text(f["output_tokens"]) + " out tokens"
}

func toolText(f map[string]any) string {
	s := text(f["tool"])
	if f["is_error"] == true {
		s += " failed"
		if c := text(f["code"]); c != "" {
			s += " " + c
		}
	}
	return s
}

func retryLine(e *line) string {
	f := e.Fields
	a := text(f["attempt"])
	if a == "" {
		a = strconv.Itoa(e.Attempt)
	}
	s := "retry: attempt " + a + " failed with " + text(f["code"])
	if d := text(f["delay_ms"]); d != "" {
		s += ", next in " + d + "ms"
	}
	return s
}

func errorLine(e *line) string {
	f := e.Fields
	var tags []string
	tags = appendText(tags, f["category"])
	if f["transient"] == true {
		tags = append(tags, "transient")
	}
	if e.Attempt > 0 {
		tags = append(tags, "attempt "+strconv.Itoa(e.Attempt))
	}
	s := "error " + text(f["code"])
	if len(tags) > 0 {
		s += " (" + strings.Join(tags, ", ") + ")"
	}
	if m := text(f["message"]); m != "" {
		s += ": " + m
	}
	return s
}

// attemptsOf counts the attempts of one job from its events: the highest attempt any of them names, or
// one after the last retry (which starts another attempt, unless the task was cancelled first). A job
// that has no event naming an attempt made one.
func attemptsOf(events []*line, end *line) int {
	n := 1
	for _, e := range events {
		n = max(n, e.Attempt)
		if e.Kind == event.TaskRetrying && (end == nil || end.Kind != event.TaskCancelled) {
			n = max(n, e.Attempt+1, atoi(e.Fields["attempt"])+1)
		}
	}
	if end != nil {
		n = max(n, end.Attempt)
	}
	return n
}

func countKind(events []*line, kind string) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// durationOf reads fields.timing.duration_ms.
func durationOf(e *line) (string, bool) {
	timing, _ := e.Fields[event.TimingKey].(map[string]any)
	ms, err := strconv.ParseInt(text(timing["duration_ms"]), 10, 64)
	if err != nil {
		return "", false
	}
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms", true // Duration.String says 0s for 0
	}
	return (time.Duration(ms) * time.Millisecond).String(), true
}

// ranges writes sorted indexes compactly: "0-2, 5, 7-9".
func ranges(idx []int) string {
	s := slices.Sorted(slices.Values(idx))
	var out []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%d-%d", s[i], s[j]))
		} else {
			out = append(out, strconv.Itoa(s[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// text renders a scalar field as its text (strings unquoted, escaped; numbers as written); "" for a
// missing or null value, and compact JSON for anything else.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return clean(x)
	case fmt.Stringer: // json.Number
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return compact(v)
}

func appendText(list []string, v any) []string {
	if s := text(v); s != "" {
		return append(list, s)
	}
	return list
}

func atoi(v any) int {
	n, _ := strconv.Atoi(text(v))
	return n
}

// compact is v as canonical JSON, escaped like any text.
func compact(v any) string {
	b, err := canon.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return clean(string(b))
}

// clean escapes what would reach the terminal as a control (C0 and C1 controls, DEL) as Go escapes;
// everything else is kept as is. (Strings come from JSON, so they are valid UTF-8.)
func clean(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
