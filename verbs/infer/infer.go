// Package infer is the `infer` verb (LANGUAGE.md §5.1): one model call, built from the task's
// prompt, through the run's shared provider registry; with `schema:`, the reply is extracted as
// JSON, validated, and re-asked at most twice within the attempt.
package infer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/verbs/internal/jsontext"
	"github.com/nikahq/nika/workflow"
)

// MaxReasks is the number of re-asks within one attempt when the reply does not conform to the
// schema (LANGUAGE.md §5.1).
const MaxReasks = 2

// Stages of NIKA-INFER-002 (details.stage).
const (
	StageExtract  = "extract"  // no JSON value could be extracted from the reply
	StageValidate = "validate" // the extracted value fails the schema
)

const (
	excerptBytes  = 2 << 10 // details.raw_excerpt
	maxViolations = 50      // details.validation_errors
	maxListed     = 20      // problems listed in a re-ask
)

// Verb runs infer jobs. A Verb holds no state of its own and is safe for concurrent use.
type Verb struct {
	// Providers serves every model of the run (one instance per provider, shared with the
	// agent verb, so one limiter sees the whole load).
	Providers *provider.Registry
	// Media loads the images of `vision` under the job's permits (tools.Builtins: the rules of
	// nika:read and nika:fetch, the SSRF floor included). Nil: a task with vision inputs fails
	// with NIKA-VAR-006.
	Media MediaLoader
}

// MediaLoader loads one vision input (tools.Builtins.LoadImage): source "file" with ref a path or
// "url" with ref a URL; field names the input in errors. It returns the bytes and media type.
type MediaLoader interface {
	LoadImage(ctx context.Context, call tools.Call, field, source, ref string) ([]byte, string, error)
}

// DefaultThinkingBudget is the reasoning budget of `thinking` without `budget_tokens`.
const DefaultThinkingBudget = 2048

// call is one job on its way: its current request and what it has cost so far.
type call struct {
	job    workflow.Job
	prov   provider.Provider
	group  string // the provider name: the registry maps it to one instance
	req    provider.Request
	schema *schema.Schema // nil without `schema:`
	doc    any            // the schema document
	reasks int
	usage  []workflow.Usage
	done   bool
	out    workflow.Outcome
}

// Run runs one infer job (planner.Verb). The output is the reply text, or with `schema:` the
// validated JSON value. Every provider response, re-asks included, is one workflow.Usage. Errors:
//
//   - NIKA-VAR-006 / -007: an empty prompt after rendering, temperature outside 0..2,
//     max_tokens < 1, a field of the wrong type (DECISIONS.md D27).
//   - NIKA-INFER-001: the provider failed (passed through as the provider reported it).
//   - NIKA-INFER-002: the reply fails the schema after MaxReasks re-asks; details {stage,
//     validation_errors: [{path, message}], raw_excerpt: at most 2 KiB of the last reply}.
//   - NIKA-CANCEL-001: ctx ended while the provider was asked; it wraps context.Cause(ctx).
func (v *Verb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	return v.RunBatch(ctx, []workflow.Job{job})[0]
}

// RunBatch runs several infer jobs (planner.BatchVerb, DECISIONS.md D5) and returns one outcome per
// job, in job order. The requests of one round (every job's first request, then every re-ask
// still needed) go to each provider in one Complete call; different providers are asked
// concurrently.
func (v *Verb) RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome {
	calls := make([]*call, len(jobs))
	for i, job := range jobs {
		calls[i] = v.prepare(ctx, job)
	}
	for {
		var pending []*call
		for _, c := range calls {
			if !c.done {
				pending = append(pending, c)
			}
		}
		if len(pending) == 0 {
			break
		}
		round(ctx, pending)
	}
	out := make([]workflow.Outcome, len(calls))
	for i, c := range calls {
		out[i] = c.out
		out[i].Usage = c.usage
	}
	return out
}

// prepare checks a job's fields, loads its vision inputs and builds its first request; a job
// that cannot run is done at once with its error.
func (v *Verb) prepare(ctx context.Context, job workflow.Job) *call {
	c := &call{job: job}
	fail := func(err *spec.Error) *call {
		c.done, c.out = true, workflow.Failed(err)
		return c
	}
	f := job.Fields
	prompt, ok, err := fields.String(f, "prompt")
	switch {
	case err != nil:
		return fail(err)
	case !ok:
		return fail(fields.Invalid("prompt", "`prompt` is missing"))
	case strings.TrimSpace(prompt) == "":
		return fail(fields.Invalid("prompt", "`prompt` is empty after rendering"))
	}
	req := provider.Request{Model: job.Model, Messages: []provider.Message{provider.UserText(prompt)}}
	if req.System, _, err = fields.String(f, "system"); err != nil {
		return fail(err)
	}
	if t, ok, err := fields.Number(f, "temperature"); err != nil {
		return fail(err)
	} else if ok {
		if t < 0 || t > 2 {
			return fail(fields.Invalid("temperature", "`temperature` must be from 0 to 2, not %v", t))
		}
		req.Temperature = &t
	}
	if n, ok, err := fields.Integer(f, "max_tokens"); err != nil {
		return fail(err)
	} else if ok {
		if n < 1 {
			return fail(fields.Invalid("max_tokens", "`max_tokens` must be at least 1, not %d", n))
		}
		req.MaxTokens = n
	}
	think, err := thinking(f)
	if err != nil {
		return fail(err)
	}
	req.Thinking = think
	var images []provider.Block
	if !strings.HasPrefix(job.Model, "mock/") { // the mock ignores vision (§6.3): nothing is loaded for it, so it stays offline
		if images, err = v.images(ctx, job); err != nil {
			return fail(err)
		}
	}
	if len(images) > 0 { // images first: Anthropic reads them best before the text (WIRES §2.2)
		req.Messages[0].Blocks = append(images, req.Messages[0].Blocks...)
	}
	if doc, ok := f["schema"]; ok && doc != nil {
		sch, err := schema.Compile(doc)
		if err != nil {
			return fail(fields.Invalid("schema", "`schema` does not compile: %v", err))
		}
		c.schema, c.doc = sch, doc
	}

	if v.Providers == nil {
		return fail(provider.Failure{Model: job.Model, Reason: provider.ReasonModelNotFound,
			Message: "no model providers are configured"}.Err())
	}
	p, perr := v.Providers.For(job.Model)
	if perr != nil {
		return fail(perr)
	}
	c.prov = p
	c.group, _, _ = provider.SplitModel(job.Model)
	if req.Thinking != nil {
		if nt, ok := p.(provider.NativeThinking); !ok || !nt.SupportsThinking(job.Model) {
			// §5.1: a provider without support ignores it, and says so.
			req.Thinking = nil
			emit(job, event.Log, map[string]any{"level": "warn",
				"message": fmt.Sprintf("`thinking` is ignored: %s does not support extended thinking on this wire", job.Model)})
		}
	}
	if c.schema != nil {
		if ns, ok := p.(provider.NativeSchema); ok && ns.SupportsSchema(job.Model) {
			req.Schema = c.doc // the first request already carries the response format
		} else {
			instr, err := instruction(c.doc)
			if err != nil {
				return fail(fields.Invalid("schema", "`schema` has no JSON encoding: %v", err))
			}
			if req.System != "" {
				req.System += "\n\n"
			}
			req.System += instr
		}
	}
	c.req = req
	return c
}

// emit sends a canonical event of the job (Job.Emit may be nil in a Go API caller).
func emit(job workflow.Job, kind string, f map[string]any) {
	if job.Emit != nil {
		job.Emit(kind, f)
	}
}

// thinking reads `thinking: {enabled, budget_tokens}`. Writing `thinking` asks for it: enabled
// defaults to true, so `enabled: false` (or an expression that yields false) turns it off;
// budget_tokens defaults to DefaultThinkingBudget. nil: no thinking asked for.
func thinking(f map[string]any) (*provider.Thinking, *spec.Error) {
	raw, ok := f["thinking"]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fields.Invalid("thinking", "`thinking` must be a mapping `{enabled, budget_tokens}`, not %s", fields.KindOf(raw))
	}
	if e, ok := m["enabled"]; ok && e != nil {
		on, isBool := e.(bool)
		if !isBool {
			return nil, fields.Invalid("thinking", "`thinking.enabled` must be a boolean, not %s", fields.KindOf(e))
		}
		if !on {
			return nil, nil
		}
	}
	budget, ok, err := fields.Integer(m, "budget_tokens")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		budget = DefaultThinkingBudget
	case budget < 1:
		return nil, fields.Invalid("thinking", "`thinking.budget_tokens` must be at least 1, not %d", budget)
	}
	return &provider.Thinking{BudgetTokens: budget}, nil
}

// images loads the job's `vision` inputs, in order, as image blocks.
func (v *Verb) images(ctx context.Context, job workflow.Job) ([]provider.Block, *spec.Error) {
	raw, ok := job.Fields["vision"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fields.Invalid("vision", "`vision` must be a list, not %s", fields.KindOf(raw))
	}
	if len(list) == 0 {
		return nil, nil
	}
	if v.Media == nil {
		return nil, fields.Invalid("vision", "this engine has no loader for `vision` inputs")
	}
	call := tools.Call{Permits: job.Permits, RunDir: job.RunDir, Workflow: job.Workflow}
	out := make([]provider.Block, 0, len(list))
	for i, it := range list {
		field := fmt.Sprintf("vision[%d]", i)
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fields.Invalid("vision", "`%s` must be a mapping `{source, path}` or `{source, url}`, not %s", field, fields.KindOf(it))
		}
		source, _ := m["source"].(string)
		key := map[string]string{"file": "path", "url": "url"}[source]
		if key == "" {
			return nil, fields.Invalid("vision", "`%s.source` must be `file` or `url`", field)
		}
		ref, ok := m[key].(string)
		if !ok || ref == "" {
			return nil, fields.Invalid("vision", "`%s.%s` must be a non-empty string", field, key)
		}
		data, mt, err := v.Media.LoadImage(ctx, call, field, source, ref)
		if err != nil {
			var se *spec.Error
			if errors.As(err, &se) {
				if se.Code == spec.CodeCancel || ctx.Err() != nil {
					return nil, fields.Cancelled(ctx, err)
				}
				return nil, se
			}
			return nil, spec.NewError("", fmt.Sprintf("%s: %v", field, err), nil)
		}
		out = append(out, provider.ImageBlock(mt, data))
	}
	return out, nil
}

// instruction tells a model without native structured output what to answer.
func instruction(doc any) (string, error) {
	b, err := canon.Marshal(doc)
	if err != nil {
		return "", err
	}
	return "Reply with a single JSON value that conforms to this JSON Schema, and nothing else:\n" + string(b), nil
}

// round sends the current request of every pending call, one Complete call per provider, and
// folds the answers in.
func round(ctx context.Context, pending []*call) {
	var groups [][]*call
	at := map[string]int{}
	for _, c := range pending {
		i, ok := at[c.group]
		if !ok {
			i = len(groups)
			at[c.group] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	answers := make([][]provider.Outcome, len(groups))
	ask := func(i int) {
		g := groups[i]
		reqs := make([]provider.Request, len(g))
		for j, c := range g {
			reqs[j] = c.req
		}
		start := time.Now()
		answers[i] = complete(ctx, g[0].prov, reqs)
		elapsed := time.Since(start)
		for j, c := range g { // the live stream (D19): one note per request
			if c.job.Live == nil {
				continue
			}
			n := workflow.LiveNote{Kind: "provider_request", Provider: c.group, Model: c.req.Model, Outcome: "ok", Elapsed: elapsed}
			if o := answers[i][j]; o.Err != nil {
				n.Outcome, n.Code, n.IsError = provider.OutcomeOf(o.Err), o.Err.Code, true
				n.RateLimited = provider.ReasonOf(o.Err) == provider.ReasonRateLimited
			} else if o.Response != nil {
				n.InputTokens, n.OutputTokens = o.Response.Usage.InputTokens, o.Response.Usage.OutputTokens
			}
			c.job.Live(n)
		}
	}
	if len(groups) == 1 {
		ask(0)
	} else {
		var wg sync.WaitGroup
		for i := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ask(i)
			}()
		}
		wg.Wait()
	}
	for i, g := range groups {
		for j, c := range g {
			c.answer(ctx, answers[i][j])
		}
	}
}

// complete calls the provider, holding it to its contract: one outcome per request, no panic.
func complete(ctx context.Context, p provider.Provider, reqs []provider.Request) (out []provider.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = broken(len(reqs), fmt.Sprintf("the provider panicked: %v", r))
		}
	}()
	out = p.Complete(ctx, reqs)
	if len(out) != len(reqs) {
		return broken(len(reqs), fmt.Sprintf("the provider returned %d outcomes for %d requests", len(out), len(reqs)))
	}
	return out
}

// broken is the outcome of every request of a call that broke the provider contract: an engine
// defect (internal_error), not a provider failure.
func broken(n int, msg string) []provider.Outcome {
	out := make([]provider.Outcome, n)
	for i := range out {
		out[i] = provider.Outcome{Err: spec.NewError("", msg, nil)}
	}
	return out
}

// answer folds one provider outcome into the call: done with an output or an error, or a re-ask.
func (c *call) answer(ctx context.Context, o provider.Outcome) {
	switch {
	case o.Err != nil:
		err := o.Err
		if ctx.Err() != nil && provider.ReasonOf(err) == provider.ReasonCancelled {
			err = fields.Cancelled(ctx, err)
		}
		c.done, c.out = true, workflow.Failed(err)
		return
	case o.Response == nil:
		c.done, c.out = true, workflow.Failed(spec.NewError("", "the provider returned an outcome with neither a response nor an error", nil))
		return
	}
	r := o.Response
	c.usage = append(c.usage, workflow.Usage{Model: c.job.Model, InputTokens: r.Usage.InputTokens,
		OutputTokens: r.Usage.OutputTokens, Reported: r.Usage.Reported})
	reply := provider.Text(r.Message)
	if c.schema == nil {
		c.done, c.out = true, workflow.Outcome{Output: reply}
		return
	}
	value, stage, problems := c.check(reply)
	if stage == "" {
		c.done, c.out = true, workflow.Outcome{Output: value}
		return
	}
	if c.reasks < MaxReasks {
		c.reasks++
		assistant := r.Message
		assistant.Role = provider.RoleAssistant
		msgs := make([]provider.Message, 0, len(c.req.Messages)+2)
		msgs = append(msgs, c.req.Messages...)
		c.req.Messages = append(msgs, assistant, provider.UserText(c.reask(stage, problems)))
		return
	}
	c.done, c.out = true, workflow.Failed(schemaError(stage, problems, reply))
}

// check extracts the reply's JSON value and validates it. The candidates of §5.1 are tried in
// order and the first one that parses and conforms wins; otherwise the problems are those of the
// first candidate that parses (stage validate), or "no JSON value" (stage extract).
func (c *call) check(reply string) (any, string, []schema.Violation) {
	var first []schema.Violation
	parsed := false
	for _, cand := range jsontext.Candidates(reply) {
		v, err := jsontext.Decode(cand)
		if err != nil {
			continue
		}
		vs := c.schema.Validate(v)
		if len(vs) == 0 {
			return v, "", nil
		}
		if !parsed {
			parsed, first = true, vs
		}
	}
	if !parsed {
		return nil, StageExtract, []schema.Violation{{Message: "no JSON value found in the reply (tried the whole reply, the first fenced code block and the first balanced {…} or […] span)"}}
	}
	return nil, StageValidate, first
}

// reask is the user message of a re-ask: the problems, then the schema again.
func (c *call) reask(stage string, problems []schema.Violation) string {
	var sb strings.Builder
	if stage == StageExtract {
		sb.WriteString("Your reply did not contain a JSON value. ")
	} else {
		sb.WriteString("Your reply does not conform to the required JSON Schema. ")
	}
	sb.WriteString("Problems:\n")
	for i, p := range problems {
		if i == maxListed {
			fmt.Fprintf(&sb, "- … and %d more\n", len(problems)-maxListed)
			break
		}
		sb.WriteString("- ")
		sb.WriteString(describe(p))
		sb.WriteByte('\n')
	}
	sb.WriteString("Reply again with only the corrected JSON value, with no other text.")
	if s, err := canon.Marshal(c.doc); err == nil {
		sb.WriteString("\nJSON Schema: ")
		sb.Write(s)
	}
	return sb.String()
}

func describe(v schema.Violation) string {
	if v.Path == "" {
		return v.Message
	}
	return "at " + v.Path + ": " + v.Message
}

// schemaError is NIKA-INFER-002 once the re-asks are spent.
func schemaError(stage string, problems []schema.Violation, reply string) *spec.Error {
	list := make([]any, 0, min(len(problems), maxViolations))
	for i, p := range problems {
		if i == maxViolations {
			break
		}
		list = append(list, map[string]any{"path": p.Path, "message": p.Message})
	}
	msg := fmt.Sprintf("the reply does not conform to `schema` after %d re-asks: %s", MaxReasks, describe(problems[0]))
	if stage == StageExtract {
		msg = fmt.Sprintf("no JSON value could be extracted from the reply after %d re-asks", MaxReasks)
	} else if len(problems) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	return spec.NewError(spec.CodeInferSchema, msg, map[string]any{
		"stage":             stage,
		"validation_errors": list,
		"raw_excerpt":       jsontext.Excerpt(reply, excerptBytes),
	})
}
