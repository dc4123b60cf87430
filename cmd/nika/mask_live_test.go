package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/workflow"
)

// The terminal view prints a tool's progress message, which a server may fill with what it was given: run
// wraps the view in maskedLive, so a secret in it is masked textually before it reaches stderr (D24).
// Before, the status line showed it as is.
func TestLiveViewMasksProgressMessages(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	view := newProgress(&buf, func() time.Time { return clock })
	live := maskedLive{view, workflow.NewMasker(map[string]any{"TOKEN": "hunter22-secret"})}
	for _, l := range []event.Live{
		{Kind: event.LiveToolCallStarted},
		{Kind: event.LiveToolCallProgress, Progress: 1, Total: 2, Message: "login with hunter22-secret then fetch"},
	} {
		l.Task, l.Tool, l.Attempt = "t", "mcp:ci/login", 1
		live.Observe(l)
	}
	got := buf.String()
	if strings.Contains(got, "hunter22") || !strings.Contains(got, "mcp:ci/login 1/2 login with •••••• then fetch") {
		t.Errorf("view = %q", got)
	}
}
