package core

import (
	"encoding/json"
	"fmt"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/verbs/internal/jsontext"
)

// done handles nika:done's input (AGENT.md §5.3).
func (l *Loop) done(st Step, input json.RawMessage) Step {
	var obj map[string]json.RawMessage
	raw, present := json.RawMessage(nil), false
	if json.Unmarshal(input, &obj) == nil && obj != nil {
		raw, present = obj["result"]
	}
	if !present {
		if l.sch == nil {
			return l.finish(st, l.lastText, nil)
		}
		return l.finalize(st, l.lastText)
	}
	val, err := jsontext.Decode(string(raw))
	if err != nil {
		return l.finish(st, nil, spec.NewError(CodeSchema, fmt.Sprintf("nika:done's result is not valid JSON: %v", err), map[string]any{"stage": StageDone, "detail": err.Error()}))
	}
	if s, ok := val.(string); ok {
		if parsed, perr := jsontext.Decode(s); perr == nil {
			val = parsed
		}
	}
	if l.sch == nil {
		return l.finish(st, val, nil)
	}
	if m, ok := l.a.Schema.(map[string]any); ok && m["type"] == "object" {
		switch x := val.(type) {
		case string:
			return l.finalize(st, x)
		case nil:
			return l.finalize(st, l.lastText)
		}
	}
	if vs := l.sch.Validate(val); len(vs) > 0 {
		d := describe(vs[0])
		return l.finish(st, nil, spec.NewError(CodeSchema, "nika:done's result does not match `schema`: "+d, map[string]any{"stage": StageDone, "detail": d}))
	}
	return l.finish(st, val, nil)
}

func describe(v schema.Violation) string {
	if v.Path == "" {
		return v.Message
	}
	return "at " + v.Path + ": " + v.Message
}

// check extracts a JSON value from text and validates it; detail is "" on success.
func (l *Loop) check(text string) (any, string) {
	detail := ""
	for _, cand := range jsontext.Candidates(text) {
		v, err := jsontext.Decode(cand)
		if err != nil {
			continue
		}
		vs := l.sch.Validate(v)
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

// finalize is AGENT.md §5.4 steps 1–2: extract, else strip the final assistant message's tool_use
// blocks and start the re-asks.
func (l *Loop) finalize(st Step, text string) Step {
	v, detail := l.check(text)
	if detail == "" {
		return l.finish(st, v, nil)
	}
	if n := len(l.msgs); n > 0 && l.msgs[n-1].Role == provider.RoleAssistant {
		last := l.msgs[n-1]
		kept := make([]provider.Block, 0, len(last.Blocks))
		for _, b := range last.Blocks {
			if b.Type != provider.BlockToolUse {
				kept = append(kept, b)
			}
		}
		last.Blocks = kept
		l.msgs[n-1] = last
	}
	l.reaskSch = ""
	if b, err := canon.Marshal(l.a.Schema); err == nil {
		l.reaskSch = router.CutChars(string(b), reaskSchemaChars)
	}
	l.detail = detail
	return l.reask(st)
}

// reask is §5.4 step 3: one tools-off request, with the schema when the provider takes it natively.
func (l *Loop) reask(st Step) Step {
	l.reasks++
	l.msgs = append(l.msgs, provider.UserText(fmt.Sprintf(ReaskText, l.detail, l.reaskSch)))
	req := provider.Request{Model: l.a.Model, System: l.a.System, Messages: l.snapshot(), Temperature: l.a.Temperature, ToolChoice: provider.ChoiceNone}
	if l.a.Native {
		req.Schema = l.a.Schema
	}
	l.ph = phaseReasking
	st.Request = &Request{Turn: l.turn, Reask: true, Request: req}
	return st
}

// reasked checks a re-ask's answer (§5.4 steps 3–4).
func (l *Loop) reasked(st Step, asst provider.Message) Step {
	l.msgs = append(l.msgs, asst)
	v, detail := l.check(provider.Text(asst))
	if detail == "" {
		return l.finish(st, v, nil)
	}
	l.detail = detail
	if l.reasks < SchemaRetryBudget {
		return l.reask(st)
	}
	return l.finish(st, nil, spec.NewError(CodeSchema, fmt.Sprintf("the final answer does not match `schema` after %d re-asks: %s", SchemaRetryBudget, detail),
		map[string]any{"stage": StageFinalize, "detail": detail}))
}
