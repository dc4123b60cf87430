// Package agent is the `agent` verb (AGENT.md): a ReAct loop over the run's shared provider
// registry, offering the tools the task's `tools:` whitelist (and permits.tools, D29) admits,
// dispatching each turn's calls in parallel (package dispatch) and folding them in request order,
// with stall detection (package guard) and tool routing (package router).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// Codes raised by the loop (AGENT.md §12).
const (
	CodeMaxTurns  = "NIKA-AGENT-001"
	CodeMaxTokens = "NIKA-AGENT-002"
	CodeStalled   = guard.CodeStalled
	CodeParam     = "NIKA-AGENT-004"
	CodeWhitelist = "NIKA-SEC-002"
	CodeSchema    = "NIKA-INFER-002"
	CodeUnknown   = "NIKA-INVOKE-001"
	CodeArgs      = "NIKA-INVOKE-002"
	CodeDefs      = "NIKA-AGENT-006" // the tool-definition source (an MCP server's tools/list) failed
	CodeCancel    = fields.CodeCancel
)

// Stages of NIKA-INFER-002 raised by the loop.
const (
	StageCompile  = "compile"
	StageDone     = "done"
	StageFinalize = "finalize"
)

// Defaults and limits of AGENT.md §1.1.
const (
	DefaultMaxTurns   = 10
	MaxMaxTurns       = 1000
	SchemaRetryBudget = 2
	composeMaxBytes   = 262144
	composeListed     = 12
	maxNameBytes      = 256
	digestPart        = 512
	digestMax         = 2048
	reaskSchemaChars  = 4096
)

// ReaskText is the exact re-ask text of AGENT.md §5.4 (detail, then schema).
const ReaskText = "Your previous reply does not match the required output schema. Validation error: %s. Reply again with one JSON value that satisfies the JSON Schema below, with no prose and no code fences:\n%s"

// Config is the engine-internal configuration of AGENT.md §1.3 (never YAML).
type Config struct {
	MaxParallelTools int           // 0 → 8; accepted 0..1024
	SpillThreshold   int           // bytes; 0 → 16 KiB (only with Verb.Blobs)
	SpillHead        int           // bytes; 0 → 2 KiB
	ToolTimeout      time.Duration // per call; 0 = none
	Guard            guard.Config
	Router           router.Config
}

// Verb runs agent jobs. It holds no per-run state and is safe for concurrent use.
type Verb struct {
	// Providers serves every model of the run (one instance per provider, shared).
	Providers *provider.Registry
	// Builtins runs the nika: tools; nil means none are in this build.
	Builtins *tools.Builtins
	// Tools is the run's source of mcp: tools (its MCP client): their definitions join the
	// universe of every agent whose whitelist and permits.tools admit them, and their calls go
	// to it. nil means no MCP tools.
	Tools  tools.Source
	Config Config
	// Blobs, when set, stores tool results over Config.SpillThreshold, and the model gets their
	// head and the blob's hash instead (AGENT.md §4.4). Nil: results are fed back whole.
	Blobs BlobStore

	// exec, when set (tests only), replaces Builtins.Execute for admitted nika: tools; it is the
	// tool seam of AGENT.md §10.3 that tests replace with byte-stable doubles.
	exec func(ctx context.Context, c dispatch.Call) (string, json.RawMessage, error)

	// Observe, when non-nil, is called once per run (per job, per attempt), on the goroutine that
	// runs that job, before its first loop event; the Observer it returns receives that run's loop
	// events (AGENT.md §2, §10.1). It must return a fresh Observer on every call: an Observer is
	// never shared between concurrent runs (RunBatch runs jobs concurrently). Returning nil, or a
	// nil Observe, means no observer. It does not change what goes to the job's Emit.
	Observe func(job workflow.Job) Observer
}

// run is the state of one attempt, owned by the loop goroutine.
type run struct {
	turn     int // the current turn, for live notes
	v        *Verb
	job      workflow.Job
	prov     provider.Provider
	native   bool
	prompt   string
	system   string
	temp     *float64
	maxTurns int
	blame    string
	maxTok   int
	globs    []string
	sch      *schema.Schema
	schDoc   any
	universe []provider.ToolDef
	names    []string // the canonical names of universe, in its order (Request.Admitted)
	byName   map[string]provider.ToolDef
	rt       *router.Router
	gd       *guard.Guard
	obs      Observer // nil = none; this run's only

	msgs     []provider.Message
	usage    []workflow.Usage
	total    int
	lastText string
	digest   string
}

// Run runs one agent job (planner.Verb). The output is the final answer: the last assistant text,
// nika:done's result, or with `schema:` the validated JSON value. Outcome.Usage holds one entry per
// provider request, re-asks included.
func (v *Verb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	r, err := v.arm(ctx, job)
	if err != nil {
		return workflow.Failed(err)
	}
	if v.Observe != nil {
		r.obs = v.Observe(job)
	}
	r.observe(EventRunStarted, 0, map[string]any{"model": job.Model, "universe": r.rt.Universe(), "routed": r.rt.Routed()})
	out, ferr := r.loop(ctx)
	if ferr == nil {
		r.observe(EventFinished, 0, map[string]any{"turns": r.turn, "total_tokens": r.total})
	}
	fin := workflow.LiveNote{Kind: event.LiveAgentFinished, Outcome: "ok", Turns: r.turn}
	if ferr != nil {
		fin.Outcome, fin.Code, fin.IsError = ferr.Code, ferr.Code, true
	}
	r.live(fin)
	if ferr != nil {
		return workflow.Outcome{Err: ferr, Usage: r.usage}
	}
	return workflow.Outcome{Output: out, Usage: r.usage}
}

// paramErr is a field of the task invalid only after evaluation: NIKA-VAR-006
// for every verb (D27).
func paramErr(param, format string, args ...any) *spec.Error {
	detail := fmt.Sprintf(format, args...)
	return spec.NewError(spec.CodeVarRuntime, "invalid agent field `"+param+"`: "+detail, map[string]any{"field": param, "detail": detail})
}

// apiErr is a misuse of the Go API by an embedding program (bad Config, no
// providers): NIKA-AGENT-004 (D27).
func apiErr(param, format string, args ...any) *spec.Error {
	detail := fmt.Sprintf(format, args...)
	return spec.NewError(CodeParam, "invalid agent configuration `"+param+"`: "+detail, map[string]any{"param": param, "detail": detail})
}

// arm is AGENT.md §3: parameters, schema, whitelist, universe, model, budgets, router and guard.
func (v *Verb) arm(ctx context.Context, job workflow.Job) (*run, *spec.Error) {
	r := &run{v: v, job: job}
	f := job.Fields
	prompt, ok, err := fields.String(f, "prompt")
	switch {
	case err != nil:
		return nil, paramErr("prompt", "%s", err.Message)
	case !ok || strings.TrimSpace(prompt) == "":
		return nil, paramErr("prompt", "`prompt` is empty after evaluation")
	}
	r.prompt = prompt
	if r.system, _, err = fields.String(f, "system"); err != nil {
		return nil, paramErr("system", "%s", err.Message)
	}
	if n, ok, err := fields.Integer(f, "max_turns"); err != nil {
		return nil, paramErr("max_turns", "%s", err.Message)
	} else if ok {
		if n < 1 || n > MaxMaxTurns {
			return nil, paramErr("max_turns", "must be from 1 to %d, not %d", MaxMaxTurns, n)
		}
		r.maxTurns, r.blame = n, "caller"
	} else {
		r.maxTurns, r.blame = DefaultMaxTurns, "contract"
	}
	if n, ok, err := fields.Integer(f, "max_tokens_total"); err != nil {
		return nil, paramErr("max_tokens_total", "%s", err.Message)
	} else if ok {
		if n < 1 {
			return nil, paramErr("max_tokens_total", "must be a positive integer, not %d", n)
		}
		r.maxTok = n
	}
	if t, ok, err := fields.Number(f, "temperature"); err != nil {
		return nil, paramErr("temperature", "%s", err.Message)
	} else if ok {
		if t < 0 || t > 2 {
			return nil, paramErr("temperature", "must be from 0 to 2, not %v", t)
		}
		r.temp = &t
	}
	globs, perr := toolGlobs(f["tools"])
	if perr != nil {
		return nil, perr
	}
	r.globs = globs
	if err := (dispatch.Config{MaxParallel: v.Config.MaxParallelTools, CallTimeout: v.Config.ToolTimeout}).Validate(); err != nil {
		return nil, apiErr("max_parallel_tools", "%v", err)
	}
	if doc, ok := f["schema"]; ok && doc != nil {
		sch, cerr := schema.Compile(doc)
		if cerr != nil {
			return nil, spec.NewError(CodeSchema, fmt.Sprintf("`schema` does not compile: %v", cerr),
				map[string]any{"stage": StageCompile, "detail": cerr.Error()})
		}
		r.sch, r.schDoc = sch, doc
	}
	if err := r.buildUniverse(ctx); err != nil {
		return nil, err
	}
	if job.Model == "" {
		return nil, paramErr("model", "no model resolves for this task")
	}
	if v.Providers == nil {
		return nil, apiErr("model", "no model providers are configured")
	}
	p, ferr := v.Providers.For(job.Model)
	if ferr != nil {
		return nil, paramErr("model", "%s", ferr.Message)
	}
	r.prov = p
	if ns, ok := p.(provider.NativeSchema); ok && ns.SupportsSchema(job.Model) {
		r.native = true
	}
	defs := make([]router.Def, len(r.universe))
	for i, d := range r.universe {
		defs[i] = router.Def{Name: d.Name, Description: d.Description}
	}
	r.rt = router.New(v.Config.Router, defs)
	r.gd = guard.New(v.Config.Guard)
	return r, nil
}

func toolGlobs(x any) ([]string, *spec.Error) {
	switch l := x.(type) {
	case nil:
		return nil, nil
	case []string:
		return append([]string(nil), l...), nil
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, paramErr("tools", "entry %d is %s, not a string", i, fields.KindOf(e))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, paramErr("tools", "must be a list of tool globs, not %s", fields.KindOf(x))
}

// admitted is D29: the whitelist and, when the workflow has permits, permits.tools.
func (r *run) admitted(name string) bool {
	if !spec.ToolAllowed(r.globs, name) {
		return false
	}
	return r.job.Permits == nil || spec.ToolAllowed(r.job.Permits.Tools, name)
}

// clean reports whether a tool name passes §3.1 step 3 / §5.2 b.
func clean(name string) bool {
	if name == "" || len(name) > maxNameBytes {
		return false
	}
	for _, c := range name {
		if unicode.IsControl(c) {
			return false
		}
	}
	first, last := []rune(name)[0], []rune(name)[len([]rune(name))-1]
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// rank is the author rank of §1.2: the index of the first positive rule matching name.
func (r *run) rank(name string) int {
	for i, g := range r.globs {
		if strings.HasPrefix(g, "!") {
			continue
		}
		if spec.ToolAllowed([]string{g}, name) {
			return i
		}
	}
	return len(r.globs)
}

// buildUniverse is §3.1: the builtins of this build and the MCP tools of the servers the
// whitelist and permits.tools can reach, as one list sorted by name (§2), minus loop-owned,
// denied, unclean and duplicate names, then the synthesized nika:done and nika:compose,
// stable-sorted by author rank. A server whose tools cannot be listed fails the arming with
// NIKA-AGENT-006, transient when the source's error is.
func (r *run) buildUniverse(ctx context.Context) *spec.Error {
	r.byName = map[string]provider.ToolDef{}
	if len(r.globs) == 0 {
		return nil
	}
	all := catalog.All()
	bs := make([]*catalog.Builtin, 0, len(all))
	for _, b := range all {
		bs = append(bs, b)
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	var u []provider.ToolDef
	for _, b := range bs {
		n := b.Name
		if n == router.NameDone || n == router.NameCompose || b.AgentOnly {
			continue
		}
		if !r.admitted(n) || !clean(n) {
			continue
		}
		if _, dup := r.byName[n]; dup {
			continue
		}
		if r.v.Builtins == nil || !r.v.Builtins.Has(n) {
			continue
		}
		d := provider.ToolDef{Name: n, Description: b.Description, Parameters: b.Params}
		r.byName[n] = d
		u = append(u, d)
	}
	mcpDefs, err := r.mcpDefs(ctx)
	if err != nil {
		return err
	}
	for _, d := range mcpDefs {
		if d.Name == router.NameDone || d.Name == router.NameCompose || !r.admitted(d.Name) || !clean(d.Name) {
			continue
		}
		if _, dup := r.byName[d.Name]; dup {
			continue
		}
		pd := provider.ToolDef{Name: d.Name, Description: d.Description, Parameters: d.Params}
		r.byName[d.Name] = pd
		u = append(u, pd)
	}
	// AGENT.md §2: the builtins and the MCP tools form one list sorted by name (mcp: before
	// nika:); author rank (below) then reorders it by the whitelist.
	sort.SliceStable(u, func(i, j int) bool { return u[i].Name < u[j].Name })
	for _, n := range []string{router.NameDone, router.NameCompose} {
		if !r.admitted(n) {
			continue
		}
		if b, ok := catalog.Lookup(n); ok {
			d := provider.ToolDef{Name: n, Description: b.Description, Parameters: b.Params}
			r.byName[n] = d
			u = append(u, d)
		}
	}
	sort.SliceStable(u, func(i, j int) bool { return r.rank(u[i].Name) < r.rank(u[j].Name) })
	r.universe = u
	r.names = make([]string, len(u))
	for i, d := range u {
		r.names[i] = d.Name
	}
	return nil
}

// mcpDefs lists the tools of every registered server that some glob of the whitelist (and of
// permits.tools, when the workflow has permits) can reach, sorted by name. Servers no glob can
// reach are neither started nor listed. A source whose registry cannot be used (tools.Broken)
// fails the arming when the globs can reach some mcp: tool.
func (r *run) mcpDefs(ctx context.Context) ([]tools.Def, *spec.Error) {
	src := r.v.Tools
	if src == nil {
		return nil, nil
	}
	failed := func(msg string, details map[string]any, err error) *spec.Error {
		details["detail"] = err.Error()
		e := spec.NewError(CodeDefs, msg, details).Wrap(err)
		var se *spec.Error
		e.Transient = errors.As(err, &se) && se.Transient
		return e
	}
	if b, ok := src.(tools.Broken); ok && tools.CanAdmitMCP(r.globs) && (r.job.Permits == nil || tools.CanAdmitMCP(r.job.Permits.Tools)) {
		if err := b.Err(); err != nil {
			return nil, failed(fmt.Sprintf("the MCP tools could not be listed: %v", err), map[string]any{}, err)
		}
	}
	var out []tools.Def
	for _, s := range src.Servers() {
		if !tools.CanAdmitServer(r.globs, s) || r.job.Permits != nil && !tools.CanAdmitServer(r.job.Permits.Tools, s) {
			continue
		}
		defs, err := src.List(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fields.Cancelled(ctx, err)
			}
			return nil, failed(fmt.Sprintf("the tools of MCP server %q could not be listed: %v", s, err), map[string]any{"server": s}, err)
		}
		out = append(out, defs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// live reports to the live stream (D19), never to the canonical one. It is called from the loop
// goroutine only (the dispatch progress hook runs there too).
func (r *run) live(n workflow.LiveNote) {
	if r.job.Live != nil {
		n.Turn = r.turn
		r.job.Live(n)
	}
}

func (r *run) emit(kind string, f map[string]any) {
	if r.job.Emit != nil {
		r.job.Emit(kind, f)
	}
}

// lastAssistantText is §5.5 over the transcript (the classified response included).
func lastAssistantText(m provider.Message) string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Type == provider.BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ask sends one request as a batch of one and accounts its usage.
func (r *run) ask(ctx context.Context, req provider.Request) (*provider.Response, *spec.Error) {
	start := time.Now()
	o := complete(ctx, r.prov, []provider.Request{req})[0]
	if r.job.Live != nil {
		grp, _, _ := provider.SplitModel(req.Model)
		n := workflow.LiveNote{Kind: "provider_request", Provider: grp, Model: req.Model, Outcome: "ok", Elapsed: time.Since(start)}
		if o.Err != nil {
			n.Outcome, n.Code, n.IsError = provider.OutcomeOf(o.Err), o.Err.Code, true
			n.RateLimited = provider.ReasonOf(o.Err) == provider.ReasonRateLimited
		} else if o.Response != nil {
			n.InputTokens, n.OutputTokens = o.Response.Usage.InputTokens, o.Response.Usage.OutputTokens
		}
		r.job.Live(n)
	}
	switch {
	case o.Err != nil:
		if ctx.Err() != nil && (provider.ReasonOf(o.Err) == provider.ReasonCancelled || o.Err.Code == "") {
			return nil, fields.Cancelled(ctx, o.Err)
		}
		return nil, o.Err
	case o.Response == nil:
		return nil, spec.NewError("", "the provider returned an outcome with neither a response nor an error", nil)
	}
	u := o.Response.Usage
	r.usage = append(r.usage, workflow.Usage{Model: r.job.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Reported: u.Reported, Turn: r.turn, Emitted: true})
	// D18's infer_completed, emitted here so the trace reads in the order things happened: the
	// turn's tool selection, its request, then its tool calls.
	r.emit(event.InferCompleted, map[string]any{"model": r.job.Model, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"usage_reported": u.Reported, "turn": r.turn})
	r.total += u.InputTokens + u.OutputTokens
	return o.Response, nil
}

// complete calls the provider, holding it to its contract: one outcome per request, no panic.
func complete(ctx context.Context, p provider.Provider, reqs []provider.Request) (out []provider.Outcome) {
	defer func() {
		if rec := recover(); rec != nil {
			out = []provider.Outcome{{Err: spec.NewError("", fmt.Sprintf("the provider panicked: %v", rec), nil)}}
		}
	}()
	out = p.Complete(ctx, reqs)
	if len(out) != len(reqs) {
		return []provider.Outcome{{Err: spec.NewError("", fmt.Sprintf("the provider returned %d outcomes for %d requests", len(out), len(reqs)), nil)}}
	}
	return out
}

func snapshot(msgs []provider.Message) []provider.Message {
	return append([]provider.Message(nil), msgs...)
}
