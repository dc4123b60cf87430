package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nikahq/nika/verbs/internal/jsontext"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
)

// done handles nika:done's input (AGENT.md §5.3).
func (r *run) done(ctx context.Context, input json.RawMessage) (any, *spec.Error) {
	var obj map[string]json.RawMessage
	raw, present := json.RawMessage(nil), false
	if json.Unmarshal(input, &obj) == nil && obj != nil {
		raw, present = obj["result"]
	}
	if !present {
		if r.sch == nil {
			return r.lastText, nil
		}
		return r.finalize(ctx, r.lastText)
	}
	val, err := jsontext.Decode(string(raw))
	if err != nil {
		return nil, spec.NewError(CodeSchema, fmt.Sprintf("nika:done's result is not valid JSON: %v", err), map[string]any{"stage": StageDone, "detail": err.Error()})
	}
	if s, ok := val.(string); ok {
		if parsed, perr := jsontext.Decode(s); perr == nil {
			val = parsed
		}
	}
	if r.sch == nil {
		return val, nil
	}
	if m, ok := r.schDoc.(map[string]any); ok && m["type"] == "object" {
		switch x := val.(type) {
		case string:
			return r.finalize(ctx, x)
		case nil:
			return r.finalize(ctx, r.lastText)
		}
	}
	if vs := r.sch.Validate(val); len(vs) > 0 {
		d := describe(vs[0])
		return nil, spec.NewError(CodeSchema, "nika:done's result does not match `schema`: "+d, map[string]any{"stage": StageDone, "detail": d})
	}
	return val, nil
}

func describe(v schema.Violation) string {
	if v.Path == "" {
		return v.Message
	}
	return "at " + v.Path + ": " + v.Message
}

// check extracts a JSON value from text and validates it; detail is "" on success.
func (r *run) check(text string) (any, string) {
	detail := ""
	for _, cand := range jsontext.Candidates(text) {
		v, err := jsontext.Decode(cand)
		if err != nil {
			continue
		}
		vs := r.sch.Validate(v)
		if len(vs) == 0 {
			return v, ""
		}
		if detail == "" {
			detail = describe(vs[0])
		}
	}
	if detail == "" {
		detail = "no JSON value found in the reply"
	}
	return nil, detail
}

// finalize is AGENT.md §5.4: extract, else strip tool_use blocks and re-ask tools-off.
func (r *run) finalize(ctx context.Context, text string) (any, *spec.Error) {
	v, detail := r.check(text)
	if detail == "" {
		return v, nil
	}
	if n := len(r.msgs); n > 0 && r.msgs[n-1].Role == provider.RoleAssistant {
		last := r.msgs[n-1]
		kept := make([]provider.Block, 0, len(last.Blocks))
		for _, b := range last.Blocks {
			if b.Type != provider.BlockToolUse {
				kept = append(kept, b)
			}
		}
		last.Blocks = kept
		r.msgs[n-1] = last
	}
	sch := ""
	if b, err := canon.Marshal(r.schDoc); err == nil {
		sch = router.CutChars(string(b), reaskSchemaChars)
	}
	for range SchemaRetryBudget {
		r.msgs = append(r.msgs, provider.UserText(fmt.Sprintf(ReaskText, detail, sch)))
		req := provider.Request{Model: r.job.Model, System: r.system, Messages: snapshot(r.msgs), Temperature: r.temp, ToolChoice: provider.ChoiceNone}
		if r.native {
			req.Schema = r.schDoc
		}
		resp, err := r.ask(ctx, req)
		if err != nil {
			return nil, err
		}
		asst := resp.Message
		asst.Role = provider.RoleAssistant
		r.msgs = append(r.msgs, asst)
		if v, detail = r.check(provider.Text(asst)); detail == "" {
			return v, nil
		}
	}
	return nil, spec.NewError(CodeSchema, fmt.Sprintf("the final answer does not match `schema` after %d re-asks: %s", SchemaRetryBudget, detail),
		map[string]any{"stage": StageFinalize, "detail": detail})
}

// composeResult is D31's result shape for a checked draft (stage "check"), fields in this order. Every
// field is always present: a draft with no finding says so with "conformance":[] and
// "conformance_total":0, rather than leaving the model to guess what a missing field means.
type composeResult struct {
	Valid            bool             `json:"valid"`
	Stage            string           `json:"stage"`
	Conformance      []composeFinding `json:"conformance"`
	ConformanceTotal int              `json:"conformance_total"`
	WarningsTotal    int              `json:"warnings_total"`
	Tasks            int              `json:"tasks"`
	Waves            int              `json:"waves"`
}

// composeFailure is the result of an args, size or parse failure (AGENT.md §9): exactly these three fields.
type composeFailure struct {
	Valid bool   `json:"valid"`
	Stage string `json:"stage"`
	Error string `json:"error"`
}

type composeFinding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func encode(v any) []byte {
	var sb jsonBuffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b := sb.b
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

// compose checks a draft workflow statically (AGENT.md §9, D31); it never runs it.
func compose(args json.RawMessage) []byte {
	var a map[string]json.RawMessage
	var draft string
	if json.Unmarshal(args, &a) != nil || json.Unmarshal(a["workflow_yaml"], &draft) != nil {
		return encode(composeFailure{Stage: "args", Error: "NIKA-BUILTIN-001" + dispatch.Separator + "nika:compose needs a string workflow_yaml"})
	}
	if len(draft) > composeMaxBytes {
		return encode(composeFailure{Stage: "size", Error: fmt.Sprintf("draft is %d bytes; the limit is %d", len(draft), composeMaxBytes)})
	}
	an := spec.CheckSource("draft.nika.yaml", []byte(draft), spec.CheckOptions{})
	errs, warns := spec.Split(an.Findings)
	if an.File == nil || an.Graph == nil {
		msg := "the draft does not parse"
		if len(errs) > 0 {
			msg = errs[0].Code + dispatch.Separator + errs[0].Message
		}
		return encode(composeFailure{Stage: "parse", Error: msg})
	}
	res := composeResult{Valid: len(errs) == 0, Stage: "check", Conformance: []composeFinding{}}
	for i, f := range an.Findings {
		if i == composeListed {
			break
		}
		res.Conformance = append(res.Conformance, composeFinding{Code: f.Code, Message: f.Message})
	}
	res.ConformanceTotal, res.WarningsTotal, res.Tasks, res.Waves = len(an.Findings), len(warns), len(an.Tasks), len(an.Graph.Waves())
	return encode(res)
}

// composeVerdict reads {valid, violations} back from a compose result (§9 telemetry); an args, size
// or parse failure (any stage but "check") counts as one violation.
func composeVerdict(res dispatch.Result) (bool, int) {
	var c composeResult
	if res.Err != nil || json.Unmarshal([]byte(res.Content), &c) != nil || c.Stage != "check" {
		return false, 1
	}
	return c.Valid, c.ConformanceTotal
}
