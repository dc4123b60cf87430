package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/nikahq/nika/event"
)

// progress is the live view of a run on a terminal: one status line
// (running, done, failed, elapsed; tools in flight, a tool's progress, and
// each provider with requests in flight or waiting) redrawn in place from the
// live stream, with the plain log lines of settled tasks printed above it. It
// reads the live stream only for counting, never to decide anything.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	now     func() time.Time
	running map[string]int // task -> jobs in flight
	tools   int            // agent tool calls in flight
	// calls holds the latest progress report of each tool call that sent one, until it ends;
	// latest is the call reported most recently, the one the status line shows.
	calls  map[callKey]string
	latest callKey
	// writing holds, per agent job whose model is writing a turn, the tail of the text it has
	// written so far (agent_text while the reply streams), until the reply is in
	// (provider_request); lastWriter is the job that wrote most recently, the one the line shows.
	writing    map[writerKey]string
	lastWriter writerKey
	// providers holds the latest provider_state of each provider (its limiter's snapshot).
	providers map[string]event.Live
	done      int
	failed    int
	drawn     bool
	// prompting: a nika:prompt question owns the line from its first write until its answer
	// is read; nothing is drawn and log lines wait in held.
	prompting bool
	held      []string
}

func newProgress(w io.Writer, now func() time.Time) *progress {
	return &progress{w: w, now: now, start: now(), running: map[string]int{}, calls: map[callKey]string{},
		writing: map[writerKey]string{}, providers: map[string]event.Live{}}
}

// writerKey names one agent job of the run (a turn's text belongs to it until the reply is in).
type writerKey struct {
	task           string
	iteration, try int
}

func writerOf(l event.Live) writerKey {
	return writerKey{task: l.Task, iteration: l.Iteration, try: l.Attempt}
}

// writingText is the status-line form of a turn being written: the task and the last 40
// characters of the model's text so far, control characters and runs of white space made one
// space (the model's text is untrusted).
func writingText(task, text string) string {
	r := []rune(strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0x1b {
			return ' '
		}
		return r
	}, text)), " "))
	s := string(r)
	if len(r) > 40 {
		s = "…" + string(r[len(r)-39:])
	}
	return fmt.Sprintf("%s writing %q", task, s)
}

// callKey names one tool call of the run.
type callKey struct {
	task, tool                  string
	iteration, turn, index, try int
}

func keyOf(l event.Live) callKey {
	return callKey{task: l.Task, tool: l.Tool, iteration: l.Iteration, turn: l.Turn, index: l.Index, try: l.Attempt}
}

// progressText is the status-line form of a tool's progress report: the tool, "3/10" (or "3"
// without a total), and its message with control characters removed (a server's text is
// untrusted), cut to 60 characters.
func progressText(l event.Live) string {
	s := l.Tool + " " + strconv.FormatFloat(l.Progress, 'f', -1, 64)
	if l.Total > 0 {
		s += "/" + strconv.FormatFloat(l.Total, 'f', -1, 64)
	}
	msg := []rune(strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0x1b {
			return ' '
		}
		return r
	}, l.Message)), " "))
	if len(msg) > 60 {
		msg = append(msg[:59], '…')
	}
	if len(msg) > 0 {
		s += " " + string(msg)
	}
	return s
}

// Observe takes one live event and redraws the status line.
func (p *progress) Observe(l event.Live) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch l.Kind {
	case event.LiveTaskStarted:
		p.running[l.Task]++
	case event.LiveTaskFinished:
		if p.running[l.Task]--; p.running[l.Task] <= 0 {
			delete(p.running, l.Task)
		}
	case event.LiveToolCallStarted:
		p.tools++
	case event.LiveToolCallFinished:
		p.tools = max(p.tools-1, 0)
		delete(p.calls, keyOf(l))
	case event.LiveToolCallProgress:
		p.latest = keyOf(l)
		p.calls[p.latest] = progressText(l)
	case event.LiveAgentText: // the text so far of a turn still being written (issue 17)
		p.lastWriter = writerOf(l)
		p.writing[p.lastWriter] = writingText(l.Task, l.Message)
	case event.LiveProviderRequest: // the reply is in: that job is no longer writing
		if _, ok := p.writing[writerOf(l)]; !ok {
			return // nothing on the line changes
		}
		delete(p.writing, writerOf(l))
	case event.LiveProviderState:
		p.providers[l.Provider] = l
	default:
		return
	}
	p.draw()
}

// Println prints a log line above the status line.
func (p *progress) Println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prompting {
		p.held = append(p.held, line)
		return
	}
	p.clear()
	fmt.Fprintln(p.w, line)
	p.draw()
}

// Settled counts a task that reached its terminal state (from the
// canonical stream: tasks, not attempts).
func (p *progress) Settled(failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed {
		p.failed++
	} else {
		p.done++
	}
	p.draw()
}

// Close erases the status line for good; call it before anything goes to
// stdout.
func (p *progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *progress) clear() {
	if p.drawn {
		io.WriteString(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) draw() {
	if p.prompting {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, "%d running · %d done · %d failed · %s", len(p.running), p.done, p.failed,
		p.now().Sub(p.start).Round(100*time.Millisecond))
	if p.tools > 0 {
		fmt.Fprintf(p.w, " · %d tools in flight", p.tools)
	}
	if txt, ok := p.calls[p.latest]; ok {
		fmt.Fprintf(p.w, " · %s", txt)
	}
	if txt, ok := p.writing[p.lastWriter]; ok {
		fmt.Fprintf(p.w, " · %s", txt)
	}
	for _, name := range slices.Sorted(maps.Keys(p.providers)) {
		if txt := providerText(p.providers[name]); txt != "" {
			fmt.Fprintf(p.w, " · %s", txt)
		}
	}
	p.drawn = true
}

// providerText is the status-line form of a provider's limiter, while it has requests in flight or
// waiting: "openai: 12 in flight, 40 waiting (limit 16, 3 rate-limited)", the rate-limited answers
// only once there are some. An idle provider shows nothing.
func providerText(l event.Live) string {
	if l.InFlight <= 0 && l.Waiting <= 0 {
		return ""
	}
	s := fmt.Sprintf("%s: %d in flight, %d waiting (limit %d", l.Provider, l.InFlight, l.Waiting, l.Limit)
	if l.RateLimitedAnswers > 0 {
		s += fmt.Sprintf(", %d rate-limited", l.RateLimitedAnswers)
	}
	return s + ")"
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// promptOut is nika:prompt's output through the view: the first write of a question erases the
// status line and stops redraws, so the question stays readable while the person answers.
type promptOut struct{ p *progress }

func (o promptOut) Write(b []byte) (int, error) {
	o.p.mu.Lock()
	defer o.p.mu.Unlock()
	if !o.p.prompting {
		o.p.clear()
		o.p.prompting = true
	}
	return o.p.w.Write(b)
}

// promptIn is nika:prompt's input through the view: once an answer line is read, the log lines
// held meanwhile are printed and the status line comes back.
type promptIn struct {
	p  *progress
	in io.Reader
}

func (r promptIn) Read(b []byte) (int, error) {
	n, err := r.in.Read(b)
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.p.prompting {
		r.p.prompting = false
		for _, l := range r.p.held {
			fmt.Fprintln(r.p.w, l)
		}
		r.p.held = nil
		r.p.draw()
	}
	return n, err
}
