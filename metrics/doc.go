// Package metrics turns the live stream (event.Live, DECISIONS.md D19) into Prometheus metrics on a
// private registry (ARCHITECTURE.md §5). It reads only the live stream, never the canonical one, and
// nothing reads the metrics to decide anything. A *Metrics is an event.LiveSink: hand it to
// planner.Options.Live (through an event.LiveFanout when the terminal view also watches). Observe is
// safe for concurrent use and does no I/O: a label lookup and an atomic add per metric.
//
// # Metrics
//
// Workflow runs (from workflow_started / workflow_finished, which the planner emits first and last):
//
//	nika_workflow_runs_total{workflow,state}          counter; state = success|failure|cancelled
//	nika_workflow_run_duration_seconds{workflow}      histogram; buckets 0.1 0.5 1 2.5 5 10 30 60 120 300 600 1800 3600
//	nika_workflow_runs_in_flight                      gauge
//
// Tasks (one observation per job: an attempt of a task or of one for_each iteration, or an on_finally
// step):
//
//	nika_task_runs_total{workflow,verb,status}        counter; status = success|failure|cancelled
//	nika_task_duration_seconds{verb}                  histogram; buckets 0.01 0.05 0.1 0.25 0.5 1 2.5 5 10 30 60 120 300 600 1800
//	nika_task_retries_total{verb}                     counter (a failed attempt that will be retried)
//	nika_tasks_in_flight{verb}                        gauge
//
// Model providers (one provider_request per request, after the provider's own retries; from infer and
// the agent loop):
//
//	nika_llm_requests_total{provider,model,outcome}   counter; outcome = ok, or the failure as the live stream names it
//	nika_llm_request_duration_seconds{provider,model} histogram; buckets 0.1 0.25 0.5 1 2 4 8 15 30 60 120
//	nika_llm_tokens_total{provider,model,kind}        counter; kind = input|output
//	nika_llm_rate_limited_total{provider}             counter (requests that ended rate limited)
//
// The adaptive limiter of each provider registered with AddProvider, read at scrape time (one
// Limiter.Stats snapshot per provider and scrape), so a user sees why a run is as fast as it is:
//
//	nika_provider_concurrency_limit{provider}         gauge (the requests in flight the limiter admits now)
//	nika_provider_requests_in_flight{provider}        gauge (sent, not answered yet)
//	nika_provider_requests_waiting{provider}          gauge (waiting for a slot: the limit, a Retry-After pause, a budget)
//	nika_provider_rate_limited_total{provider}        counter (rate-limited answers, every send counted)
//
// The two rate-limited counters are not the same count: nika_llm_rate_limited_total counts requests
// whose final outcome was rate_limited (the live stream's provider_request, after the provider's own
// retries gave up), nika_provider_rate_limited_total every 429 the provider answered, retried or not
// (the limiter's own count, since the provider's front was built: the run for `nika run`, the process
// for `nika serve`). A run that recovered from every 429 shows 0 in the first and the 429s in the
// second. These four are not fed from the live stream: Observe ignores provider_state, whose numbers
// are the same snapshot, so nothing is counted twice.
//
// Agents and tools (tool calls from the agent's progress hook and from invoke):
//
//	nika_agent_turns{workflow}                        histogram, one observation per agent run; buckets 1 2 3 4 5 7 10 15 20 30 50 100
//	nika_agent_stalls_total                           counter
//	nika_agent_nudges_total{reason}                   counter
//	nika_tool_calls_total{tool,outcome}               counter; outcome = ok|error
//	nika_tool_call_duration_seconds{tool}             histogram; buckets 0.001 0.005 0.01 0.05 0.1 0.25 0.5 1 2.5 5 10 30 60 120
//	nika_tool_calls_in_flight                         gauge
//	nika_tool_batch_size                              histogram, calls per agent tool batch; buckets 1 2 3 4 6 8 12 16 24 32 64
//
// And nika_build_info{version,go_version} (always 1), plus the Go runtime (go_*) and process
// (process_*) collectors.
//
// # Provider state on the live stream
//
// A Sampler (StartSampler) puts the same snapshots on the live stream, for the terminal progress view:
// every DefaultSampleInterval (250 ms) one provider_state per provider whose snapshot changed, and when
// it stops one final provider_state per provider. Sampler.StopAtFinish stops it when workflow_finished
// passes, before passing it on, so workflow_finished stays the last observation of a run. It lives here
// rather than in provider (which does not import event) or cmd/nika (which only wires): it reads the
// same Limiter interface as the collector. LimitersOf picks the observable instances of a
// provider.Registry (the mock has no limiter).
//
// # Bounded labels
//
// A label never carries a run id. The task id is a label only with Options.TaskLabel (the CLI's
// --metrics-task-label), and then only on the nika_task_* metrics: it is high-cardinality (one series
// per task of every workflow ever run), so it is off by default.
//
// Label values that come from outside the binary — workflow, model, provider (of nika_llm_*), tool,
// task, the nudge reason and the LLM outcome — are capped per label: the first
// Options.MaxLabelValues distinct values (default 100) are kept, in the order they are first seen,
// and every later one is reported as "other" for the life of the Metrics (D35: a long-running
// `nika serve` must not grow without bound on submitted YAML). A value that is not valid UTF-8 or longer
// than 128 bytes is "other" at once (Prometheus refuses invalid UTF-8), an empty one is "unknown".
// Tool values are the canonical tool names, MCP tools kept as `mcp:<server>/<tool>`; a name outside
// that grammar (`nika:<name>` or `mcp:<server>/<tool>`, LANGUAGE.md §7) — a tool a model made up —
// is "other" without taking a slot. verb, status, state, kind and the tool outcome come from the
// code, a fixed set. The provider label of nika_provider_* is not capped: its values are the names
// the caller passed to AddProvider, the providers the binary itself built from its provider table.
//
// Decisions where the design is silent: the LLM outcome label is "ok" or the live stream's Outcome of
// the failure (the verbs give the NIKA code today, D19 names the D27 reason; either is a small set,
// capped anyway); a nudge with no Reason takes its Outcome (the agent fills Outcome with the reason);
// batch_dispatched counts toward nika_tool_batch_size only when Verb is empty (the planner's D5 job
// batches carry their verb); a request counts as rate limited when RateLimited is set or its Outcome
// is "rate_limited" (the agent loop does not set RateLimited yet); Push returns a plain wrapped error,
// not a *spec.Error, because a push is no part of a workflow run and has no NIKA code.
//
// # Exposition
//
// Handler serves the registry for a scrape. Push sends it to a Pushgateway once a batch run ends (the
// Prometheus convention for batch jobs): job "nika", grouping key workflow=<name>. The pushed series
// are the ones of that workflow with the workflow label moved into the grouping key (the Pushgateway
// refuses a pushed label that repeats a grouping label) plus every series with no workflow label.
package metrics
