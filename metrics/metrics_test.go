package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// series flattens the named families of g to "name{labels} value" lines, sorted; histograms give
// their _count and _sum lines. A family that is absent gives no line.
func series(t *testing.T, g prometheus.Gatherer, names ...string) []string {
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
			num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
			switch {
			case mt.Counter != nil:
				out = append(out, mf.GetName()+lbl+" "+num(mt.Counter.GetValue()))
			case mt.Gauge != nil:
				out = append(out, mf.GetName()+lbl+" "+num(mt.Gauge.GetValue()))
			case mt.Histogram != nil:
				out = append(out, fmt.Sprintf("%s_count%s %d", mf.GetName(), lbl, mt.Histogram.GetSampleCount()),
					mf.GetName()+"_sum"+lbl+" "+num(mt.Histogram.GetSampleSum()))
			}
		}
	}
	sort.Strings(out)
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// deploy is a scripted live stream: a failing run of workflow "deploy" (a task, an agent task that
// retries then is cancelled, provider requests, tool calls, a nudge, a stall) and a short successful
// run of "nightly".
func deploy() []event.Live {
	const wf = "deploy"
	return []event.Live{
		{Kind: event.LiveWorkflowStarted, Workflow: wf},
		{Kind: event.LiveTaskStarted, Workflow: wf, Task: "a", Verb: "exec", Attempt: 1},
		{Kind: event.LiveTaskStarted, Workflow: wf, Task: "b", Verb: "agent", Attempt: 1},
		{Kind: event.LiveBatchDispatched, Workflow: wf, Task: "b", Turn: 1, Size: 3},
		{Kind: event.LiveBatchDispatched, Workflow: wf, Task: "c", Verb: "infer", Size: 4}, // a D5 job batch: not a tool batch
		{Kind: event.LiveProviderRequest, Workflow: wf, Task: "b", Provider: "openai", Model: "openai/gpt-4o", Outcome: "ok",
			InputTokens: 100, OutputTokens: 20, Elapsed: 1500 * time.Millisecond},
		{Kind: event.LiveProviderRequest, Workflow: wf, Task: "b", Provider: "openai", Model: "openai/gpt-4o", Outcome: "rate_limited",
			IsError: true, RateLimited: true, Elapsed: 3 * time.Second},
		{Kind: event.LiveProviderRequest, Workflow: wf, Task: "b", Provider: "openai", Model: "openai/gpt-4o", Outcome: "NIKA-INFER-001",
			Code: "NIKA-INFER-001", IsError: true, Elapsed: 200 * time.Millisecond},
		{Kind: event.LiveToolCallStarted, Workflow: wf, Task: "b", Tool: "nika:read"},
		{Kind: event.LiveToolCallStarted, Workflow: wf, Task: "b", Tool: "mcp:github/create_issue", Index: 1},
		{Kind: event.LiveToolCallStarted, Workflow: wf, Task: "b", Tool: "made up", Index: 2},
		{Kind: event.LiveToolCallFinished, Workflow: wf, Task: "b", Tool: "nika:read", Elapsed: 3 * time.Millisecond},
		{Kind: event.LiveToolCallFinished, Workflow: wf, Task: "b", Tool: "mcp:github/create_issue", Index: 1, IsError: true,
			Code: "NIKA-MCP-002", Elapsed: 700 * time.Millisecond},
		{Kind: event.LiveToolCallFinished, Workflow: wf, Task: "b", Tool: "made up", Index: 2, IsError: true, Elapsed: time.Millisecond},
		{Kind: event.LiveAgentNudge, Workflow: wf, Task: "b", Outcome: "repeated_actions"}, // the agent's reason travels in Outcome
		{Kind: event.LiveAgentNudge, Workflow: wf, Task: "b", Reason: "no_progress"},
		{Kind: event.LiveAgentStalled, Workflow: wf, Task: "b", Reason: "repeated_actions"},
		{Kind: event.LiveAgentFinished, Workflow: wf, Task: "b", Turns: 6},
		{Kind: event.LiveTaskFinished, Workflow: wf, Task: "a", Verb: "exec", Attempt: 1, Status: "success", Elapsed: 300 * time.Millisecond},
		{Kind: event.LiveTaskRetrying, Workflow: wf, Task: "b", Verb: "agent", Attempt: 1, Code: "NIKA-AGENT-004"},
		{Kind: event.LiveTaskFinished, Workflow: wf, Task: "b", Verb: "agent", Attempt: 1, Status: "failure", Elapsed: 12 * time.Second},
		{Kind: event.LiveTaskStarted, Workflow: wf, Task: "b", Verb: "agent", Attempt: 2},
		{Kind: event.LiveTaskFinished, Workflow: wf, Task: "b", Verb: "agent", Attempt: 2, Status: "cancelled", Elapsed: time.Second},
		{Kind: "a_kind_from_the_future", Workflow: wf, Task: "b"}, // ignored
		{Kind: event.LiveWorkflowFinished, Workflow: wf, Status: "failure", Elapsed: 42 * time.Second},
		{Kind: event.LiveWorkflowStarted, Workflow: "nightly"},
		{Kind: event.LiveWorkflowFinished, Workflow: "nightly", Status: "success", Elapsed: 50 * time.Millisecond},
	}
}

func feed(m *Metrics, ls []event.Live) {
	for _, l := range ls {
		m.Observe(l)
	}
}

func TestScriptedStream(t *testing.T) {
	m := New(Options{Version: "1.2.3"})
	feed(m, deploy())
	g := m.Gatherer()
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{[]string{"nika_workflow_runs_total", "nika_workflow_runs_in_flight"}, []string{
			`nika_workflow_runs_in_flight 0`,
			`nika_workflow_runs_total{state="failure",workflow="deploy"} 1`,
			`nika_workflow_runs_total{state="success",workflow="nightly"} 1`,
		}},
		{[]string{"nika_task_runs_total", "nika_tasks_in_flight", "nika_task_retries_total", "nika_task_duration_seconds"}, []string{
			`nika_task_runs_total{status="success",verb="exec",workflow="deploy"} 1`,
			`nika_task_runs_total{status="failure",verb="agent",workflow="deploy"} 1`,
			`nika_task_runs_total{status="cancelled",verb="agent",workflow="deploy"} 1`,
			`nika_tasks_in_flight{verb="exec"} 0`,
			`nika_tasks_in_flight{verb="agent"} 0`,
			`nika_task_retries_total{verb="agent"} 1`,
			`nika_task_duration_seconds_count{verb="exec"} 1`,
			`nika_task_duration_seconds_sum{verb="exec"} 0.3`,
			`nika_task_duration_seconds_count{verb="agent"} 2`,
			`nika_task_duration_seconds_sum{verb="agent"} 13`,
		}},
		{[]string{"nika_llm_requests_total", "nika_llm_tokens_total", "nika_llm_rate_limited_total", "nika_llm_request_duration_seconds"}, []string{
			`nika_llm_requests_total{model="openai/gpt-4o",outcome="ok",provider="openai"} 1`,
			`nika_llm_requests_total{model="openai/gpt-4o",outcome="rate_limited",provider="openai"} 1`,
			`nika_llm_requests_total{model="openai/gpt-4o",outcome="NIKA-INFER-001",provider="openai"} 1`,
			`nika_llm_tokens_total{kind="input",model="openai/gpt-4o",provider="openai"} 100`,
			`nika_llm_tokens_total{kind="output",model="openai/gpt-4o",provider="openai"} 20`,
			`nika_llm_rate_limited_total{provider="openai"} 1`,
			`nika_llm_request_duration_seconds_count{model="openai/gpt-4o",provider="openai"} 3`,
			`nika_llm_request_duration_seconds_sum{model="openai/gpt-4o",provider="openai"} 4.7`,
		}},
		{[]string{"nika_tool_calls_total", "nika_tool_calls_in_flight", "nika_tool_call_duration_seconds"}, []string{
			`nika_tool_calls_total{outcome="ok",tool="nika:read"} 1`,
			`nika_tool_calls_total{outcome="error",tool="mcp:github/create_issue"} 1`,
			`nika_tool_calls_total{outcome="error",tool="other"} 1`,
			`nika_tool_calls_in_flight 0`,
			`nika_tool_call_duration_seconds_count{tool="nika:read"} 1`,
			`nika_tool_call_duration_seconds_sum{tool="nika:read"} 0.003`,
			`nika_tool_call_duration_seconds_count{tool="mcp:github/create_issue"} 1`,
			`nika_tool_call_duration_seconds_sum{tool="mcp:github/create_issue"} 0.7`,
			`nika_tool_call_duration_seconds_count{tool="other"} 1`,
			`nika_tool_call_duration_seconds_sum{tool="other"} 0.001`,
		}},
		{[]string{"nika_agent_nudges_total", "nika_agent_stalls_total"}, []string{
			`nika_agent_nudges_total{reason="repeated_actions"} 1`,
			`nika_agent_nudges_total{reason="no_progress"} 1`,
			`nika_agent_stalls_total 1`,
		}},
		{[]string{"nika_build_info"}, []string{
			`nika_build_info{go_version="` + runtime.Version() + `",version="1.2.3"} 1`,
		}},
	} {
		sameLines(t, strings.Join(tc.names, ", "), series(t, g, tc.names...), tc.want)
	}

	// Histogram observations land in the documented buckets.
	want := `
# HELP nika_workflow_run_duration_seconds Wall time of a workflow run, from start to its last task settled.
# TYPE nika_workflow_run_duration_seconds histogram
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="0.1"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="0.5"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="1"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="2.5"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="5"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="10"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="30"} 0
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="60"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="120"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="300"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="600"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="1800"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="3600"} 1
nika_workflow_run_duration_seconds_bucket{workflow="deploy",le="+Inf"} 1
nika_workflow_run_duration_seconds_sum{workflow="deploy"} 42
nika_workflow_run_duration_seconds_count{workflow="deploy"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="0.1"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="0.5"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="1"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="2.5"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="5"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="10"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="30"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="60"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="120"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="300"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="600"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="1800"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="3600"} 1
nika_workflow_run_duration_seconds_bucket{workflow="nightly",le="+Inf"} 1
nika_workflow_run_duration_seconds_sum{workflow="nightly"} 0.05
nika_workflow_run_duration_seconds_count{workflow="nightly"} 1
# HELP nika_tool_batch_size Tool calls in one agent turn's batch.
# TYPE nika_tool_batch_size histogram
nika_tool_batch_size_bucket{le="1"} 0
nika_tool_batch_size_bucket{le="2"} 0
nika_tool_batch_size_bucket{le="3"} 1
nika_tool_batch_size_bucket{le="4"} 1
nika_tool_batch_size_bucket{le="6"} 1
nika_tool_batch_size_bucket{le="8"} 1
nika_tool_batch_size_bucket{le="12"} 1
nika_tool_batch_size_bucket{le="16"} 1
nika_tool_batch_size_bucket{le="24"} 1
nika_tool_batch_size_bucket{le="32"} 1
nika_tool_batch_size_bucket{le="64"} 1
nika_tool_batch_size_bucket{le="+Inf"} 1
nika_tool_batch_size_sum 3
nika_tool_batch_size_count 1
# HELP nika_agent_turns Turns taken by one agent run.
# TYPE nika_agent_turns histogram
nika_agent_turns_bucket{workflow="deploy",le="1"} 0
nika_agent_turns_bucket{workflow="deploy",le="2"} 0
nika_agent_turns_bucket{workflow="deploy",le="3"} 0
nika_agent_turns_bucket{workflow="deploy",le="4"} 0
nika_agent_turns_bucket{workflow="deploy",le="5"} 0
nika_agent_turns_bucket{workflow="deploy",le="7"} 1
nika_agent_turns_bucket{workflow="deploy",le="10"} 1
nika_agent_turns_bucket{workflow="deploy",le="15"} 1
nika_agent_turns_bucket{workflow="deploy",le="20"} 1
nika_agent_turns_bucket{workflow="deploy",le="30"} 1
nika_agent_turns_bucket{workflow="deploy",le="50"} 1
nika_agent_turns_bucket{workflow="deploy",le="100"} 1
nika_agent_turns_bucket{workflow="deploy",le="+Inf"} 1
nika_agent_turns_sum{workflow="deploy"} 6
nika_agent_turns_count{workflow="deploy"} 1
`
	if err := testutil.GatherAndCompare(g, strings.NewReader(want), "nika_workflow_run_duration_seconds", "nika_tool_batch_size", "nika_agent_turns"); err != nil {
		t.Error(err)
	}
	// The Go and process collectors are registered.
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if n, err := testutil.GatherAndCount(g, name); err != nil || n != 1 {
			t.Errorf("%s: %d series (%v), want 1", name, n, err)
		}
	}
}

// No metric ever carries a run id, and the task id only behind TaskLabel, on the task metrics only.
func TestLabelSets(t *testing.T) {
	for _, taskLabel := range []bool{false, true} {
		m := New(Options{TaskLabel: taskLabel})
		feed(m, deploy())
		mfs, err := m.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{
			"nika_workflow_runs_total":           {"state", "workflow"},
			"nika_workflow_run_duration_seconds": {"workflow"},
			"nika_workflow_runs_in_flight":       nil,
			"nika_task_runs_total":               {"status", "verb", "workflow"},
			"nika_task_duration_seconds":         {"verb"},
			"nika_task_retries_total":            {"verb"},
			"nika_tasks_in_flight":               {"verb"},
			"nika_llm_requests_total":            {"model", "outcome", "provider"},
			"nika_llm_request_duration_seconds":  {"model", "provider"},
			"nika_llm_tokens_total":              {"kind", "model", "provider"},
			"nika_llm_rate_limited_total":        {"provider"},
			"nika_agent_turns":                   {"workflow"},
			"nika_agent_stalls_total":            nil,
			"nika_agent_nudges_total":            {"reason"},
			"nika_tool_calls_total":              {"outcome", "tool"},
			"nika_tool_call_duration_seconds":    {"tool"},
			"nika_tool_calls_in_flight":          nil,
			"nika_tool_batch_size":               nil,
			"nika_build_info":                    {"go_version", "version"},
		}
		if taskLabel {
			for _, n := range []string{"nika_task_runs_total", "nika_task_duration_seconds", "nika_task_retries_total", "nika_tasks_in_flight"} {
				want[n] = append(slices.Clone(want[n]), "task")
				sort.Strings(want[n])
			}
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			w, ours := want[mf.GetName()]
			if !ours {
				continue
			}
			seen[mf.GetName()] = true
			for _, mt := range mf.Metric {
				var got []string
				for _, lp := range mt.Label {
					got = append(got, lp.GetName())
					if lp.GetName() == "task" && !slices.Contains([]string{"a", "b"}, lp.GetValue()) {
						t.Errorf("%s: task label %q", mf.GetName(), lp.GetValue())
					}
				}
				if !slices.Equal(got, w) {
					t.Errorf("TaskLabel=%v: %s labels %v, want %v", taskLabel, mf.GetName(), got, w)
				}
			}
		}
		for n := range want {
			if !seen[n] {
				t.Errorf("TaskLabel=%v: %s missing from the exposition", taskLabel, n)
			}
		}
	}
}

// The label cap (D35): the first MaxLabelValues distinct values per label, the rest "other"; invalid
// tool names, invalid UTF-8 and overlong values are "other" without taking a slot.
func TestLabelCap(t *testing.T) {
	m := New(Options{MaxLabelValues: 2})
	tools := []string{"nika:read", "bogus", "nika:write", "mcp:gh/x", "nika:read", "mcp:GH/x", "mcp:gh", "nika:"}
	for _, tool := range tools {
		m.Observe(event.Live{Kind: event.LiveToolCallFinished, Tool: tool})
	}
	sameLines(t, "tools", series(t, m.Gatherer(), "nika_tool_calls_total"), []string{
		`nika_tool_calls_total{outcome="ok",tool="nika:read"} 2`,
		`nika_tool_calls_total{outcome="ok",tool="nika:write"} 1`,
		`nika_tool_calls_total{outcome="ok",tool="other"} 5`, // mcp:gh/x came third; the rest are not tool names
	})
	for _, wf := range []string{"w1", string([]byte{0xff, 'x'}), strings.Repeat("w", 200), "w2", "w3", "w1", ""} {
		m.Observe(event.Live{Kind: event.LiveWorkflowStarted, Workflow: wf})
		m.Observe(event.Live{Kind: event.LiveWorkflowFinished, Workflow: wf, Status: "success"})
	}
	sameLines(t, "workflows", series(t, m.Gatherer(), "nika_workflow_runs_total"), []string{
		`nika_workflow_runs_total{state="success",workflow="w1"} 2`,
		`nika_workflow_runs_total{state="success",workflow="w2"} 1`,
		`nika_workflow_runs_total{state="success",workflow="other"} 3`,   // invalid UTF-8, overlong, w3 (the cap is full)
		`nika_workflow_runs_total{state="success",workflow="unknown"} 1`, // an empty name takes no slot
	})
	for _, model := range []string{"openai/a", "openai/b", "openai/c"} {
		m.Observe(event.Live{Kind: event.LiveProviderRequest, Provider: "openai", Model: model})
	}
	sameLines(t, "models", series(t, m.Gatherer(), "nika_llm_requests_total"), []string{
		`nika_llm_requests_total{model="openai/a",outcome="ok",provider="openai"} 1`,
		`nika_llm_requests_total{model="openai/b",outcome="ok",provider="openai"} 1`,
		`nika_llm_requests_total{model="other",outcome="ok",provider="openai"} 1`,
	})
	// The default cap is 100.
	m = New(Options{})
	for i := range 150 {
		m.Observe(event.Live{Kind: event.LiveToolCallFinished, Tool: fmt.Sprintf("mcp:srv/t%d", i)})
	}
	if n := testutil.CollectAndCount(m.toolCalls); n != 101 {
		t.Errorf("150 distinct tools gave %d series, want 100 + other", n)
	}
	if v := testutil.ToFloat64(m.toolCalls.WithLabelValues("other", "ok")); v != 50 {
		t.Errorf("other = %v, want 50", v)
	}
}

func TestCanonicalTool(t *testing.T) {
	for name, want := range map[string]bool{
		"nika:read": true, "nika:read_file2": true, "mcp:github/create_issue": true, "mcp:my-srv/Tool-1_x": true,
		"nika:": false, "nika:Read": false, "nika:1x": false, "mcp:": false, "mcp:gh": false, "mcp:gh/": false,
		"mcp:/x": false, "mcp:Gh/x": false, "mcp:gh/x/y": false, "mcp:gh/x.y": false, "read": false, "agent:compose": false,
	} {
		if got := canonicalTool(name); got != want {
			t.Errorf("canonicalTool(%q) = %v, want %v", name, got, want)
		}
	}
}

// rateLimited is a provider adapter that answers every send rate limited.
type rateLimited struct{}

func (rateLimited) Exchange(_ context.Context, req provider.Request) provider.Outcome {
	return provider.Failed(provider.Failure{Model: req.Model, Status: 429, Reason: provider.ReasonRateLimited, Message: "slow down"})
}

// The limit gauge reads the provider's limiter at scrape time: a rate-limited answer halves it.
func TestProviderConcurrencyLimit(t *testing.T) {
	m := New(Options{})
	f := provider.NewFront("openai", rateLimited{}, provider.FrontConfig{InitialLimit: 8, MaxSends: 1})
	m.AddProvider("openai", f)
	m.AddProvider("other", provider.NewFront("anthropic", rateLimited{}, provider.FrontConfig{InitialLimit: 3}))
	sameLines(t, "before", series(t, m.Gatherer(), "nika_provider_concurrency_limit"), []string{
		`nika_provider_concurrency_limit{provider="openai"} 8`,
		`nika_provider_concurrency_limit{provider="other"} 3`,
	})
	f.Complete(context.Background(), []provider.Request{{Model: "openai/x"}})
	m.AddProvider("other", nil)
	sameLines(t, "after", series(t, m.Gatherer(), "nika_provider_concurrency_limit"), []string{
		`nika_provider_concurrency_limit{provider="openai"} 4`,
	})
	// The answer counts as rate limited at the limiter; the live stream's count of requests that
	// ended rate limited is its own (nothing observed here).
	sameLines(t, "rate limited", series(t, m.Gatherer(), "nika_provider_rate_limited_total", "nika_llm_rate_limited_total"), []string{
		`nika_provider_rate_limited_total{provider="openai"} 1`,
	})
}

// setStats is a Limiter that reports what the test set.
type setStats struct {
	mu sync.Mutex
	st provider.Stats
}

func (s *setStats) Stats() provider.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *setStats) set(st provider.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = st
}

// The four provider series read the limiter's snapshot at every scrape, labelled by provider only;
// the rate-limited answers are a counter, the others gauges.
func TestProviderSeries(t *testing.T) {
	m := New(Options{TaskLabel: true})
	openai, local := &setStats{}, &setStats{}
	openai.set(provider.Stats{Limit: 16, InFlight: 12, Waiting: 40, RateLimited: 3})
	m.AddProvider("openai", openai)
	m.AddProvider("vllm", local)
	names := []string{"nika_provider_concurrency_limit", "nika_provider_requests_in_flight",
		"nika_provider_requests_waiting", "nika_provider_rate_limited_total"}
	sameLines(t, "first scrape", series(t, m.Gatherer(), names...), []string{
		`nika_provider_concurrency_limit{provider="openai"} 16`,
		`nika_provider_concurrency_limit{provider="vllm"} 0`,
		`nika_provider_rate_limited_total{provider="openai"} 3`,
		`nika_provider_rate_limited_total{provider="vllm"} 0`,
		`nika_provider_requests_in_flight{provider="openai"} 12`,
		`nika_provider_requests_in_flight{provider="vllm"} 0`,
		`nika_provider_requests_waiting{provider="openai"} 40`,
		`nika_provider_requests_waiting{provider="vllm"} 0`,
	})
	openai.set(provider.Stats{Limit: 8, InFlight: 1, RateLimited: 5})
	m.AddProvider("vllm", nil)
	sameLines(t, "second scrape", series(t, m.Gatherer(), names...), []string{
		`nika_provider_concurrency_limit{provider="openai"} 8`,
		`nika_provider_rate_limited_total{provider="openai"} 5`,
		`nika_provider_requests_in_flight{provider="openai"} 1`,
		`nika_provider_requests_waiting{provider="openai"} 0`,
	})
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		seen++
		want := dto.MetricType_GAUGE
		if mf.GetName() == "nika_provider_rate_limited_total" {
			want = dto.MetricType_COUNTER
		}
		if mf.GetType() != want || mf.GetHelp() == "" {
			t.Errorf("%s: type %v, help %q; want %v with a help text", mf.GetName(), mf.GetType(), mf.GetHelp(), want)
		}
		for _, mt := range mf.Metric {
			if len(mt.Label) != 1 || mt.Label[0].GetName() != "provider" {
				t.Errorf("%s: labels %v, want provider only", mf.GetName(), mt.Label)
			}
		}
	}
	if seen != len(names) {
		t.Errorf("%d of the %d provider families gathered", seen, len(names))
	}
	// A provider_state on the live stream changes nothing: the collector reads the limiter itself.
	before := series(t, m.Gatherer(), names...)
	m.Observe(event.Live{Kind: event.LiveProviderState, Provider: "openai", Limit: 99, InFlight: 99, RateLimitedAnswers: 99})
	sameLines(t, "after provider_state", series(t, m.Gatherer(), names...), before)
}

// Observe from many goroutines at once (run under -race): every observation is counted.
func TestConcurrentObserve(t *testing.T) {
	m := New(Options{MaxLabelValues: 5})
	const workers, rounds = 8, 200
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			<-start // all workers begin together
			for i := range rounds {
				wf := fmt.Sprintf("wf%d", (w+i)%7) // 7 workflows over a cap of 5: the cap races too
				m.Observe(event.Live{Kind: event.LiveWorkflowStarted, Workflow: wf})
				m.Observe(event.Live{Kind: event.LiveTaskStarted, Workflow: wf, Verb: "exec"})
				m.Observe(event.Live{Kind: event.LiveToolCallStarted, Workflow: wf, Tool: "nika:read"})
				m.Observe(event.Live{Kind: event.LiveToolCallFinished, Workflow: wf, Tool: fmt.Sprintf("mcp:s/t%d", i%9)})
				m.Observe(event.Live{Kind: event.LiveTaskFinished, Workflow: wf, Verb: "exec", Status: "success"})
				m.Observe(event.Live{Kind: event.LiveWorkflowFinished, Workflow: wf, Status: "success"})
			}
		})
	}
	close(start)
	wg.Wait()
	var runs, series float64
	mfs, _ := m.Gatherer().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "nika_workflow_runs_total" {
			for _, mt := range mf.Metric {
				runs += mt.Counter.GetValue()
				series++
			}
		}
	}
	if runs != workers*rounds || series != 6 {
		t.Errorf("runs = %v over %v series, want %d over 6 (5 workflows + other)", runs, series, workers*rounds)
	}
	for _, g := range []prometheus.Collector{m.runsInFlight, m.tasksInFlight, m.toolsInFlight} {
		if v := testutil.ToFloat64(g); v != 0 {
			t.Errorf("in-flight gauge = %v after every run ended, want 0", v)
		}
	}
	if n := testutil.CollectAndCount(m.toolCalls); n != 6 {
		t.Errorf("tool series = %d, want 6 (5 tools + other)", n)
	}
}

func TestHandler(t *testing.T) {
	m := New(Options{Version: "9.9.9"})
	feed(m, deploy())
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`nika_workflow_runs_total{state="failure",workflow="deploy"} 1`,
		`nika_build_info{go_version="` + runtime.Version() + `",version="9.9.9"} 1`,
		"# TYPE nika_task_duration_seconds histogram",
		"go_goroutines ",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// pushRecorder is a fake Pushgateway that records one push.
type pushRecorder struct {
	mu                  sync.Mutex
	method, path, ctype string
	body                string
}

func (p *pushRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.method, p.path, p.ctype, p.body = r.Method, r.URL.EscapedPath(), r.Header.Get("Content-Type"), string(b)
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func TestPush(t *testing.T) {
	m := New(Options{})
	feed(m, deploy())
	rec := &pushRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	if err := m.Push(context.Background(), srv.URL, "deploy"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.method != http.MethodPut || rec.path != "/metrics/job/nika/workflow/deploy" || !strings.HasPrefix(rec.ctype, "text/plain") {
		t.Errorf("push %s %s (%s), want PUT /metrics/job/nika/workflow/deploy, text/plain", rec.method, rec.path, rec.ctype)
	}
	for _, want := range []string{
		`nika_workflow_runs_total{state="failure"} 1`, // the workflow label moved to the grouping key
		`nika_task_runs_total{status="cancelled",verb="agent"} 1`,
		`nika_llm_tokens_total{kind="input",model="openai/gpt-4o",provider="openai"} 100`,
		`nika_agent_turns_count 1`,
		`nika_build_info{`,
	} {
		if !strings.Contains(rec.body, want) {
			t.Errorf("pushed body lacks %q", want)
		}
	}
	if strings.Contains(rec.body, "workflow=") || strings.Contains(rec.body, `state="success"`) {
		t.Errorf("pushed body holds a workflow label or the other workflow's run:\n%s", rec.body)
	}
	// The push read a copy: the registry still has its workflow labels.
	if v := testutil.ToFloat64(m.runs.WithLabelValues("deploy", "failure")); v != 1 {
		t.Errorf("after the push, runs{deploy,failure} = %v, want 1", v)
	}
	if err := m.Push(context.Background(), srv.URL+"/nowhere\x7f", "deploy"); err == nil {
		t.Error("a push to a malformed URL succeeded")
	}
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refused.Close()
	if err := m.Push(context.Background(), refused.URL, "deploy"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a refused push: err = %v, want one naming the 400", err)
	}
}

// A Pushgateway URL with credentials (https://user:password@host) pushes with basic auth, and a
// failed push never prints the password (it goes to stderr, often a CI log).
func TestPushCredentials(t *testing.T) {
	m := New(Options{})
	feed(m, deploy())
	var mu sync.Mutex
	var user, pass string
	var ok bool
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		user, pass, ok = r.BasicAuth()
		mu.Unlock()
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer refused.Close()
	u := strings.Replace(refused.URL, "http://", "http://ci:s3cret@", 1)
	err := m.Push(context.Background(), u, "deploy")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want one naming the 503", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the push error shows the password: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !ok || user != "ci" || pass != "s3cret" {
		t.Errorf("basic auth %q %q %v, want ci s3cret", user, pass, ok)
	}
}

// BenchmarkObserve measures one live observation of each common kind, from parallel goroutines as
// the planner and the agents deliver them.
func BenchmarkObserve(b *testing.B) {
	m := New(Options{})
	ls := deploy()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Observe(ls[i%len(ls)])
			i++
		}
	})
}
