package server

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/event"
)

// The batch lanes' geometry, in SVG user units.
const (
	laneLabel  = 160 // the call's index and tool, left of its bar
	laneWidth  = 320 // the time axis
	laneFold   = 64  // "fold n", right of the axis
	laneHeight = 22
	laneTop    = 22 // the axis and its labels
)

// turnView is one turn of an agent task: its provider requests, its budget, and its tool batch.
type turnView struct {
	Label                 string // "turn 2", "item 1 · attempt 2 · turn 3"
	Turn                  int
	Requests              int
	Model                 string
	InTokens, OutTokens   int
	Elapsed               string
	Outcome               string
	TotalTokens           string // from agent_budget_checkpoint, once the task's events are released
	Budget                string
	Offered               string // tools offered this turn
	Nudge, Stall          string
	Text                  string // what the model wrote this turn (agent_text, masked), "" when nothing
	Calls                 []laneView
	BatchSize             int
	Lanes                 template.HTML // the batch drawn on a time axis
	iteration, attempt    int
	batchAt, first, lastT time.Time
}

// laneView is one tool call of a batch.
type laneView struct {
	Index      int
	Tool       string
	Start, End time.Time // End zero while it runs
	IsError    bool
	Code       string
}

type turnKey struct{ iteration, attempt, turn int }

// agentTurns builds an agent task's timeline from its live notes (what ran when) and its
// canonical events (budgets, and the calls again once released: a view opened after the notes
// were dropped still has them, without times). Turns appear in the order they started.
func agentTurns(notes []liveNote, events []canonEvent) []turnView {
	var order []turnKey
	turns := map[turnKey]*turnView{}
	get := func(it, at, turn int) *turnView {
		k := turnKey{it, at, turn}
		if tv := turns[k]; tv != nil {
			return tv
		}
		tv := &turnView{Turn: turn, iteration: it, attempt: at}
		turns[k] = tv
		order = append(order, k)
		return tv
	}
	for _, n := range notes {
		if n.Turn == 0 {
			continue
		}
		tv := get(n.Iteration, n.Attempt, n.Turn)
		switch n.Kind {
		case event.LiveProviderRequest:
			tv.Requests++
			tv.Model, tv.InTokens, tv.OutTokens = n.Model, tv.InTokens+n.InTokens, tv.OutTokens+n.OutTokens
			tv.Elapsed, tv.Outcome = msText(n.ElapsedMS), n.Outcome
		case event.LiveBatchDispatched:
			tv.BatchSize, tv.batchAt = n.Size, n.At
		case event.LiveToolCallStarted:
			c := tv.call(n.Index)
			c.Tool, c.Start = n.Tool, n.At
		case event.LiveToolCallFinished:
			c := tv.call(n.Index)
			c.Tool, c.End, c.IsError, c.Code = n.Tool, n.At, n.IsError, n.Code
			if c.Start.IsZero() {
				c.Start = n.At.Add(-n.Elapsed)
			}
		case event.LiveAgentText:
			tv.Text = n.Text
		case event.LiveAgentNudge:
			tv.Nudge = n.Reason
		case event.LiveAgentStalled:
			tv.Stall = n.Reason
		}
	}
	for _, e := range events {
		turn := int(num(e.Fields["turn"]))
		if turn == 0 {
			continue
		}
		switch e.Kind {
		case event.AgentBudgetCheckpoint:
			tv := get(e.iteration(), e.Attempt, turn)
			tv.TotalTokens = fmt.Sprint(e.Fields["total_tokens"])
			if b := e.Fields["budget"]; b != nil {
				tv.Budget = fmt.Sprint(b)
			}
		case event.AgentToolsSelected:
			if o, ok := e.Fields["offered"].([]any); ok {
				get(e.iteration(), e.Attempt, turn).Offered = strconv.Itoa(len(o))
			} else if o := e.Fields["offered"]; o != nil {
				get(e.iteration(), e.Attempt, turn).Offered = fmt.Sprint(o)
			}
		case event.ToolInvoked:
			tv := get(e.iteration(), e.Attempt, turn)
			c := tv.call(int(num(e.Fields["index"])))
			if c.Tool == "" {
				c.Tool = str(e.Fields["tool"])
			}
			c.IsError = c.IsError || e.Fields["is_error"] == true
			if c.Code == "" {
				c.Code = str(e.Fields["code"])
			}
		case event.AgentNudge:
			get(e.iteration(), e.Attempt, turn).Nudge = str(e.Fields["reason"])
		case event.AgentStalled:
			get(e.iteration(), e.Attempt, turn).Stall = "stalled"
		}
	}
	out := make([]turnView, 0, len(order))
	now := time.Now()
	for _, k := range order {
		tv := turns[k]
		tv.Label = "turn " + strconv.Itoa(k.turn)
		if k.attempt > 1 {
			tv.Label = "attempt " + strconv.Itoa(k.attempt) + " · " + tv.Label
		}
		if k.iteration >= 0 {
			tv.Label = "item " + strconv.Itoa(k.iteration) + " · " + tv.Label
		}
		if len(tv.Calls) > 0 {
			tv.Lanes = tv.lanes(now)
		}
		out = append(out, *tv)
	}
	return out
}

// call returns the call at index i of the turn's batch, growing the batch to hold it.
func (tv *turnView) call(i int) *laneView {
	if i < 0 {
		i = 0
	}
	for len(tv.Calls) <= i {
		tv.Calls = append(tv.Calls, laneView{Index: len(tv.Calls)})
	}
	return &tv.Calls[i]
}

// lanes draws the batch: one lane per call in request order, its bar from when it started to
// when it finished (to now while it runs), so calls that ran at once overlap; on the right, the
// order the results were folded in, which is request order whatever finished first.
func (tv *turnView) lanes(now time.Time) template.HTML {
	t0 := tv.batchAt
	var t1 time.Time
	timed := false
	for _, c := range tv.Calls {
		if c.Start.IsZero() {
			continue
		}
		timed = true
		if t0.IsZero() || c.Start.Before(t0) {
			t0 = c.Start
		}
		end := c.End
		if end.IsZero() {
			end = now
		}
		if end.After(t1) {
			t1 = end
		}
	}
	span := t1.Sub(t0)
	if span < time.Millisecond {
		span = time.Millisecond
	}
	w := laneLabel + laneWidth + laneFold
	h := laneTop + len(tv.Calls)*laneHeight + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="lanes" role="img" width="%d" height="%d" viewBox="0 0 %d %d"><title>%d tool calls of %s</title>`,
		w, h, w, h, len(tv.Calls), template.HTMLEscapeString(tv.Label))
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, laneLabel, laneTop-6, laneLabel+laneWidth, laneTop-6)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">0</text>`, laneLabel, laneTop-10)
	if timed {
		fmt.Fprintf(&b, `<text class="tick end" x="%d" y="%d">%s</text>`, laneLabel+laneWidth, laneTop-10, template.HTMLEscapeString(msText(float64(span.Microseconds())/1000)))
	}
	for i, c := range tv.Calls {
		y := laneTop + i*laneHeight
		class := "lane"
		switch {
		case c.IsError:
			class += " err"
		case c.End.IsZero() && !c.Start.IsZero():
			class += " running"
		}
		fmt.Fprintf(&b, `<g class="%s" data-index="%d"><title>call %d: %s`, class, c.Index, c.Index, template.HTMLEscapeString(c.Tool))
		if !c.Start.IsZero() && !c.End.IsZero() {
			b.WriteString(", " + template.HTMLEscapeString(msText(float64(c.End.Sub(c.Start).Microseconds())/1000)))
		}
		if c.Code != "" {
			b.WriteString(", " + template.HTMLEscapeString(c.Code))
		}
		b.WriteString(`</title>`)
		fmt.Fprintf(&b, `<text class="name" x="4" y="%d">#%d %s</text>`, y+15, c.Index, template.HTMLEscapeString(cut(c.Tool, 18)))
		if !c.Start.IsZero() {
			end := c.End
			if end.IsZero() {
				end = now
			}
			x := laneLabel + int(float64(laneWidth)*float64(c.Start.Sub(t0))/float64(span))
			bw := max(int(float64(laneWidth)*float64(end.Sub(c.Start))/float64(span)), 3)
			bw = min(bw, laneLabel+laneWidth-x)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="3"/>`, x, y+3, max(bw, 3), laneHeight-8)
		}
		fmt.Fprintf(&b, `<text class="fold" x="%d" y="%d">fold %d</text></g>`, laneLabel+laneWidth+8, y+15, c.Index+1)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
