package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
)

// Issue 17 item 3: while a turn is being written the status line shows the tail of the model's
// text as it arrives (agent_text, control characters made spaces) and the tools that already
// started; once the reply is in (provider_request) the text goes.
func TestProgressViewShowsTheTurnBeingWritten(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgress(&buf, func() time.Time { return clock })
	job := event.Live{Task: "t", Attempt: 1, Turn: 1}
	for _, l := range []event.Live{
		{Kind: event.LiveAgentText, Message: "Let me"},
		{Kind: event.LiveToolCallStarted, Tool: "nika:hash"},
		{Kind: event.LiveAgentText, Message: "Let me look at " + strings.Repeat("ab", 30) + "\n\x1b\x07end"},
		{Kind: event.LiveProviderRequest},
		{Kind: event.LiveToolCallFinished, Tool: "nika:hash"},
	} {
		l.Task, l.Attempt, l.Turn = job.Task, job.Attempt, job.Turn
		p.Observe(l)
	}
	got := buf.String()
	steps := []string{
		`0 running · 0 done · 0 failed · 0s · t writing "Let me"`,
		"\r\033[K" + `0 running · 0 done · 0 failed · 0s · 1 tools in flight · t writing "Let me"`,
		"\r\033[K" + `0 running · 0 done · 0 failed · 0s · 1 tools in flight · t writing "…` + strings.Repeat("ba", 17) + `b end"`,
		"\r\033[K0 running · 0 done · 0 failed · 0s · 1 tools in flight",
		"\r\033[K0 running · 0 done · 0 failed · 0s",
	}
	if got != strings.Join(steps, "") {
		t.Errorf("view =\n%q\nwant\n%q", got, strings.Join(steps, ""))
	}
}
