package metrics_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

// scripted is a workflow run through the real planner with fakeVerb as its exec verb: a task whose
// verb reports a provider request and a tool batch on the live stream, a task that fails once then
// succeeds on retry, a three-item for_each, and a task that fails the run.
const scripted = `nika: v1
workflow: scripted
tasks:
  - id: fetch
    exec: { command: ["tools"] }
  - id: flaky
    retry: { max_attempts: 3, backoff_ms: 0, on_codes: [NIKA-EXEC-001] }
    exec: { command: ["flaky"] }
  - id: each
    for_each: [1, 2, 3]
    exec: { command: ["ok"] }
  - id: broken
    depends_on: [fetch, flaky, each]
    exec: { command: ["fail"] }
`

// fakeVerb plays the verb side of the live stream the way infer, invoke and the agent do.
type fakeVerb struct{}

func (fakeVerb) Run(_ context.Context, job workflow.Job) workflow.Outcome {
	argv, _ := job.Fields["command"].([]any)
	live := func(n workflow.LiveNote) {
		if job.Live != nil {
			job.Live(n)
		}
	}
	switch fmt.Sprint(argv[0]) {
	case "tools":
		live(workflow.LiveNote{Kind: event.LiveProviderRequest, Provider: "mock", Model: "mock/echo", Outcome: "ok",
			InputTokens: 7, OutputTokens: 11, Elapsed: 20 * time.Millisecond, Turn: 1})
		live(workflow.LiveNote{Kind: event.LiveBatchDispatched, Size: 2, Turn: 1})
		live(workflow.LiveNote{Kind: event.LiveToolCallStarted, Tool: "nika:read", Turn: 1})
		live(workflow.LiveNote{Kind: event.LiveToolCallStarted, Tool: "mcp:fs/read_text_file", Index: 1, Turn: 1})
		live(workflow.LiveNote{Kind: event.LiveToolCallFinished, Tool: "mcp:fs/read_text_file", Index: 1, Turn: 1,
			IsError: true, Code: "NIKA-MCP-002", Elapsed: time.Millisecond})
		live(workflow.LiveNote{Kind: event.LiveToolCallFinished, Tool: "nika:read", Turn: 1, Elapsed: time.Millisecond})
		live(workflow.LiveNote{Kind: event.LiveAgentFinished, Outcome: "ok", Turns: 2})
		return workflow.Outcome{Output: "fetched"}
	case "flaky":
		if job.Attempt == 1 {
			return workflow.Failed(spec.NewError("NIKA-EXEC-001", "the first attempt fails", nil))
		}
		return workflow.Outcome{Output: "ok"}
	case "ok":
		return workflow.Outcome{Output: "ok"}
	}
	return workflow.Failed(spec.NewError("NIKA-EXEC-002", "scripted failure", nil))
}

// runScripted runs the scripted workflow through planner.Run with m on the live stream, beside
// another sink (the progress view's place), as nika run wires it.
func runScripted(t *testing.T, m *metrics.Metrics) planner.Result {
	t.Helper()
	a := spec.CheckSource("scripted.nika.yaml", []byte(scripted), spec.CheckOptions{})
	if !a.Valid() {
		for _, f := range a.Findings {
			t.Log(spec.FormatFinding("scripted.nika.yaml", f))
		}
		t.Fatal("invalid workflow")
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	other := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveWorkflowStarted || l.Kind == event.LiveWorkflowFinished {
			kinds = append(kinds, l.Kind) // the planner emits both on its own goroutine
		}
	})
	res := planner.Run(context.Background(), w, planner.Inputs{}, planner.Options{
		Verbs: map[string]planner.Verb{"exec": fakeVerb{}},
		Live:  event.LiveFanout{other, m},
	})
	if !slices.Equal(kinds, []string{event.LiveWorkflowStarted, event.LiveWorkflowFinished}) {
		t.Errorf("the other sink saw %v, want workflow_started then workflow_finished", kinds)
	}
	return res
}

// gathered flattens the named families to sorted "name{labels} value" lines (histograms: _count).
func gathered(t *testing.T, g prometheus.Gatherer, names ...string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, mt := range mf.Metric {
			var ls []string
			for _, lp := range mt.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			lbl := ""
			if len(ls) > 0 {
				lbl = "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case mt.Counter != nil:
				out = append(out, fmt.Sprintf("%s%s %g", mf.GetName(), lbl, mt.Counter.GetValue()))
			case mt.Gauge != nil:
				out = append(out, fmt.Sprintf("%s%s %g", mf.GetName(), lbl, mt.Gauge.GetValue()))
			case mt.Histogram != nil:
				out = append(out, fmt.Sprintf("%s_count%s %d", mf.GetName(), lbl, mt.Histogram.GetSampleCount()))
			}
		}
	}
	sort.Strings(out)
	return out
}

// A real run through planner.Run: the planner's task, retry and workflow observations and the verb's
// notes reach the metrics with the right labels and counts.
func TestPlannerRun(t *testing.T) {
	m := metrics.New(metrics.Options{TaskLabel: true})
	if res := runScripted(t, m); res.State != "failure" {
		t.Fatalf("state %s, want failure (broken fails the run)", res.State)
	}
	want := []string{
		`nika_workflow_runs_total{state="failure",workflow="scripted"} 1`,
		`nika_workflow_runs_in_flight 0`,
		`nika_workflow_run_duration_seconds_count{workflow="scripted"} 1`,
		`nika_task_runs_total{status="success",task="fetch",verb="exec",workflow="scripted"} 1`,
		`nika_task_runs_total{status="failure",task="flaky",verb="exec",workflow="scripted"} 1`,
		`nika_task_runs_total{status="success",task="flaky",verb="exec",workflow="scripted"} 1`,
		`nika_task_runs_total{status="success",task="each",verb="exec",workflow="scripted"} 3`,
		`nika_task_runs_total{status="failure",task="broken",verb="exec",workflow="scripted"} 1`,
		`nika_task_retries_total{task="flaky",verb="exec"} 1`,
		`nika_task_duration_seconds_count{task="fetch",verb="exec"} 1`,
		`nika_task_duration_seconds_count{task="flaky",verb="exec"} 2`,
		`nika_task_duration_seconds_count{task="each",verb="exec"} 3`,
		`nika_task_duration_seconds_count{task="broken",verb="exec"} 1`,
		`nika_tasks_in_flight{task="fetch",verb="exec"} 0`,
		`nika_tasks_in_flight{task="flaky",verb="exec"} 0`,
		`nika_tasks_in_flight{task="each",verb="exec"} 0`,
		`nika_tasks_in_flight{task="broken",verb="exec"} 0`,
		`nika_llm_requests_total{model="mock/echo",outcome="ok",provider="mock"} 1`,
		`nika_llm_tokens_total{kind="input",model="mock/echo",provider="mock"} 7`,
		`nika_llm_tokens_total{kind="output",model="mock/echo",provider="mock"} 11`,
		`nika_llm_request_duration_seconds_count{model="mock/echo",provider="mock"} 1`,
		`nika_tool_calls_total{outcome="ok",tool="nika:read"} 1`,
		`nika_tool_calls_total{outcome="error",tool="mcp:fs/read_text_file"} 1`,
		`nika_tool_calls_in_flight 0`,
		`nika_tool_batch_size_count 1`,
		`nika_agent_turns_count{workflow="scripted"} 1`,
	}
	sort.Strings(want)
	got := gathered(t, m.Gatherer(), "nika_workflow_runs_total", "nika_workflow_runs_in_flight", "nika_workflow_run_duration_seconds",
		"nika_task_runs_total", "nika_task_retries_total", "nika_task_duration_seconds", "nika_tasks_in_flight",
		"nika_llm_requests_total", "nika_llm_tokens_total", "nika_llm_request_duration_seconds",
		"nika_tool_calls_total", "nika_tool_calls_in_flight", "nika_tool_batch_size", "nika_agent_turns")
	if !slices.Equal(got, want) {
		t.Errorf("after the run:\ngot\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// edgeVerb scripts the paths where the planner decides a job's fate on its own: a binding that fails
// on the first attempt's output, a job that outlives its task's timeout, and a job that cancels the
// run and returns a result at once.
type edgeVerb struct {
	cancel    context.CancelFunc
	cancelled chan struct{} // closed by "cancel" once it cancelled the run
}

func (v edgeVerb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	argv, _ := job.Fields["command"].([]any)
	switch fmt.Sprint(argv[0]) {
	case "shape":
		if job.Attempt == 1 {
			return workflow.Outcome{Output: map[string]any{"n": "not a number"}}
		}
		return workflow.Outcome{Output: map[string]any{"n": "7"}}
	case "hang":
		<-ctx.Done()
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	case "cancel":
		v.cancel()
		close(v.cancelled)
		return workflow.Outcome{Output: "done"}
	}
	return workflow.Outcome{Output: "ok"}
}

func runEdge(t *testing.T, ctx context.Context, src string, v edgeVerb, live event.LiveSink) planner.Result {
	t.Helper()
	a := spec.CheckSource("edge.nika.yaml", []byte(src), spec.CheckOptions{})
	if !a.Valid() {
		for _, f := range a.Findings {
			t.Log(spec.FormatFinding("edge.nika.yaml", f))
		}
		t.Fatal("invalid workflow")
	}
	w, err := workflow.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return planner.Run(ctx, w, planner.Inputs{}, planner.Options{Verbs: map[string]planner.Verb{"exec": v}, Live: live})
}

// A retry on a binding failure (retry.on_codes lists the binding's code) counts in
// nika_task_retries_total, and the attempt whose binding failed is a failed run: the bindings are
// part of the attempt (LANGUAGE.md §3.9, §3.12), evaluated with the job.
func TestRetryOnBindingFailure(t *testing.T) {
	m := metrics.New(metrics.Options{})
	var retrying []event.Live
	spy := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveTaskRetrying {
			retrying = append(retrying, l) // on the driver's goroutine
		}
	})
	res := runEdge(t, context.Background(), `nika: v1
workflow: edge
tasks:
  - id: parse
    retry: { max_attempts: 2, backoff_ms: 0, on_codes: [NIKA-VAR-004] }
    exec: { command: ["shape"] }
    output:
      n: ".n | tonumber"
`, edgeVerb{}, event.LiveFanout{m, spy})
	if res.State != "success" {
		t.Fatalf("state %s, want success on the second attempt", res.State)
	}
	if len(retrying) != 1 || retrying[0].Task != "parse" || retrying[0].Verb != "exec" || retrying[0].Attempt != 1 || retrying[0].Code != "NIKA-VAR-004" {
		t.Errorf("task_retrying on the live stream: %+v, want one for parse, exec, attempt 1, NIKA-VAR-004", retrying)
	}
	got := gathered(t, m.Gatherer(), "nika_task_retries_total", "nika_task_runs_total")
	want := []string{
		`nika_task_retries_total{verb="exec"} 1`,
		`nika_task_runs_total{status="failure",verb="exec",workflow="edge"} 1`,
		`nika_task_runs_total{status="success",verb="exec",workflow="edge"} 1`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// A job stopped by its task's timeout ended in a failure (the task fails with NIKA-TIMEOUT-001), not
// a cancellation: nika_task_runs_total says failure, and the in-flight gauge is back to zero.
func TestTimedOutJobIsFailure(t *testing.T) {
	m := metrics.New(metrics.Options{})
	res := runEdge(t, context.Background(), `nika: v1
workflow: edge
tasks:
  - id: slow
    timeout: "50ms"
    exec: { command: ["hang"] }
  - id: each
    for_each: [1, 2]
    fail_fast: false
    timeout: "50ms"
    exec: { command: ["hang"] }
`, edgeVerb{}, m)
	if tr := res.Tasks[0]; tr.Status != "failure" || tr.Error == nil || tr.Error.Code != "NIKA-TIMEOUT-001" {
		t.Fatalf("slow = %s %+v, want failure NIKA-TIMEOUT-001", tr.Status, tr.Error)
	}
	got := gathered(t, m.Gatherer(), "nika_task_runs_total", "nika_tasks_in_flight", "nika_workflow_runs_total")
	want := []string{
		`nika_task_runs_total{status="failure",verb="exec",workflow="edge"} 3`,
		`nika_tasks_in_flight{verb="exec"} 0`,
		`nika_workflow_runs_total{state="failure",workflow="edge"} 1`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// A user cancellation that reaches the driver together with a job's result (the job cancelled the
// run, then returned) comes first: nothing new starts, and the run counts as cancelled. The driver
// is held (in the live sink, on its own goroutine) until both are ready; the order of a select
// between two ready channels is random, so the run is repeated. first's job succeeded; after never
// starts. gate, started in the same step as first, never runs its verb: when first cancelled the run
// before the driver came to gate, gate does not start at all; otherwise its job sees a done context
// before its verb runs and ends cancelled (NIKA-CANCEL-001).
func TestCancelBeforeResult(t *testing.T) {
	for i := 0; i < 40; i++ {
		m := metrics.New(metrics.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		v := edgeVerb{cancel: cancel, cancelled: make(chan struct{})}
		hold := event.LiveFunc(func(l event.Live) {
			if l.Kind == event.LiveTaskStarted && l.Task == "gate" { // first is running already
				<-v.cancelled
				time.Sleep(5 * time.Millisecond) // first's result is waiting to be received
			}
		})
		res := runEdge(t, ctx, `nika: v1
workflow: edge
tasks:
  - id: first
    exec: { command: ["cancel"] }
  - id: gate
    exec: { command: ["ok"] }
  - id: after
    depends_on: [first]
    exec: { command: ["ok"] }
`, v, event.LiveFanout{m, hold})
		cancel()
		got := gathered(t, m.Gatherer(), "nika_task_runs_total", "nika_workflow_runs_total")
		gateCancelled := []string{
			`nika_task_runs_total{status="cancelled",verb="exec",workflow="edge"} 1`,
			`nika_task_runs_total{status="success",verb="exec",workflow="edge"} 1`,
			`nika_workflow_runs_total{state="cancelled",workflow="edge"} 1`,
		}
		gateNotStarted := []string{gateCancelled[1], gateCancelled[2]}
		if res.State != "cancelled" || !slices.Equal(got, gateCancelled) && !slices.Equal(got, gateNotStarted) {
			t.Fatalf("run %d: state %s, metrics\n\t%s\nwant (first success, gate cancelled or not started, never after)\n\t%s", i, res.State, strings.Join(got, "\n\t"), strings.Join(gateCancelled, "\n\t"))
		}
	}
}

// An on_finally step stopped by its own timeout ended in a failure (NIKA-TIMEOUT-001, logged), not a
// cancellation: nika_task_runs_total says failure for it.
func TestTimedOutFinallyIsFailure(t *testing.T) {
	m := metrics.New(metrics.Options{})
	var finished []event.Live
	spy := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveTaskFinished && l.Attempt == 0 {
			finished = append(finished, l) // on the driver's goroutine
		}
	})
	res := runEdge(t, context.Background(), `nika: v1
workflow: edge
tasks:
  - id: build
    exec: { command: ["ok"] }
    on_finally:
      - timeout: "50ms"
        exec: { command: ["hang"] }
`, edgeVerb{}, event.LiveFanout{m, spy})
	if res.State != "success" {
		t.Fatalf("state %s, want success (an on_finally failure never changes the outcome)", res.State)
	}
	if len(finished) != 1 || finished[0].Status != "failure" || finished[0].Code != "NIKA-TIMEOUT-001" {
		t.Errorf("the on_finally step's task_finished: %+v, want failure NIKA-TIMEOUT-001", finished)
	}
	got := gathered(t, m.Gatherer(), "nika_task_runs_total", "nika_tasks_in_flight")
	want := []string{
		`nika_task_runs_total{status="failure",verb="exec",workflow="edge"} 1`,
		`nika_task_runs_total{status="success",verb="exec",workflow="edge"} 1`,
		`nika_tasks_in_flight{verb="exec"} 0`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
