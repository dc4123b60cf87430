package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// compileYAML checks and compiles a workflow for the layout tests.
func compileYAML(t testing.TB, src string) *workflow.Workflow {
	t.Helper()
	a := spec.CheckSource("w.nika.yaml", []byte(src), spec.CheckOptions{})
	if spec.HasErrors(a.Findings) {
		t.Fatalf("findings: %+v", a.Findings)
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// wideYAML is a workflow of waves×width tasks, each depending on two tasks of the wave before.
func wideYAML(waves, width int) string {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: wide\nmodel: mock/echo\ntasks:\n")
	for w := 0; w < waves; w++ {
		for i := 0; i < width; i++ {
			fmt.Fprintf(&b, "  - id: t%d_%d\n", w, i)
			if w > 0 {
				fmt.Fprintf(&b, "    depends_on: [t%d_%d, t%d_%d]\n", w-1, i, w-1, (i+7)%width)
			}
			b.WriteString("    infer: { prompt: \"x\" }\n")
		}
	}
	return b.String()
}

// Tasks are placed by wave, left to right, each to the right of what it depends on; edges run
// from a dependency to its dependent; every node links to its panel.
func TestGraphLayoutByWaves(t *testing.T) {
	w := compileYAML(t, `nika: v1
workflow: diamond
model: mock/echo
tasks:
  - id: join
    depends_on: [left, right]
    infer: { prompt: "j" }
  - id: left
    depends_on: [root]
    infer: { prompt: "l" }
  - id: right
    depends_on: [root]
    infer: { prompt: "r" }
  - id: root
    infer: { prompt: "r" }
`)
	g := layoutGraph(w)
	waves := map[string]int{}
	for _, n := range g.nodes {
		waves[n.id] = n.wave
	}
	if waves["root"] != 0 || waves["left"] != 1 || waves["right"] != 1 || waves["join"] != 2 || len(g.edges) != 4 {
		t.Fatalf("waves %v, %d edges", waves, len(g.edges))
	}
	for _, e := range g.edges {
		if nodeX(g.nodes[e[0]]) >= nodeX(g.nodes[e[1]]) {
			t.Errorf("edge %s -> %s runs backwards", g.nodes[e[0]].id, g.nodes[e[1]].id)
		}
	}
	svg := string(g.svg("r-1", map[string]string{"root": "success", "left": "running"}, "left"))
	for _, want := range []string{`class="node st-success" href="/runs/r-1?task=root#task"`, `class="node st-running selected"`,
		`class="node st-pending" href="/runs/r-1?task=join#task"`, `data-from="root" data-to="left"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG lacks %s:\n%s", want, svg)
		}
	}
	if strings.Count(svg, "<a ") != 4 || strings.Count(svg, "<path data-from") != 4 {
		t.Errorf("nodes and edges: %s", svg)
	}
}

// One lane per call of a batch, in request order, with the fold order; calls that ran at once
// overlap on the time axis.
func TestAgentTurnsLanes(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	notes := []liveNote{
		{Kind: event.LiveProviderRequest, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Model: "m", InTokens: 30, OutTokens: 20, At: ms(0)},
		{Kind: event.LiveBatchDispatched, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Size: 3, At: ms(1)},
		{Kind: event.LiveToolCallStarted, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Index: 0, Tool: "nika:hash", At: ms(1)},
		{Kind: event.LiveToolCallStarted, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Index: 1, Tool: "nika:jq", At: ms(1)},
		{Kind: event.LiveToolCallStarted, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Index: 2, Tool: "nika:hash", At: ms(2)},
		{Kind: event.LiveToolCallFinished, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Index: 1, Tool: "nika:jq", At: ms(5), Elapsed: 4 * time.Millisecond},
		{Kind: event.LiveToolCallFinished, Task: "a", Attempt: 1, Iteration: -1, Turn: 1, Index: 0, Tool: "nika:hash", At: ms(9), Elapsed: 8 * time.Millisecond},
		{Kind: event.LiveProviderRequest, Task: "a", Attempt: 1, Iteration: -1, Turn: 2, Model: "m", InTokens: 80, OutTokens: 3, At: ms(12)},
	}
	events := []canonEvent{{Kind: event.AgentBudgetCheckpoint, Task: "a", Attempt: 1, Fields: map[string]any{"turn": 1.0, "total_tokens": 50.0, "budget": nil}}}
	turns := agentTurns(notes, events)
	if len(turns) != 2 || turns[0].Turn != 1 || turns[1].Turn != 2 || len(turns[0].Calls) != 3 || turns[0].TotalTokens != "50" || turns[0].InTokens != 30 {
		t.Fatalf("turns = %+v", turns)
	}
	svg := string(turns[0].Lanes)
	if strings.Count(svg, `<g class="lane`) != 3 || !strings.Contains(svg, `class="lane running" data-index="2"`) || !strings.Contains(svg, "fold 3") {
		t.Errorf("lanes:\n%s", svg)
	}
	if turns[1].Lanes != "" {
		t.Errorf("a turn without tools has lanes")
	}
}

// BenchmarkRunGraph500 lays out and draws the graph of a 500-task workflow (25 waves of 20), the
// work of a run page beyond the template; issue 18 asks for under a second.
func BenchmarkRunGraph500(b *testing.B) {
	w := compileYAML(b, wideYAML(25, 20))
	states := map[string]string{}
	for i, t := range w.Tasks {
		states[t.ID] = []string{stateSuccess, stateRunning, ""}[i%3]
	}
	b.ReportAllocs()
	for b.Loop() {
		layoutGraph(w).svg("r-bench", states, "t3_4")
	}
}

// BenchmarkRunPage500 is the whole run page of a finished 500-task run, through the handler.
func BenchmarkRunPage500(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := compileYAML(b, wideYAML(25, 20))
	r := benchRun(s, w, 1)
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/runs/"+r.id+"?task=t3_4", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkRunsPage1000 is the runs page with the 1,000 retained runs.
func BenchmarkRunsPage1000(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := compileYAML(b, wideYAML(2, 5))
	for i := range DefaultKeepRuns {
		benchRun(s, w, int64(i+1))
	}
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// benchRun registers a finished run of w, every task a success, without running it.
func benchRun(s *Server, w *workflow.Workflow, seq int64) *run {
	id := fmt.Sprintf("r-bench-%04d", seq)
	r := &run{id: id, w: w, state: stateSuccess, seq: seq, counts: map[string]int{stateSuccess: len(w.Tasks)},
		submitted: time.Unix(1_800_000_000+seq, 0), started: time.Unix(1_800_000_000+seq, 0), ended: time.Unix(1_800_000_001+seq, 0)}
	r.log.wake = make(chan struct{})
	r.live = newLiveLog(nil, nil)
	var tasks []string
	for _, t := range w.Tasks {
		tasks = append(tasks, fmt.Sprintf(`%q:{"error":null,"output":"ok","status":"success"}`, t.ID))
	}
	r.report = []byte(`{"outputs":{},"run_id":"` + id + `","tasks":{` + strings.Join(tasks, ",") + `},"workflow":"wide","workflow_state":"success"}`)
	r.log.close()
	r.live.close()
	s.mu.Lock()
	s.runs[id] = r
	s.mu.Unlock()
	return r
}
