package tools

import (
	"context"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// screen is a terminal's Out that lets a test wait for text to appear.
type screen struct {
	mu    sync.Mutex
	text  strings.Builder
	wrote chan struct{}
}

func newScreen() *screen { return &screen{wrote: make(chan struct{}, 1)} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.text.Write(p)
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// waitFor blocks until the screen shows want n times. The deadline only turns a hang into a
// failure; no outcome depends on timing.
func (s *screen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for strings.Count(s.String(), want) < n {
		select {
		case <-s.wrote:
		case <-deadline:
			t.Fatalf("the screen never showed %q %d times; it shows %q", want, n, s.String())
		}
	}
}

type promptResult struct {
	out any
	err error
}

func prompt(ctx context.Context, b *Builtins, args map[string]any) <-chan promptResult {
	ch := make(chan promptResult, 1)
	go func() {
		out, err := b.Execute(ctx, Call{Name: "nika:prompt", Args: args})
		ch <- promptResult{out, err}
	}()
	return ch
}

func TestPromptWithoutTerminal(t *testing.T) {
	cases := []struct {
		name string
		term *Terminal
		args map[string]any
		out  any
		code string
	}{
		{"confirm default", nil, map[string]any{"mode": "confirm", "message": "Go?", "default": false}, false, ""},
		{"input default", nil, map[string]any{"mode": "input", "message": "Name?", "default": "nika"}, "nika", ""},
		{"choice default", nil, map[string]any{"mode": "choice", "message": "Color?", "choices": []any{"red", "blue"}, "default": "blue"}, "blue", ""},
		{"no default", nil, map[string]any{"mode": "confirm", "message": "Go?"}, nil, "NIKA-BUILTIN-PROMPT-001"},
		{"input without default", nil, map[string]any{"mode": "input", "message": "Name?"}, nil, "NIKA-BUILTIN-PROMPT-001"},
		{"a terminal without In is no TTY", &Terminal{Out: io.Discard}, map[string]any{"mode": "input", "message": "Name?"}, nil, "NIKA-BUILTIN-PROMPT-001"},
		{"--yes confirms without a TTY", &Terminal{Yes: true}, map[string]any{"mode": "confirm", "message": "Go?"}, true, ""},
		{"--yes beats a false default", &Terminal{Yes: true}, map[string]any{"mode": "confirm", "message": "Go?", "default": false}, true, ""},
		{"--yes takes the input default", &Terminal{Yes: true}, map[string]any{"mode": "input", "message": "Name?", "default": "d"}, "d", ""},
		{"--yes without an input default", &Terminal{Yes: true}, map[string]any{"mode": "input", "message": "Name?"}, nil, "NIKA-BUILTIN-PROMPT-001"},
		{"choice without choices", nil, map[string]any{"mode": "choice", "message": "Color?"}, nil, "NIKA-INVOKE-002"},
		{"default not a choice", nil, map[string]any{"mode": "choice", "message": "Color?", "choices": []any{"red"}, "default": "blue"}, nil, "NIKA-INVOKE-002"},
		{"string default for confirm", nil, map[string]any{"mode": "confirm", "message": "Go?", "default": "yes"}, nil, "NIKA-INVOKE-002"},
		{"bool default for input", nil, map[string]any{"mode": "input", "message": "Name?", "default": true}, nil, "NIKA-INVOKE-002"},
		{"choices outside choice mode", nil, map[string]any{"mode": "input", "message": "Name?", "choices": []any{"a"}}, nil, "NIKA-INVOKE-002"},
		{"empty message", nil, map[string]any{"mode": "input", "message": "", "default": "x"}, nil, "NIKA-INVOKE-002"},
		{"bad mode", nil, map[string]any{"mode": "ask", "message": "?"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuiltins()
			b.Terminal = c.term
			out, err := b.Execute(context.Background(), Call{Name: "nika:prompt", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

func TestPromptAnswers(t *testing.T) {
	colors := []any{"red", "green", "blue"}
	cases := []struct {
		name   string
		yes    bool
		args   map[string]any
		input  string
		out    any
		code   string
		screen string // the exact transcript, when set
	}{
		{name: "y", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "y\n", out: true, screen: "Go? [y/n] "},
		{name: "YES", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "YES\n", out: true},
		{name: "spaced n", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: " n \n", out: false},
		{name: "No, CRLF", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "No\r\n", out: false},
		{name: "last line without newline", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "yes", out: true},
		{name: "empty takes default true", args: map[string]any{"mode": "confirm", "message": "Go?", "default": true}, input: "\n", out: true, screen: "Go? [Y/n] "},
		{name: "empty takes default false", args: map[string]any{"mode": "confirm", "message": "Go?", "default": false}, input: "\n", out: false, screen: "Go? [y/N] "},
		{name: "empty without default asks again", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "\nmaybe\ny\n", out: true,
			screen: "Go? [y/n] Please answer y or n.\nGo? [y/n] Please answer y or n.\nGo? [y/n] "},
		{name: "three bad answers", args: map[string]any{"mode": "confirm", "message": "Go?", "default": true}, input: "maybe\nperhaps\nsure\ny\n",
			code: "NIKA-BUILTIN-PROMPT-001"},
		{name: "EOF takes default", args: map[string]any{"mode": "confirm", "message": "Go?", "default": false}, input: "maybe\n", out: false},
		{name: "EOF without default", args: map[string]any{"mode": "confirm", "message": "Go?"}, input: "", code: "NIKA-BUILTIN-PROMPT-001"},
		{name: "input verbatim", args: map[string]any{"mode": "input", "message": "Name?"}, input: "  two words  \n", out: "  two words  ", screen: "Name? "},
		{name: "input empty takes default", args: map[string]any{"mode": "input", "message": "Name?", "default": "nika"}, input: "\n", out: "nika", screen: "Name? [nika] "},
		{name: "input empty without default", args: map[string]any{"mode": "input", "message": "Name?"}, input: "\n", out: ""},
		{name: "input EOF takes default", args: map[string]any{"mode": "input", "message": "Name?", "default": "d"}, input: "", out: "d"},
		{name: "choice by name", args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors}, input: "green\n", out: "green",
			screen: "Color?\n  1) red\n  2) green\n  3) blue\nChoose 1-3: "},
		{name: "choice by number", args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors}, input: " 3 \n", out: "blue"},
		{name: "choice empty takes default", args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors, "default": "red"}, input: "\n", out: "red",
			screen: "Color?\n  1) red\n  2) green\n  3) blue\nChoose 1-3 [red]: "},
		{name: "choice retries", args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors}, input: "4\nBlue\nblue\n", out: "blue"},
		{name: "choice gives up", args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors}, input: "0\npurple\n\n", code: "NIKA-BUILTIN-PROMPT-001"},
		{name: "an exact choice wins over a number", args: map[string]any{"mode": "choice", "message": "N?", "choices": []any{"2", "1"}}, input: "1\n", out: "1"},
		{name: "numbers index other choices", args: map[string]any{"mode": "choice", "message": "N?", "choices": []any{"10", "20"}}, input: "2\n", out: "20"},
		{name: "--yes confirms without reading", yes: true, args: map[string]any{"mode": "confirm", "message": "Go?", "default": false}, input: "n\n", out: true,
			screen: "Go? yes (--yes)\n"},
		{name: "--yes takes the choice default", yes: true, args: map[string]any{"mode": "choice", "message": "Color?", "choices": colors, "default": "blue"}, input: "1\n", out: "blue",
			screen: "Color? blue (--yes)\n"},
		{name: "--yes asks for an input without default", yes: true, args: map[string]any{"mode": "input", "message": "Name?"}, input: "typed\n", out: "typed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scr := newScreen()
			b := NewBuiltins()
			b.Terminal = &Terminal{In: strings.NewReader(c.input), Out: scr, Yes: c.yes}
			out, err := b.Execute(context.Background(), Call{Name: "nika:prompt", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q (screen %q)", err, c.code, scr.String())
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
			if c.code == "" {
				checkCatalogOutput(t, "nika:prompt", out)
			}
			if c.screen != "" && scr.String() != c.screen {
				t.Errorf("screen = %q, want %q", scr.String(), c.screen)
			}
		})
	}
}

// Two prompts never share the terminal: the second waits (proved by the rendezvous on
// onWait) until the first is answered, and the transcript shows whole questions in turn.
func TestPromptsDoNotInterleave(t *testing.T) {
	in, answers := io.Pipe()
	defer answers.Close()
	scr := newScreen()
	waiting := make(chan struct{}, 1)
	term := &Terminal{In: in, Out: scr, onWait: func() { waiting <- struct{}{} }}
	b := NewBuiltins()
	b.Terminal = term
	ctx := context.Background()

	first := prompt(ctx, b, map[string]any{"mode": "input", "message": "First?"})
	scr.waitFor(t, "First? ", 1)
	second := prompt(ctx, b, map[string]any{"mode": "confirm", "message": "Second?"})
	<-waiting // the second prompt found the terminal busy
	if got := scr.String(); got != "First? " {
		t.Fatalf("the screen shows %q while the first prompt owns the terminal", got)
	}
	if _, err := io.WriteString(answers, "one\n"); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.err != nil || r.out != "one" {
		t.Fatalf("first prompt: %v, %v", r.out, r.err)
	}
	scr.waitFor(t, "Second? ", 1)
	if _, err := io.WriteString(answers, "y\n"); err != nil {
		t.Fatal(err)
	}
	if r := <-second; r.err != nil || r.out != true {
		t.Fatalf("second prompt: %v, %v", r.out, r.err)
	}
	if got, want := scr.String(), "First? Second? [y/n] "; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

func TestPromptCancellation(t *testing.T) {
	in, answers := io.Pipe()
	defer answers.Close() // ends the pending read
	scr := newScreen()
	waiting := make(chan struct{}, 1)
	b := NewBuiltins()
	b.Terminal = &Terminal{In: in, Out: scr, onWait: func() { waiting <- struct{}{} }}

	// Cancelled while waiting for a line.
	ctx, cancel := context.WithCancel(context.Background())
	first := prompt(ctx, b, map[string]any{"mode": "confirm", "message": "First?"})
	scr.waitFor(t, "First? ", 1)

	// Cancelled while waiting for the turn.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	queued := prompt(ctx2, b, map[string]any{"mode": "confirm", "message": "Queued?"})
	<-waiting
	cancel2()
	if r := <-queued; codeOf(t, r.err) != "NIKA-CANCEL-001" {
		t.Fatalf("a prompt waiting for its turn: %v, %v", r.out, r.err)
	}

	cancel()
	if r := <-first; codeOf(t, r.err) != "NIKA-CANCEL-001" {
		t.Fatalf("a prompt waiting for a line: %v, %v", r.out, r.err)
	}
	// The read the first prompt left pending answers the next prompt: no second reader.
	next := prompt(context.Background(), b, map[string]any{"mode": "input", "message": "Next?"})
	scr.waitFor(t, "Next? ", 1)
	if _, err := io.WriteString(answers, "answer\n"); err != nil {
		t.Fatal(err)
	}
	if r := <-next; r.err != nil || r.out != "answer" {
		t.Fatalf("next prompt: %v, %v", r.out, r.err)
	}
	if got, want := scr.String(), "First? [y/n] \nNext? "; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
	if strings.Contains(scr.String(), "Queued?") {
		t.Errorf("a cancelled queued prompt reached the screen: %q", scr.String())
	}
}
