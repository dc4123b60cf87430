package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/nikahq/nika/spec"
)

// nika:prompt (LANGUAGE.md §7.2).
//
// Decisions where the text is silent:
//   - No terminal (Builtins.Terminal nil, or its In nil): `default` is the answer, and without
//     one the call fails with PROMPT-001 — or, when the caller can pause its run (Call.CanPause:
//     an invoke task, D49), returns a *Pause, and the run waits for the answer
//     (`nika run --resume RUN --answer TASK=VALUE`, ParseAnswer). In an agent it still fails.
//   - `--yes` (Terminal.Yes) answers every `confirm` with true without asking, TTY or not. For
//     `input` and `choice` it takes `default` without asking when there is one; without one it
//     asks on the terminal if there is one, and fails with PROMPT-001 if not. Each answer given
//     by --yes is written to Out, so the terminal shows what was decided.
//   - confirm accepts y, yes, n, no (any case, surrounding spaces ignored); an empty line is
//     `default` when there is one. input returns the line as typed (without its line ending);
//     an empty line is `default` when there is one, else "". choice accepts one of `choices`
//     exactly (spaces around ignored), or its 1-based number — an exact choice wins over a
//     number, so choices that are numbers stay selectable; an empty line is `default`.
//   - An answer that is not accepted is asked again, three times in all; a third bad answer is
//     PROMPT-001, even with a `default` (guessing after a person typed something else would
//     be worse than failing).
//   - The end of the input (EOF) or a read error means nobody can answer: `default`, else
//     PROMPT-001.
//   - Prompts wait for one another: one question at a time on the terminal, in the order they
//     get the turn. Waiting (for the turn or for a line) ends with NIKA-CANCEL-001 when ctx is
//     done. A line is read by a goroutine, since a blocking Read cannot be interrupted; when its
//     prompt gives up, the read stays pending and its line answers the next prompt — the
//     goroutine ends when In yields a line, EOF or an error.
//   - The question goes to Out only; the engine points it at stderr, never stdout (the
//     outputs JSON). The message is written as given: masking secrets in it is the caller's
//     job, as for any text a task chooses to show.

const (
	codePrompt     = spec.CodeBuiltinPrompt
	promptAttempts = 3
)

// Terminal is the person at the terminal, for nika:prompt. A nil *Terminal means there is no
// TTY. Use it by pointer: it holds the state that serializes prompts.
type Terminal struct {
	// In gives the answers, one per line; nil means no TTY (only Yes applies).
	In io.Reader
	// Out shows the questions; nil discards them.
	Out io.Writer
	// Yes is `nika run --yes`: every confirm prompt is answered true without asking, and
	// input and choice prompts take their default without asking.
	Yes bool

	once    sync.Once
	turn    chan struct{} // holds a token while a prompt owns the terminal
	reader  *bufio.Reader
	pending chan promptLine // a read whose prompt gave up; guarded by turn
	// onWait, when set (tests), is called by a prompt that finds the terminal busy, just
	// before it waits for its turn.
	onWait func()
}

type promptLine struct {
	text string
	err  error
}

func (t *Terminal) init() {
	t.once.Do(func() {
		t.turn = make(chan struct{}, 1)
		if t.In != nil {
			t.reader = bufio.NewReader(t.In)
		}
	})
}

func (t *Terminal) out() io.Writer {
	if t == nil || t.Out == nil {
		return io.Discard
	}
	return t.Out
}

// acquire takes the terminal for one prompt, or fails when ctx is done first.
func (t *Terminal) acquire(ctx context.Context) error {
	t.init()
	select {
	case t.turn <- struct{}{}:
		return nil
	default:
	}
	if t.onWait != nil {
		t.onWait()
	}
	select {
	case t.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return cancelError(ctx)
	}
}

func (t *Terminal) release() { <-t.turn }

// readLine returns the next line without its ending. The caller holds the turn.
func (t *Terminal) readLine(ctx context.Context) (string, error) {
	ch := t.pending
	if ch == nil {
		ch = make(chan promptLine, 1) // buffered: the reader never blocks on a gone prompt
		r := t.reader
		go func() {
			s, err := r.ReadString('\n')
			if err != nil && s != "" {
				err = nil // a last line without a newline is still an answer
			}
			ch <- promptLine{text: s, err: err}
		}()
	}
	select {
	case l := <-ch:
		t.pending = nil
		return strings.TrimSuffix(strings.TrimSuffix(l.text, "\n"), "\r"), l.err
	case <-ctx.Done():
		t.pending = ch
		return "", cancelError(ctx)
	}
}

// promptQuestion is one prompt's arguments.
type promptQuestion struct {
	mode    string
	message string
	def     any // bool for confirm, string otherwise; nil when absent
	choices []string
}

// runPrompt asks the person at the terminal (Builtins.Terminal) and returns a bool for mode
// confirm, otherwise a string.
func runPrompt(ctx context.Context, in *invocation) (any, error) {
	q := promptQuestion{}
	var err error
	if q.mode, err = in.str("mode", ""); err != nil {
		return nil, err
	}
	if q.message, err = in.str("message", ""); err != nil {
		return nil, err
	}
	if v, ok := in.args["default"]; ok {
		_, isBool := v.(bool)
		_, isStr := v.(string)
		switch {
		case q.mode == "confirm" && !isBool:
			return nil, in.typeError("default", "a boolean for mode `confirm`", v)
		case q.mode != "confirm" && !isStr:
			return nil, in.typeError("default", "a string for mode `"+q.mode+"`", v)
		}
		q.def = v
	}
	if v, ok := in.args["choices"]; ok {
		list, _ := v.([]any)
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, in.typeError("choices", "a list of strings", v)
			}
			q.choices = append(q.choices, s)
		}
	}
	if q.mode == "choice" && len(q.choices) == 0 {
		return nil, in.badValue("choices", "", "a non-empty list (mode `choice` requires `choices`)")
	}
	t := in.terminal
	if t != nil && t.Yes && (q.mode == "confirm" || q.def != nil) {
		answer := q.def
		if q.mode == "confirm" {
			answer = true
		}
		if err := t.acquire(ctx); err != nil {
			return nil, err
		}
		defer t.release()
		fmt.Fprintf(t.out(), "%s %s (--yes)\n", q.message, q.show(answer))
		return answer, nil
	}
	if t == nil || t.In == nil {
		if q.def != nil {
			return q.def, nil
		}
		if in.call.CanPause {
			return nil, &Pause{Mode: q.mode, Message: q.message, Choices: q.choices}
		}
		fix := "give it a `default`, or run from a terminal"
		if q.mode == "confirm" {
			fix += ", or pass --yes to confirm it"
		}
		return nil, spec.NewError(codePrompt, "nika:prompt needs a terminal to ask "+strconv.Quote(q.message)+" and has no `default`; "+fix,
			map[string]any{"mode": q.mode, "message": q.message})
	}
	return t.ask(ctx, q)
}

// ask puts the question to the terminal until it gets an accepted answer.
func (t *Terminal) ask(ctx context.Context, q promptQuestion) (any, error) {
	if err := t.acquire(ctx); err != nil {
		return nil, err
	}
	defer t.release()
	w := t.out()
	if q.mode == "choice" {
		fmt.Fprintln(w, q.message)
		for i, c := range q.choices {
			fmt.Fprintf(w, "  %d) %s\n", i+1, c)
		}
	}
	for attempt := 1; ; attempt++ {
		io.WriteString(w, q.prompt())
		line, err := t.readLine(ctx)
		if err != nil {
			io.WriteString(w, "\n") // the next output starts on a line of its own
			if ctx.Err() != nil {
				return nil, err
			}
			if q.def != nil {
				return q.def, nil
			}
			return nil, spec.NewError(codePrompt, "the terminal input ended before an answer to "+strconv.Quote(q.message)+", and it has no `default`; give it a `default` or answer on the terminal",
				map[string]any{"mode": q.mode, "message": q.message}).Wrap(err)
		}
		if v, ok := q.parse(line); ok {
			return v, nil
		}
		if attempt == promptAttempts {
			return nil, spec.NewError(codePrompt, fmt.Sprintf("no valid answer to %s after %d attempts", strconv.Quote(q.message), promptAttempts),
				map[string]any{"mode": q.mode, "message": q.message, "attempts": promptAttempts})
		}
		io.WriteString(w, q.hint())
	}
}

// prompt is the question line, its accepted answers and default included.
func (q promptQuestion) prompt() string {
	switch q.mode {
	case "confirm":
		switch q.def {
		case true:
			return q.message + " [Y/n] "
		case false:
			return q.message + " [y/N] "
		}
		return q.message + " [y/n] "
	case "choice":
		s := fmt.Sprintf("Choose 1-%d", len(q.choices))
		if q.def != nil {
			s += " [" + q.def.(string) + "]"
		}
		return s + ": "
	}
	if q.def != nil {
		return q.message + " [" + q.def.(string) + "] "
	}
	return q.message + " "
}

func (q promptQuestion) hint() string {
	switch q.mode {
	case "confirm":
		return "Please answer y or n.\n"
	case "choice":
		return fmt.Sprintf("Please answer with one of the choices or its number (1-%d).\n", len(q.choices))
	}
	return ""
}

// show renders an answer given by --yes.
func (q promptQuestion) show(answer any) string {
	if b, ok := answer.(bool); ok {
		if b {
			return "yes"
		}
		return "no"
	}
	return fmt.Sprint(answer)
}

// parse turns a line into the answer, or reports that it is not an accepted one.
func (q promptQuestion) parse(line string) (any, bool) {
	trimmed := strings.TrimSpace(line)
	switch q.mode {
	case "confirm":
		switch strings.ToLower(trimmed) {
		case "y", "yes":
			return true, true
		case "n", "no":
			return false, true
		case "":
			return q.def, q.def != nil
		}
		return nil, false
	case "choice":
		if trimmed == "" {
			return q.def, q.def != nil
		}
		for _, c := range q.choices {
			if c == trimmed {
				return c, true
			}
		}
		if n, err := strconv.Atoi(trimmed); err == nil && n >= 1 && n <= len(q.choices) {
			return q.choices[n-1], true
		}
		return nil, false
	}
	if line == "" && q.def != nil {
		return q.def, true
	}
	return line, true
}

// Pause is nika:prompt's question when nobody can answer it now and its run can wait (D49).
type Pause struct {
	Mode    string
	Message string
	Choices []string
}

func (p *Pause) Error() string {
	return "nika:prompt needs an answer to " + strconv.Quote(p.Message)
}

// ParseAnswer turns the text of an answer given later (`--answer TASK=VALUE`, the serve API) into
// the prompt's value, as the terminal accepts it: confirm takes y, yes, n, no (and true, false),
// choice one of its choices or its 1-based number, input any text.
func ParseAnswer(mode string, choices []string, text string) (any, error) {
	q := promptQuestion{mode: mode, choices: choices}
	if mode == "confirm" {
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	if v, ok := q.parse(text); ok && v != nil {
		return v, nil
	}
	switch mode {
	case "confirm":
		return nil, fmt.Errorf("%q is not an answer to a confirm prompt: give yes or no", text)
	case "choice":
		return nil, fmt.Errorf("%q is not one of the choices %s, nor their number (1-%d)", text, strings.Join(quoteAll(choices), ", "), len(choices))
	}
	return nil, fmt.Errorf("%q is not an answer", text)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
