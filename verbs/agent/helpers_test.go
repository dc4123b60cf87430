package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rec struct{ lines []string }

func (r *rec) emit(kind string, f map[string]any) {
	b, err := canon.Marshal(f)
	if err != nil {
		panic(err)
	}
	r.lines = append(r.lines, kind+" "+string(b))
}

func setup(t *testing.T, p provider.Provider, fields map[string]any, par int) (*Verb, workflow.Job, *rec) {
	t.Helper()
	reg := provider.NewRegistry()
	reg.Register("test", p)
	reg.Register("mock", provider.NewMock())
	model := "test/m"
	if _, ok := p.(*provider.Mock); ok {
		model = provider.MockModel
	}
	r := &rec{}
	v := &Verb{Providers: reg, Builtins: tools.NewBuiltins(), Config: Config{MaxParallelTools: par}}
	job := workflow.Job{Verb: "agent", Fields: fields, Model: model, Attempt: 1, Iteration: -1, Emit: r.emit}
	return v, job, r
}

func hashCall(id, content string) providertest.Call {
	return providertest.Call{ID: id, Name: "nika:hash", Input: fmt.Sprintf(`{"content":%q}`, content)}
}

func sameHash(id string) providertest.Call { return hashCall(id, "same") }

func doneCall(input string) providertest.Call {
	return providertest.Call{ID: "d", Name: "nika:done", Input: input}
}

// usageOf sets reported usage on a scripted outcome.
func usageOf(o provider.Outcome, in, outTok int) provider.Outcome {
	o.Response.Usage = provider.Usage{InputTokens: in, OutputTokens: outTok, Reported: true}
	return o
}

func transcript(t *testing.T, reqs []provider.Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range reqs {
		if err := enc.Encode(r.Messages); err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(r.Tools))
		for i, d := range r.Tools {
			names[i] = d.Name
		}
		if err := enc.Encode(names); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func kindsOf(ev *rec) []string {
	out := make([]string, len(ev.lines))
	for i, l := range ev.lines {
		out[i], _, _ = strings.Cut(l, " ")
	}
	return out
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// offeredNames returns the tool names of every request.
func offeredNames(reqs []provider.Request) [][]string {
	out := make([][]string, len(reqs))
	for i, r := range reqs {
		for _, d := range r.Tools {
			out[i] = append(out[i], d.Name)
		}
	}
	return out
}

// liveRec records the live notes of one run.
type liveRec struct {
	mu    sync.Mutex
	notes []workflow.LiveNote
}

func (l *liveRec) note(n workflow.LiveNote) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, n)
}

func (l *liveRec) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.notes))
	for i, n := range l.notes {
		out[i] = n.Kind
		if n.Tool != "" {
			out[i] += " " + n.Tool
		}
		if n.Code != "" {
			out[i] += " " + n.Code
		}
	}
	return out
}

// withLive attaches a live recorder to job.
func withLive(job workflow.Job) (workflow.Job, *liveRec) {
	l := &liveRec{}
	job.Live = l.note
	return job, l
}

// lockedRec is a canonical-event recorder safe to read from executor goroutines.
type lockedRec struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedRec) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *lockedRec) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// nativeScripted is a scripted provider that reports native schema support (provider.NativeSchema).
type nativeScripted struct{ *providertest.Scripted }

func (nativeScripted) SupportsSchema(string) bool { return true }

var _ provider.NativeSchema = nativeScripted{}

var answerSchema = map[string]any{"type": "object", "required": []any{"answer"}, "properties": map[string]any{"answer": map[string]any{"type": "integer"}}}
