package agent

import (
	"strings"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// liveText shows a turn's text arriving on the live stream while the reply streams (issue 17):
// agent_text notes carrying the text so far, cut to event.MaxLiveText bytes, so that a watcher
// that keeps a turn's latest agent_text (the web view, the terminal) shows it growing and ends
// with the whole text, as before streaming. A note goes out when the text has doubled since the
// last one (from 64 bytes), and once more with the whole reply if it says more, so a turn makes a
// handful of notes of at most twice its text in all, however finely the wire splits it. It runs on
// the driver's goroutine (the observer's callbacks do).
type liveText struct {
	r    *run
	b    strings.Builder
	next int    // the length at which the next note goes out
	sent string // the last note's text
}

// add takes one delta of the reply's text.
func (t *liveText) add(delta string) {
	if room := event.MaxLiveText + 1 - t.b.Len(); room > 0 { // one byte over: the cut shows
		t.b.WriteString(delta[:min(len(delta), room)])
	}
	if t.b.Len() >= t.next {
		t.note(t.b.String())
		t.next = max(2*t.b.Len(), 64)
	}
}

// final takes the reply's whole text.
func (t *liveText) final(text string) { t.note(text) }

// restart forgets the text of a send that is being made again.
func (t *liveText) restart() {
	t.b.Reset()
	t.next, t.sent = 0, ""
}

func (t *liveText) note(text string) {
	msg := cutText(text, event.MaxLiveText)
	if msg == "" || msg == t.sent {
		return
	}
	t.sent = msg
	t.r.live(workflow.LiveNote{Kind: event.LiveAgentText, Message: msg})
}
