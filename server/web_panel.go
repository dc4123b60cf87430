package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
)

// bindingsBudget bounds the recomputation of a task's bindings for its panel (pure jq over the
// kept output, but a program can still loop).
const bindingsBudget = 2 * time.Second

// canonEvent is a canonical line read back for the web view.
type canonEvent struct {
	Seq       int64          `json:"seq"`
	Kind      string         `json:"kind"`
	Task      string         `json:"task"`
	Attempt   int            `json:"attempt"`
	Iteration *int           `json:"iteration"`
	Fields    map[string]any `json:"fields"`
	line      string
}

func (e canonEvent) iteration() int {
	if e.Iteration == nil {
		return event.NoIteration
	}
	return *e.Iteration
}

// taskEvents returns the canonical events about one task, in stream order.
func taskEvents(lines [][]byte, task string) []canonEvent {
	needle := []byte(`"task":` + string(plainJSON(task)))
	var out []canonEvent
	for _, l := range lines {
		if !bytes.Contains(l, needle) { // most lines are about other tasks: skip them undecoded
			continue
		}
		var e canonEvent
		d := json.NewDecoder(bytes.NewReader(l))
		d.UseNumber()
		if d.Decode(&e) != nil || e.Task != task {
			continue
		}
		e.line = string(bytes.TrimRight(l, "\n"))
		out = append(out, e)
	}
	return out
}

// plainJSON is v's JSON without encoding/json's \u003c escapes: the page escapes for HTML
// itself, and a person should read `<` as `<`.
func plainJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// reportView is the part of a D22 report the pages read.
type reportView struct {
	State string                    `json:"workflow_state"`
	Tasks map[string]reportTaskView `json:"tasks"`
	Out   any                       `json:"outputs"`
	Error *errorView                `json:"error"`
}

type reportTaskView struct {
	Status string     `json:"status"`
	Output any        `json:"output"`
	Error  *errorView `json:"error"`
	Usage  any        `json:"usage"`
}

type errorView struct {
	Code     string `json:"code"`
	Category string `json:"category"`
	Message  string `json:"message"`
	Details  any    `json:"details"`
}

func parseReport(b []byte) *reportView {
	if b == nil {
		return nil
	}
	var rv reportView
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&rv) != nil {
		return nil
	}
	return &rv
}

// taskPanel is the task panel: its status, attempts, durations, error, output and bindings, its
// canonical events and, for an agent, its turns.
type taskPanel struct {
	RunID, ID, Verb, Status string
	DependsOn               []string
	Attempts                []attemptView
	Error                   *errorView
	HasOutput               bool
	Output                  any
	Bindings                []bindingView
	Events                  []string
	Turns                   []turnView
	Dropped                 int // live notes the run could not keep
	Finished                bool
}

type attemptView struct {
	Label   string // "attempt 2", "item 3, attempt 1"
	Status  string
	Elapsed string
	Code    string
}

type bindingView struct {
	Name, Source string
	Value        any
	Problem      string
}

// buildPanel gathers a task's panel from the run's report (once finished), its canonical events
// and its live notes.
func (s *Server) buildPanel(r *run, task string) (*taskPanel, bool) {
	var t *spec.Task
	for _, x := range r.w.Tasks {
		if x.ID == task {
			t = x
			break
		}
	}
	if t == nil {
		return nil, false
	}
	s.mu.Lock()
	report := r.report
	s.mu.Unlock()
	lines, _, _ := r.log.since(0)
	events := taskEvents(lines, task)
	notes, dropped := r.live.forTask(task)
	p := &taskPanel{RunID: r.id, ID: t.ID, Verb: t.Verb, DependsOn: t.DependsOn, Dropped: dropped}
	p.Status = r.live.taskStates()[task]
	if p.Status == "" {
		p.Status = "pending"
	}
	for _, e := range events {
		p.Events = append(p.Events, e.line)
		if e.Kind == event.TaskFailed && e.iteration() < 0 && p.Error == nil {
			p.Error = &errorView{Code: str(e.Fields["code"]), Category: str(e.Fields["category"]), Message: str(e.Fields["message"])}
		}
	}
	for _, n := range notes {
		if n.Kind != event.LiveTaskFinished || n.Attempt == 0 {
			continue
		}
		label := fmt.Sprintf("attempt %d", n.Attempt)
		if n.Iteration >= 0 {
			label = fmt.Sprintf("item %d, attempt %d", n.Iteration, n.Attempt)
		}
		p.Attempts = append(p.Attempts, attemptView{Label: label, Status: n.Status, Elapsed: msText(n.ElapsedMS), Code: n.Code})
	}
	if rv := parseReport(report); rv != nil {
		p.Finished = true
		if rt, ok := rv.Tasks[task]; ok {
			p.Status, p.Output, p.HasOutput = rt.Status, rt.Output, true
			if rt.Error != nil {
				p.Error = rt.Error
			}
			if rt.Status == stateSuccess {
				p.Bindings = recomputeBindings(t, rt.Output)
			}
		}
	}
	if t.Verb == "agent" {
		p.Turns = agentTurns(notes, events)
	}
	return p, true
}

// recomputeBindings runs a task's `output:` bindings over its kept output, the way the planner
// ran them (§3.6: pure jq, in name order; under for_each once per item, into aligned arrays).
// The report does not carry binding values (D22), and the output it keeps is masked, so a
// binding over a secret shows its masked form.
func recomputeBindings(t *spec.Task, output any) []bindingView {
	if len(t.Bindings) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bindingsBudget)
	defer cancel()
	items, each := output.([]any)
	each = each && t.ForEach != nil
	bs := append([]*spec.Binding(nil), t.Bindings...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	out := make([]bindingView, 0, len(bs))
	for _, b := range bs {
		v := bindingView{Name: b.Name, Source: b.Source}
		if each {
			vals := make([]any, len(items))
			for i, it := range items {
				x, problem := runBinding(ctx, b, it)
				if problem != "" {
					v.Problem = fmt.Sprintf("item %d: %s", i, problem)
					break
				}
				vals[i] = x
			}
			v.Value = vals
		} else {
			v.Value, v.Problem = runBinding(ctx, b, output)
		}
		out = append(out, v)
	}
	return out
}

func runBinding(ctx context.Context, b *spec.Binding, in any) (any, string) {
	if b.Program == nil {
		return nil, "not compiled"
	}
	vals, err := b.Program.Run(ctx, jsonModel(in))
	switch {
	case err != nil:
		return nil, err.Error()
	case len(vals) != 1:
		return nil, fmt.Sprintf("produced %d values", len(vals))
	}
	return vals[0], ""
}

// jsonModel turns the report's json.Numbers back into the value model jq runs over: integers
// within int64 as int, the rest as float64 (LANGUAGE.md §4.3).
func jsonModel(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonModel(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonModel(e)
		}
		return out
	}
	return v
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}

// jsonTree renders a JSON value as nested <details> (objects and arrays collapse; the first two
// levels start open), every string escaped.
func jsonTree(v any) template.HTML {
	var b bytes.Buffer
	budget := 1 << 20 // a huge output is cut, not sent whole
	writeJSONTree(&b, v, 0, &budget)
	return template.HTML(b.String())
}

func writeJSONTree(b *bytes.Buffer, v any, depth int, budget *int) {
	if *budget <= 0 {
		b.WriteString(`<span class="j-cut">… (cut: download the report for the rest)</span>`)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		openTree(b, depth, fmt.Sprintf("{…} %d keys", len(keys)))
		for _, k := range keys {
			b.WriteString(`<li><span class="j-key">`)
			template.HTMLEscape(b, []byte(k))
			b.WriteString(`</span>: `)
			writeJSONTree(b, x[k], depth+1, budget)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ul></details>`)
	case []any:
		openTree(b, depth, fmt.Sprintf("[…] %d items", len(x)))
		for _, e := range x {
			b.WriteString(`<li>`)
			writeJSONTree(b, e, depth+1, budget)
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ul></details>`)
	default:
		j := plainJSON(x)
		class := "j-val"
		if _, ok := x.(string); ok {
			class = "j-str"
		}
		*budget -= len(j)
		b.WriteString(`<span class="` + class + `">`)
		template.HTMLEscape(b, j)
		b.WriteString(`</span>`)
	}
}

func openTree(b *bytes.Buffer, depth int, summary string) {
	if depth < 2 {
		b.WriteString(`<details class="j" open><summary>`)
	} else {
		b.WriteString(`<details class="j"><summary>`)
	}
	b.WriteString(summary)
	b.WriteString(`</summary><ul>`)
}
