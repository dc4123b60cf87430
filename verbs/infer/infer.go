// Package infer is the `infer` verb (LANGUAGE.md §5.1): one model call, built from the task's
// prompt, through the run's shared provider registry; with `schema:`, the reply is extracted as
// JSON, validated, and re-asked at most twice within the attempt.
package infer

import (
	"context"
	"fmt"
	"github.com/nikahq/nika/verbs/internal/jsontext"
	"strings"
	"sync"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// Codes of this verb.
const (
	CodeProvider = provider.CodeInfer001 // provider failures pass through
	CodeSchema   = "NIKA-INFER-002"      // the reply fails `schema` after the re-asks
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
}

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
		calls[i] = v.prepare(job)
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

// prepare checks a job's fields and builds its first request; a job that cannot run is done at
// once with its error.
func (v *Verb) prepare(job workflow.Job) *call {
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
	if vis, ok := f["vision"]; ok && vis != nil && !strings.HasPrefix(job.Model, "mock/") { // the mock ignores vision (§6.3)
		if l, isList := vis.([]any); !isList || len(l) > 0 {
			return fail(provider.Failure{Model: job.Model, Reason: provider.ReasonBadRequest,
				Message: "`vision` inputs are not supported by this build"}.Err())
		}
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
	return spec.NewError(CodeSchema, msg, map[string]any{
		"stage":             stage,
		"validation_errors": list,
		"raw_excerpt":       jsontext.Excerpt(reply, excerptBytes),
	})
}
