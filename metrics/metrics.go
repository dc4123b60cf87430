package metrics

import (
	"context"
	"fmt"
	"net/http"
	neturl "net/url"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
)

// DefaultMaxLabelValues is the default cap on the distinct values of one capped label (D35).
const DefaultMaxLabelValues = 100

// Overflow is the value a capped label takes once its cap is reached.
const Overflow = "other"

// Job is the Pushgateway job name of every push.
const Job = "nika"

// Options configure New. The zero value is the default.
type Options struct {
	// Version is nika_build_info's version label; "" reports "unknown".
	Version string
	// TaskLabel adds a task label (the task id) to the nika_task_* metrics. High-cardinality: one
	// series per task of every workflow run by this process; off by default.
	TaskLabel bool
	// MaxLabelValues caps the distinct values of each capped label; 0 means DefaultMaxLabelValues.
	MaxLabelValues int
}

// Limiter is what the provider metrics and the Sampler read from a provider: a snapshot of its
// adaptive limiter (*provider.Front's). Stats is called at every scrape and every sample, so it must
// be cheap and safe for concurrent use.
type Limiter interface {
	Stats() provider.Stats
}

var _ Limiter = (*provider.Front)(nil)

// Metrics holds every nika metric on its own registry. Build it with New; it is safe for concurrent
// use.
type Metrics struct {
	reg       *prometheus.Registry
	taskLabel bool

	workflows, models, providers, tools, tasks, reasons, outcomes *capper

	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	runsInFlight  prometheus.Gauge
	taskRuns      *prometheus.CounterVec
	taskDuration  *prometheus.HistogramVec
	taskRetries   *prometheus.CounterVec
	tasksInFlight *prometheus.GaugeVec
	llmRequests   *prometheus.CounterVec
	llmDuration   *prometheus.HistogramVec
	llmTokens     *prometheus.CounterVec
	llmLimited    *prometheus.CounterVec
	limits        *providerCollector
	agentTurns    *prometheus.HistogramVec
	agentStalls   prometheus.Counter
	agentNudges   *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	toolsInFlight prometheus.Gauge
	toolBatch     prometheus.Histogram
}

var _ event.LiveSink = (*Metrics)(nil)

// New returns the metrics of issue 7 registered on a fresh private registry, with the build info, Go
// and process collectors.
func New(opts Options) *Metrics {
	limit := opts.MaxLabelValues
	if limit <= 0 {
		limit = DefaultMaxLabelValues
	}
	version := opts.Version
	if version == "" {
		version = "unknown"
	}
	m := &Metrics{
		reg:       prometheus.NewRegistry(),
		taskLabel: opts.TaskLabel,
		workflows: newCapper(limit), models: newCapper(limit), providers: newCapper(limit), tools: newCapper(limit),
		tasks: newCapper(limit), reasons: newCapper(limit), outcomes: newCapper(limit),
		limits: newProviderCollector(),
	}
	task := func(labels ...string) []string {
		if opts.TaskLabel {
			return append(labels, "task")
		}
		return labels
	}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_workflow_runs_total",
		Help: "Workflow runs that ended, by workflow and final state."}, []string{"workflow", "state"})
	m.runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nika_workflow_run_duration_seconds",
		Help:    "Wall time of a workflow run, from start to its last task settled.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}}, []string{"workflow"})
	m.runsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "nika_workflow_runs_in_flight",
		Help: "Workflow runs started and not yet finished."})
	m.taskRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_task_runs_total",
		Help: "Jobs (task attempts, for_each iterations, on_finally steps) that ended, by status."},
		task("workflow", "verb", "status"))
	m.taskDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nika_task_duration_seconds",
		Help:    "Wall time of one job (a task attempt, a for_each iteration, an on_finally step).",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}}, task("verb"))
	m.taskRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_task_retries_total",
		Help: "Failed attempts that the task's retry policy will repeat."}, task("verb"))
	m.tasksInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nika_tasks_in_flight",
		Help: "Jobs running now."}, task("verb"))
	m.llmRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_llm_requests_total",
		Help: "Model requests answered (after the provider's own retries), by outcome."}, []string{"provider", "model", "outcome"})
	m.llmDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nika_llm_request_duration_seconds",
		Help:    "Wall time of a model request, limiter waits and retries included.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}}, []string{"provider", "model"})
	m.llmTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_llm_tokens_total",
		Help: "Tokens the providers reported, by kind (input or output)."}, []string{"provider", "model", "kind"})
	m.llmLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_llm_rate_limited_total",
		Help: "Model requests that ended rate limited."}, []string{"provider"})
	m.agentTurns = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nika_agent_turns",
		Help:    "Turns taken by one agent run.",
		Buckets: []float64{1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50, 100}}, []string{"workflow"})
	m.agentStalls = prometheus.NewCounter(prometheus.CounterOpts{Name: "nika_agent_stalls_total",
		Help: "Agent runs stopped by the stall guard."})
	m.agentNudges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_agent_nudges_total",
		Help: "Nudges the agent guard sent, by reason."}, []string{"reason"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nika_tool_calls_total",
		Help: "Tool calls that ended, by tool and outcome (ok or error)."}, []string{"tool", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nika_tool_call_duration_seconds",
		Help:    "Wall time of one tool call.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"tool"})
	m.toolsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "nika_tool_calls_in_flight",
		Help: "Tool calls running now."})
	m.toolBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nika_tool_batch_size",
		Help:    "Tool calls in one agent turn's batch.",
		Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64}})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nika_build_info",
		Help: "Always 1; the labels say which nika build is running."}, []string{"version", "go_version"})
	build.WithLabelValues(version, runtime.Version()).Set(1)

	m.reg.MustRegister(m.runs, m.runDuration, m.runsInFlight, m.taskRuns, m.taskDuration, m.taskRetries,
		m.tasksInFlight, m.llmRequests, m.llmDuration, m.llmTokens, m.llmLimited, m.limits, m.agentTurns,
		m.agentStalls, m.agentNudges, m.toolCalls, m.toolDuration, m.toolsInFlight, m.toolBatch, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe implements event.LiveSink: it updates the metrics one live observation speaks of and ignores
// kinds it does not know.
func (m *Metrics) Observe(l event.Live) {
	switch l.Kind {
	case event.LiveWorkflowStarted:
		m.runsInFlight.Inc()
	case event.LiveWorkflowFinished:
		wf := m.workflows.value(l.Workflow)
		m.runsInFlight.Dec()
		m.runs.WithLabelValues(wf, fixed(l.Status)).Inc()
		m.runDuration.WithLabelValues(wf).Observe(l.Elapsed.Seconds())
	case event.LiveTaskStarted:
		m.tasksInFlight.WithLabelValues(m.task(l, fixed(l.Verb))...).Inc()
	case event.LiveTaskFinished:
		verb := fixed(l.Verb)
		m.tasksInFlight.WithLabelValues(m.task(l, verb)...).Dec()
		m.taskRuns.WithLabelValues(m.task(l, m.workflows.value(l.Workflow), verb, fixed(l.Status))...).Inc()
		m.taskDuration.WithLabelValues(m.task(l, verb)...).Observe(l.Elapsed.Seconds())
	case event.LiveTaskRetrying:
		m.taskRetries.WithLabelValues(m.task(l, fixed(l.Verb))...).Inc()
	case event.LiveProviderRequest:
		prov, model := m.providers.value(l.Provider), m.models.value(l.Model)
		outcome := "ok"
		if l.IsError {
			outcome = m.outcomes.value(l.Outcome)
			if l.Outcome == "" || l.Outcome == "ok" {
				outcome = "error"
			}
		}
		m.llmRequests.WithLabelValues(prov, model, outcome).Inc()
		m.llmDuration.WithLabelValues(prov, model).Observe(l.Elapsed.Seconds())
		m.llmTokens.WithLabelValues(prov, model, "input").Add(float64(max(l.InputTokens, 0)))
		m.llmTokens.WithLabelValues(prov, model, "output").Add(float64(max(l.OutputTokens, 0)))
		if l.RateLimited || l.Outcome == provider.ReasonRateLimited {
			m.llmLimited.WithLabelValues(prov).Inc()
		}
	case event.LiveToolCallStarted:
		m.toolsInFlight.Inc()
	case event.LiveToolCallFinished:
		tool := m.tool(l.Tool)
		outcome := "ok"
		if l.IsError {
			outcome = "error"
		}
		m.toolsInFlight.Dec()
		m.toolCalls.WithLabelValues(tool, outcome).Inc()
		m.toolDuration.WithLabelValues(tool).Observe(l.Elapsed.Seconds())
	case event.LiveBatchDispatched:
		if l.Verb == "" { // an agent's tool batch; the planner's D5 job batches carry their verb
			m.toolBatch.Observe(float64(l.Size))
		}
	case event.LiveAgentNudge:
		reason := l.Reason
		if reason == "" {
			reason = l.Outcome
		}
		m.agentNudges.WithLabelValues(m.reasons.value(reason)).Inc()
	case event.LiveAgentStalled:
		m.agentStalls.Inc()
	case event.LiveAgentFinished:
		m.agentTurns.WithLabelValues(m.workflows.value(l.Workflow)).Observe(float64(l.Turns))
	}
}

// task appends the task label when Options.TaskLabel asks for it.
func (m *Metrics) task(l event.Live, labels ...string) []string {
	if m.taskLabel {
		return append(labels, m.tasks.value(l.Task))
	}
	return labels
}

// tool caps a tool label value; a name outside the canonical grammar takes no slot.
func (m *Metrics) tool(name string) string {
	if !canonicalTool(name) {
		return Overflow
	}
	return m.tools.value(name)
}

// AddProvider makes the nika_provider_* series of provider name (the concurrency limit, the requests
// in flight and waiting, the rate-limited answers) report l.Stats() at every scrape. A later call for
// the same name replaces it; a nil l removes it. Provider names come from the binary's provider table
// (the caller registers the instances it built), so they are not capped.
func (m *Metrics) AddProvider(name string, l Limiter) {
	m.limits.mu.Lock()
	defer m.limits.mu.Unlock()
	if l == nil {
		delete(m.limits.byName, name)
		return
	}
	m.limits.byName[name] = l
}

// Registerer is the private registry, for a caller that adds collectors of its own (nika serve's HTTP
// metrics).
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Gatherer is the private registry, for tests and exposition.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry at /metrics (text exposition format, or what the scraper negotiates).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Push sends the metrics of workflow to the Pushgateway at url (PUT: they replace what an earlier run
// of the same workflow pushed), job "nika", grouping key workflow=<name>. The series labelled with
// another workflow are left out, and the workflow label of the others moves into the grouping key. The
// error is a plain wrapped error, not a *spec.Error: a push is no part of the workflow's run and has no
// NIKA code; the caller reports it and the run's outcome stands.
func (m *Metrics) Push(ctx context.Context, url, workflow string) error {
	wf := m.workflows.value(workflow)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := m.reg.Gather()
		return onlyWorkflow(mfs, wf), err
	})
	// Credentials in the URL go as basic auth, so that no error message (stderr, often a CI log)
	// shows the password.
	var user *neturl.Userinfo
	if u, err := neturl.Parse(url); err == nil && u.User != nil {
		user, u.User = u.User, nil
		url = u.String()
	}
	p := push.New(url, Job).Gatherer(g).Grouping("workflow", wf).Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	if user != nil {
		pass, _ := user.Password()
		p = p.BasicAuth(user.Username(), pass)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("pushing the metrics of workflow %q to the Pushgateway at %s: %w (check the URL and that the Pushgateway is up)", wf, url, err)
	}
	return nil
}

// onlyWorkflow keeps the series of workflow wf, without their workflow label, and the series with no
// workflow label; families left empty are dropped. It works on a deep copy: a gathered metric's label
// pairs may share memory with the live metric.
func onlyWorkflow(mfs []*dto.MetricFamily, wf string) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, orig := range mfs {
		mf := proto.Clone(orig).(*dto.MetricFamily)
		var kept []*dto.Metric
		for _, mt := range mf.Metric {
			keep := true
			var labels []*dto.LabelPair
			for _, lp := range mt.Label {
				if lp.GetName() == "workflow" {
					keep = lp.GetValue() == wf
					continue
				}
				labels = append(labels, lp)
			}
			if keep {
				mt.Label = labels
				kept = append(kept, mt)
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out
}

// providerCollector reads every registered limiter at scrape time (D19: process-wide state has its
// own collector rather than a copy updated from events). One Stats call per provider and scrape, so
// the four series of a provider are one snapshot.
type providerCollector struct {
	limit, inFlight, waiting, rateLimited *prometheus.Desc

	mu     sync.Mutex
	byName map[string]Limiter
}

func newProviderCollector() *providerCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"provider"}, nil)
	}
	return &providerCollector{
		limit: desc("nika_provider_concurrency_limit",
			"The current limit of the provider's adaptive concurrency limiter (requests in flight it admits)."),
		inFlight: desc("nika_provider_requests_in_flight",
			"Requests sent to the provider and not answered yet."),
		waiting: desc("nika_provider_requests_waiting",
			"Requests waiting for a slot of the provider's limiter (its limit, a Retry-After pause or a budget)."),
		rateLimited: desc("nika_provider_rate_limited_total",
			"Answers of the provider that were rate limited, each send counted, retried or not."),
		byName: map[string]Limiter{},
	}
}

func (c *providerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.inFlight
	ch <- c.waiting
	ch <- c.rateLimited
}

func (c *providerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, l := range c.byName {
		st := l.Stats()
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(st.Limit), name)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.InFlight), name)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting), name)
		ch <- prometheus.MustNewConstMetric(c.rateLimited, prometheus.CounterValue, float64(st.RateLimited), name)
	}
}

// fixed is a label value the code chose from a small set (verb, status, state); empty is "unknown".
func fixed(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}
