package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
)

func TestProgressView(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgress(&buf, func() time.Time { return clock })
	p.Observe(event.Live{Kind: event.LiveTaskStarted, Task: "a"})
	p.Observe(event.Live{Kind: event.LiveTaskStarted, Task: "b"})
	clock = clock.Add(1500 * time.Millisecond)
	p.Observe(event.Live{Kind: event.LiveTaskFinished, Task: "a", Status: "success"})
	p.Settled(false)
	p.Println("✓ a")
	p.Observe(event.Live{Kind: event.LiveTaskFinished, Task: "b", Status: "failure"})
	p.Settled(true)
	p.Observe(event.Live{Kind: event.LiveToolCallStarted, Tool: "nika:read"})
	p.Observe(event.Live{Kind: event.LiveToolCallFinished, Tool: "nika:read"})
	p.Observe(event.Live{Kind: event.LiveProviderRequest}) // not drawn
	p.Close()
	got := buf.String()
	steps := []string{
		"1 running · 0 done · 0 failed · 0s",
		"\r\033[K2 running · 0 done · 0 failed · 0s",
		"\r\033[K1 running · 0 done · 0 failed · 1.5s",
		"\r\033[K1 running · 1 done · 0 failed · 1.5s",
		"\r\033[K✓ a\n1 running · 1 done · 0 failed · 1.5s",
		"\r\033[K0 running · 1 done · 0 failed · 1.5s",
		"\r\033[K0 running · 1 done · 1 failed · 1.5s",
		"\r\033[K0 running · 1 done · 1 failed · 1.5s · 1 tools in flight",
		"\r\033[K0 running · 1 done · 1 failed · 1.5s",
		"\r\033[K",
	}
	if got != strings.Join(steps, "") {
		t.Errorf("view =\n%q\nwant\n%q", got, strings.Join(steps, ""))
	}
	if isTerminal(&buf) {
		t.Error("a buffer is not a terminal")
	}
}

// A nika:prompt question owns the status line: its first write erases the line, nothing is
// redrawn and log lines wait until the answer is read; then they print and the line comes back.
func TestProgressGivesTheLineToAPrompt(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgress(&buf, func() time.Time { return clock })
	p.Observe(event.Live{Kind: event.LiveTaskStarted, Task: "a"})
	out, in := promptOut{p}, promptIn{p, strings.NewReader("y\n")}
	out.Write([]byte("Deploy? [y/N] "))
	p.Observe(event.Live{Kind: event.LiveTaskStarted, Task: "b"}) // not drawn over the question
	p.Println("✓ c")                                              // held
	b := make([]byte, 8)
	if n, _ := in.Read(b); string(b[:n]) != "y\n" {
		t.Fatalf("read %q", b[:n])
	}
	want := "1 running · 0 done · 0 failed · 0s" +
		"\r\033[KDeploy? [y/N] " +
		"✓ c\n2 running · 0 done · 0 failed · 0s"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A tool's progress report shows on the status line until its call ends; the server's message
// loses its control characters (no terminal escapes from an MCP server) and is cut to 60.
func TestProgressViewShowsToolProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgress(&buf, func() time.Time { return clock })
	call := event.Live{Task: "t", Tool: "mcp:ci/build", Attempt: 1, Turn: 2, Index: 1}
	for _, l := range []event.Live{
		{Kind: event.LiveToolCallStarted},
		{Kind: event.LiveToolCallProgress, Progress: 3, Total: 10, Message: "compiling\x1b[31m\nstep"},
		{Kind: event.LiveToolCallProgress, Progress: 7.5, Message: strings.Repeat("x", 70)},
		{Kind: event.LiveToolCallFinished},
	} {
		l.Task, l.Tool, l.Attempt, l.Turn, l.Index = call.Task, call.Tool, call.Attempt, call.Turn, call.Index
		p.Observe(l)
	}
	got := buf.String()
	steps := []string{
		"0 running · 0 done · 0 failed · 0s · 1 tools in flight",
		"\r\033[K0 running · 0 done · 0 failed · 0s · 1 tools in flight · mcp:ci/build 3/10 compiling [31m step",
		"\r\033[K0 running · 0 done · 0 failed · 0s · 1 tools in flight · mcp:ci/build 7.5 " + strings.Repeat("x", 59) + "…",
		"\r\033[K0 running · 0 done · 0 failed · 0s",
	}
	if got != strings.Join(steps, "") {
		t.Errorf("view =\n%q\nwant\n%q", got, strings.Join(steps, ""))
	}
}

// A provider_state shows the provider's limiter on the status line while it has requests in flight
// or waiting, providers in name order; the rate-limited answers only once there are some, and an
// idle provider nothing.
func TestProgressViewShowsProviders(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgress(&buf, func() time.Time { return clock })
	for _, l := range []event.Live{
		{Provider: "openai", Limit: 8},                             // idle: nothing
		{Provider: "openai", Limit: 16, InFlight: 12, Waiting: 40}, // busy
		{Provider: "anthropic", Limit: 4, Waiting: 2, RateLimitedAnswers: 3},
		{Provider: "openai", Limit: 16, InFlight: 12, Waiting: 40, RateLimitedAnswers: 1},
		{Provider: "anthropic", Limit: 4, RateLimitedAnswers: 3}, // done: gone
		{Provider: "openai", Limit: 32, RateLimitedAnswers: 1},
	} {
		l.Kind = event.LiveProviderState
		p.Observe(l)
	}
	got := buf.String()
	steps := []string{
		"0 running · 0 done · 0 failed · 0s",
		"\r\033[K0 running · 0 done · 0 failed · 0s · openai: 12 in flight, 40 waiting (limit 16)",
		"\r\033[K0 running · 0 done · 0 failed · 0s · anthropic: 0 in flight, 2 waiting (limit 4, 3 rate-limited) · openai: 12 in flight, 40 waiting (limit 16)",
		"\r\033[K0 running · 0 done · 0 failed · 0s · anthropic: 0 in flight, 2 waiting (limit 4, 3 rate-limited) · openai: 12 in flight, 40 waiting (limit 16, 1 rate-limited)",
		"\r\033[K0 running · 0 done · 0 failed · 0s · openai: 12 in flight, 40 waiting (limit 16, 1 rate-limited)",
		"\r\033[K0 running · 0 done · 0 failed · 0s",
	}
	if got != strings.Join(steps, "") {
		t.Errorf("view =\n%q\nwant\n%q", got, strings.Join(steps, ""))
	}
}
