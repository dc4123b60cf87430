package infer

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The planner's interfaces, restated (verbs do not import the planner).
type (
	verb interface {
		Run(ctx context.Context, job workflow.Job) workflow.Outcome
	}
	batchVerb interface {
		RunBatch(ctx context.Context, jobs []workflow.Job) []workflow.Outcome
	}
)

var (
	_ verb      = (*Verb)(nil)
	_ batchVerb = (*Verb)(nil)
)

const scriptedModel = "openai/gpt-test"

func job(model string, f map[string]any) workflow.Job {
	return workflow.Job{Verb: "infer", Fields: f, Model: model, Attempt: 1, Iteration: -1,
		Emit: func(string, map[string]any) {}}
}

// counting wraps a provider and records each Complete call's batch size.
type counting struct {
	provider.Provider
	mu    sync.Mutex
	calls []int
}

func (c *counting) Complete(ctx context.Context, reqs []provider.Request) []provider.Outcome {
	c.mu.Lock()
	c.calls = append(c.calls, len(reqs))
	c.mu.Unlock()
	return c.Provider.Complete(ctx, reqs)
}

// SupportsSchema forwards the wrapped provider's capability.
func (c *counting) SupportsSchema(model string) bool {
	ns, ok := c.Provider.(provider.NativeSchema)
	return ok && ns.SupportsSchema(model)
}

// native is a scripted provider that claims native structured output.
type native struct{ *providertest.Scripted }

func (native) SupportsSchema(string) bool { return true }

func registry(named map[string]provider.Provider) *provider.Registry {
	r := provider.NewRegistry()
	r.Register("mock", provider.NewMock())
	for n, p := range named {
		r.Register(n, p)
	}
	return r
}

var objSchema = map[string]any{
	"type":     "object",
	"required": []any{"name", "n"},
	"properties": map[string]any{
		"name": map[string]any{"type": "string", "minLength": 3},
		"n":    map[string]any{"type": "integer", "minimum": 2},
	},
}

func TestMock(t *testing.T) {
	v := &Verb{Providers: registry(nil)}
	tests := []struct {
		name   string
		fields map[string]any
		want   any
		usage  []workflow.Usage
	}{
		{"echo of the rendered prompt", map[string]any{"prompt": "Hello, world"}, "Hello, world",
			[]workflow.Usage{{Model: "mock/echo", InputTokens: 3, OutputTokens: 3, Reported: true}}},
		{"system counts as input", map[string]any{"prompt": "Hello, world", "system": "Be kind.", "temperature": 0.2, "max_tokens": 5},
			"Hello, world", []workflow.Usage{{Model: "mock/echo", InputTokens: 5, OutputTokens: 3, Reported: true}}},
		{"non-string prompt is rendered", map[string]any{"prompt": map[string]any{"b": 1, "a": []any{true}}}, `{"a":[true],"b":1}`,
			[]workflow.Usage{{Model: "mock/echo", InputTokens: 5, OutputTokens: 5, Reported: true}}},
		{"integer prompt", map[string]any{"prompt": 42}, "42",
			[]workflow.Usage{{Model: "mock/echo", InputTokens: 1, OutputTokens: 1, Reported: true}}},
		{"schema: S(schema), validated", map[string]any{"prompt": "Give me a record", "schema": objSchema},
			map[string]any{"name": "xxx", "n": 2},
			[]workflow.Usage{{Model: "mock/echo", InputTokens: 4, OutputTokens: 5, Reported: true}}},
		{"schema: array of integers", map[string]any{"prompt": "p", "schema": map[string]any{"type": "array", "minItems": 2, "items": map[string]any{"type": "integer", "minimum": 7}}},
			[]any{7, 7}, []workflow.Usage{{Model: "mock/echo", InputTokens: 1, OutputTokens: 2, Reported: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := v.Run(context.Background(), job(provider.MockModel, tt.fields))
			if out.Err != nil {
				t.Fatalf("error %v", out.Err)
			}
			if !reflect.DeepEqual(out.Output, tt.want) {
				t.Errorf("output %#v, want %#v", out.Output, tt.want)
			}
			if !reflect.DeepEqual(out.Usage, tt.usage) {
				t.Errorf("usage %+v, want %+v", out.Usage, tt.usage)
			}
		})
	}
}

func TestParameterErrors(t *testing.T) {
	s := providertest.NewScripted()
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
	tests := []struct {
		name   string
		fields map[string]any
		code   string
	}{
		{"missing prompt", map[string]any{}, "NIKA-VAR-006"},
		{"empty prompt", map[string]any{"prompt": ""}, "NIKA-VAR-006"},
		{"blank prompt", map[string]any{"prompt": " \n\t"}, "NIKA-VAR-006"},
		{"bytes prompt", map[string]any{"prompt": []byte("x")}, "NIKA-VAR-007"},
		{"NaN in prompt", map[string]any{"prompt": []any{1.5, nan()}}, "NIKA-VAR-006"},
		{"bytes system", map[string]any{"prompt": "p", "system": []byte("x")}, "NIKA-VAR-007"},
		{"temperature above 2", map[string]any{"prompt": "p", "temperature": 2.5}, "NIKA-VAR-006"},
		{"temperature below 0", map[string]any{"prompt": "p", "temperature": -0.1}, "NIKA-VAR-006"},
		{"temperature as a string", map[string]any{"prompt": "p", "temperature": "0.5"}, "NIKA-VAR-006"},
		{"temperature null", map[string]any{"prompt": "p", "temperature": nil}, "NIKA-VAR-006"},
		{"max_tokens zero", map[string]any{"prompt": "p", "max_tokens": 0}, "NIKA-VAR-006"},
		{"max_tokens negative", map[string]any{"prompt": "p", "max_tokens": -3}, "NIKA-VAR-006"},
		{"max_tokens fractional", map[string]any{"prompt": "p", "max_tokens": 1.5}, "NIKA-VAR-006"},
		{"max_tokens as a string", map[string]any{"prompt": "p", "max_tokens": "10"}, "NIKA-VAR-006"},
		{"schema that does not compile", map[string]any{"prompt": "p", "schema": map[string]any{"type": 5}}, "NIKA-VAR-006"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := v.Run(context.Background(), job(scriptedModel, tt.fields))
			if out.Err == nil || out.Err.Code != tt.code {
				t.Fatalf("outcome %+v, want %s", out, tt.code)
			}
			if out.Err.Details["field"] == nil {
				t.Errorf("details %v lack the field", out.Err.Details)
			}
			if len(out.Usage) != 0 {
				t.Errorf("usage %+v", out.Usage)
			}
		})
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("the provider was asked %d times", n)
	}
}

func TestRequest(t *testing.T) {
	s := providertest.NewScripted(providertest.Reply("ok"))
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
	out := v.Run(context.Background(), job(scriptedModel, map[string]any{
		"prompt": "the prompt", "system": 7, "temperature": 1, "max_tokens": 256.0, "thinking": map[string]any{"enabled": true},
	}))
	if out.Err != nil || out.Output != "ok" {
		t.Fatalf("outcome %+v", out)
	}
	if want := []workflow.Usage{{Model: scriptedModel}}; !reflect.DeepEqual(out.Usage, want) {
		t.Errorf("usage %+v, want %+v (one unreported usage)", out.Usage, want)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != scriptedModel || r.System != "7" || r.Temperature == nil || *r.Temperature != 1 || r.MaxTokens != 256 ||
		r.Schema != nil || len(r.Tools) != 0 {
		t.Errorf("request %+v", r)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != provider.RoleUser || provider.Text(r.Messages[0]) != "the prompt" {
		t.Errorf("messages %+v", r.Messages)
	}
}

func TestReask(t *testing.T) {
	sch := map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"type": "integer"}}}
	tests := []struct {
		name    string
		replies []string
		want    any
		stage   string // INFER-002 expected when set
		errPart string // in the INFER-002 validation errors
	}{
		{"valid at once", []string{`{"a": 1}`}, map[string]any{"a": 1}, "", ""},
		{"invalid, then valid", []string{"no idea", "Sure!\n```json\n{\"a\": 2}\n```\nAnything else?"}, map[string]any{"a": 2}, "", ""},
		{"wrong type, then a balanced span", []string{`{"a": "one"}`, `The answer is {"a": 3, "s": "}{"} as asked.`}, map[string]any{"a": 3, "s": "}{"}, "", ""},
		{"last re-ask succeeds", []string{"x", `{"b": 1}`, `{"a": 4.0}`}, map[string]any{"a": 4.0}, "", ""},
		{"three invalid", []string{`{"a": "one"}`, `{"a": "two"}`, `{"b": 3}`}, nil, StageValidate, "a"},
		{"three without JSON", []string{"no", "still no", "never"}, nil, StageExtract, "no JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := providertest.NewScripted()
			for _, r := range tt.replies {
				o := providertest.Reply(r)
				o.Response.Usage = provider.Usage{InputTokens: 10, OutputTokens: 2, Reported: true}
				s.Push(o)
			}
			v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
			out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "give a", "system": "sys", "schema": sch}))
			if len(out.Usage) != len(tt.replies) {
				t.Errorf("%d usages for %d responses", len(out.Usage), len(tt.replies))
			}
			for _, u := range out.Usage {
				if u != (workflow.Usage{Model: scriptedModel, InputTokens: 10, OutputTokens: 2, Reported: true}) {
					t.Errorf("usage %+v", u)
				}
			}
			reqs := s.Requests()
			if len(reqs) != len(tt.replies) || s.Remaining() != 0 {
				t.Fatalf("%d requests, %d replies left", len(reqs), s.Remaining())
			}
			// Not native: the schema travels as an instruction in the system prompt, never as Schema.
			for i, r := range reqs {
				if r.Schema != nil || !strings.HasPrefix(r.System, "sys\n\n") || !strings.Contains(r.System, `"required":["a"]`) {
					t.Errorf("request %d: schema %v, system %q", i, r.Schema, r.System)
				}
				if len(r.Messages) != 1+2*i {
					t.Fatalf("request %d has %d messages", i, len(r.Messages))
				}
				for j := 1; j < len(r.Messages); j += 2 {
					a, u := r.Messages[j], r.Messages[j+1]
					if a.Role != provider.RoleAssistant || provider.Text(a) != tt.replies[(j-1)/2] {
						t.Errorf("request %d message %d: %+v", i, j, a)
					}
					if u.Role != provider.RoleUser || !strings.Contains(provider.Text(u), "Problems:") || !strings.Contains(provider.Text(u), "JSON Schema") {
						t.Errorf("request %d message %d: %+v", i, j+1, u)
					}
				}
			}
			if tt.stage == "" {
				if out.Err != nil {
					t.Fatalf("error %v", out.Err)
				}
				if !reflect.DeepEqual(out.Output, tt.want) {
					t.Errorf("output %#v, want %#v", out.Output, tt.want)
				}
				return
			}
			if out.Err == nil || out.Err.Code != spec.CodeInferSchema || out.Err.Category != "validation_error" || out.Err.Transient {
				t.Fatalf("outcome %+v, want NIKA-INFER-002", out)
			}
			d := out.Err.Details
			if d["stage"] != tt.stage || d["raw_excerpt"] != tt.replies[len(tt.replies)-1] {
				t.Errorf("details %v", d)
			}
			ves, _ := d["validation_errors"].([]any)
			if len(ves) == 0 {
				t.Fatalf("validation_errors %v", d["validation_errors"])
			}
			first, _ := ves[0].(map[string]any)
			if _, ok := first["path"].(string); !ok || !strings.Contains(first["message"].(string)+first["path"].(string), tt.errPart) {
				t.Errorf("validation error %v", first)
			}
		})
	}
}

func TestRawExcerptBounded(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6,000 bytes, no JSON
	s := providertest.NewScripted(providertest.Reply(long), providertest.Reply(long), providertest.Reply(long))
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
	out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p", "schema": objSchema}))
	if out.Err == nil || out.Err.Code != spec.CodeInferSchema {
		t.Fatalf("outcome %+v", out)
	}
	ex := out.Err.Details["raw_excerpt"].(string)
	if len(ex) > 2048 || len(ex) < 2046 || !strings.HasPrefix(long, ex) {
		t.Errorf("raw_excerpt of %d bytes", len(ex))
	}
}

func TestNativeSchema(t *testing.T) {
	s := providertest.NewScripted(providertest.Reply(`{"name": "abc"}`), providertest.Reply(`{"name": "abc", "n": 9}`))
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": native{s}})}
	out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p", "schema": objSchema}))
	if out.Err != nil || !reflect.DeepEqual(out.Output, map[string]any{"name": "abc", "n": 9}) {
		t.Fatalf("outcome %+v", out)
	}
	for i, r := range s.Requests() {
		if !reflect.DeepEqual(r.Schema, objSchema) || r.System != "" {
			t.Errorf("request %d: schema %v, system %q", i, r.Schema, r.System)
		}
	}
}

func TestProviderFailures(t *testing.T) {
	t.Run("INFER-001 passes through", func(t *testing.T) {
		s := providertest.NewScripted(providertest.Fail(provider.ReasonRateLimited))
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
		out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p"}))
		if out.Err == nil || out.Err.Code != "NIKA-INFER-001" || !out.Err.Transient || provider.ReasonOf(out.Err) != provider.ReasonRateLimited {
			t.Fatalf("outcome %+v", out)
		}
		if len(out.Usage) != 0 {
			t.Errorf("usage %+v", out.Usage)
		}
	})
	t.Run("the exact error passes through", func(t *testing.T) {
		custom := provider.Failure{Model: scriptedModel, Status: 401, Reason: provider.ReasonAuthFailed}.Err()
		s := providertest.NewScripted(providertest.Error(custom))
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
		if out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p"})); out.Err != custom {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("failure during a re-ask keeps the usage so far", func(t *testing.T) {
		s := providertest.NewScripted(providertest.Reply("not json"), providertest.Fail(provider.ReasonServerError))
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
		out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p", "schema": objSchema}))
		if out.Err == nil || out.Err.Code != "NIKA-INFER-001" || len(out.Usage) != 1 {
			t.Fatalf("outcome %+v", out)
		}
	})
	for _, tt := range []struct{ name, model, reason string }{
		{"unconfigured provider", "anthropic/claude", provider.ReasonModelNotFound},
		{"malformed model", "nomodel", provider.ReasonBadRequest},
		{"mock serves only echo", "mock/other", provider.ReasonModelNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := &Verb{Providers: registry(nil)}
			out := v.Run(context.Background(), job(tt.model, map[string]any{"prompt": "p"}))
			if out.Err == nil || out.Err.Code != "NIKA-INFER-001" || provider.ReasonOf(out.Err) != tt.reason {
				t.Fatalf("outcome %+v", out)
			}
		})
	}
	t.Run("no registry", func(t *testing.T) {
		out := (&Verb{}).Run(context.Background(), job(provider.MockModel, map[string]any{"prompt": "p"}))
		if out.Err == nil || out.Err.Code != "NIKA-INFER-001" {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("vision is ignored by the mock (§6.3)", func(t *testing.T) {
		v := &Verb{Providers: registry(nil)}
		out := v.Run(context.Background(), job(provider.MockModel, map[string]any{"prompt": "p",
			"vision": []any{map[string]any{"source": "file", "path": "a.png"}}}))
		if out.Err != nil || out.Output != "p" {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("vision without a loader fails, not dropped", func(t *testing.T) {
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": providertest.NewScripted(providertest.Reply("x"))})}
		out := v.Run(context.Background(), job("openai/gpt-4o", map[string]any{"prompt": "p",
			"vision": []any{map[string]any{"source": "url", "url": "https://example.com/a.png"}}}))
		if out.Err == nil || out.Err.Code != "NIKA-VAR-006" {
			t.Fatalf("outcome %+v", out)
		}
	})
}

// media is a MediaLoader double: it records what it was asked and answers from a table.
type media struct {
	mu    sync.Mutex
	asked []string
	fail  error
}

func (m *media) LoadImage(_ context.Context, call tools.Call, field, source, ref string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, field+" "+source+" "+ref+" "+call.RunDir)
	if m.fail != nil {
		return nil, "", m.fail
	}
	return []byte(ref), "image/png", nil
}

// Vision inputs are loaded in order through Media, with the job's run directory, and go first in
// the user message, before the prompt.
func TestVision(t *testing.T) {
	s := providertest.NewScripted(providertest.Reply("seen"))
	m := &media{}
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s}), Media: m}
	j := job(scriptedModel, map[string]any{"prompt": "what is this?", "vision": []any{
		map[string]any{"source": "file", "path": "a.png"},
		map[string]any{"source": "url", "url": "https://example.com/b.png"},
	}})
	j.RunDir = "/run"
	out := v.Run(context.Background(), j)
	if out.Err != nil || out.Output != "seen" {
		t.Fatalf("outcome %+v", out)
	}
	if want := []string{"vision[0] file a.png /run", "vision[1] url https://example.com/b.png /run"}; !reflect.DeepEqual(m.asked, want) {
		t.Errorf("asked %q, want %q", m.asked, want)
	}
	blocks := s.Requests()[0].Messages[0].Blocks
	want := []provider.Block{provider.ImageBlock("image/png", []byte("a.png")),
		provider.ImageBlock("image/png", []byte("https://example.com/b.png")), provider.TextBlock("what is this?")}
	if !reflect.DeepEqual(blocks, want) {
		t.Errorf("blocks %+v, want %+v", blocks, want)
	}

	t.Run("a loader error is the task's error", func(t *testing.T) {
		s := providertest.NewScripted(providertest.Reply("seen"))
		m := &media{fail: spec.NewError("NIKA-SEC-005", "vision[0]: refused", nil)}
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s}), Media: m}
		out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p",
			"vision": []any{map[string]any{"source": "url", "url": "http://127.0.0.1/x.png"}}}))
		if out.Err == nil || out.Err.Code != "NIKA-SEC-005" || len(s.Requests()) != 0 {
			t.Fatalf("outcome %+v, %d requests", out, len(s.Requests()))
		}
	})
	t.Run("bad items", func(t *testing.T) {
		for _, item := range []any{"a.png", map[string]any{"source": "disk", "path": "a"}, map[string]any{"source": "file"}} {
			v := &Verb{Providers: registry(map[string]provider.Provider{"openai": providertest.NewScripted()}), Media: &media{}}
			out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p", "vision": []any{item}}))
			if out.Err == nil || out.Err.Code != "NIKA-VAR-006" {
				t.Errorf("%v: outcome %+v", item, out)
			}
		}
	})
}

// thinker is a scripted provider that reports native thinking.
type thinker struct{ *providertest.Scripted }

func (thinker) SupportsThinking(string) bool { return true }

// `thinking` reaches a provider that supports it; a provider without support gets no Thinking,
// and the task says so with a warn log event (LANGUAGE.md §5.1).
func TestThinking(t *testing.T) {
	for _, tt := range []struct {
		name     string
		thinking any
		want     *provider.Thinking
	}{
		{"budget", map[string]any{"enabled": true, "budget_tokens": 5000}, &provider.Thinking{BudgetTokens: 5000}},
		{"enabled defaults to true", map[string]any{"budget_tokens": 3000}, &provider.Thinking{BudgetTokens: 3000}},
		{"default budget", map[string]any{"enabled": true}, &provider.Thinking{BudgetTokens: DefaultThinkingBudget}},
		{"disabled", map[string]any{"enabled": false, "budget_tokens": 3000}, nil},
		{"absent", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, supports := range []bool{true, false} {
				s := providertest.NewScripted(providertest.Reply("ok"))
				var p provider.Provider = s
				if supports {
					p = thinker{s}
				}
				v := &Verb{Providers: registry(map[string]provider.Provider{"openai": p})}
				f := map[string]any{"prompt": "p"}
				if tt.thinking != nil {
					f["thinking"] = tt.thinking
				}
				j := job(scriptedModel, f)
				var logs []map[string]any
				j.Emit = func(kind string, f map[string]any) {
					if kind == "log" {
						logs = append(logs, f)
					}
				}
				if out := v.Run(context.Background(), j); out.Err != nil {
					t.Fatal(out.Err)
				}
				got := s.Requests()[0].Thinking
				want := tt.want
				if !supports {
					want = nil
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("supports=%v: Thinking %+v, want %+v", supports, got, want)
				}
				warned := len(logs) == 1 && logs[0]["level"] == "warn" && strings.Contains(logs[0]["message"].(string), "`thinking` is ignored")
				if wantWarn := !supports && tt.want != nil; warned != wantWarn || len(logs) > 1 {
					t.Errorf("supports=%v: logs %v, want a warning: %v", supports, logs, wantWarn)
				}
			}
		})
	}
	t.Run("bad budget", func(t *testing.T) {
		v := &Verb{Providers: registry(map[string]provider.Provider{"openai": thinker{providertest.NewScripted()}})}
		out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p", "thinking": map[string]any{"budget_tokens": 0}}))
		if out.Err == nil || out.Err.Code != "NIKA-VAR-006" {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("the mock takes it without a warning", func(t *testing.T) {
		v := &Verb{Providers: registry(nil)}
		j := job(provider.MockModel, map[string]any{"prompt": "p", "thinking": map[string]any{"enabled": true}})
		j.Emit = func(kind string, f map[string]any) { t.Errorf("event %s %v", kind, f) }
		if out := v.Run(context.Background(), j); out.Err != nil || out.Output != "p" {
			t.Fatalf("outcome %+v", out)
		}
	})
}

func TestContractBreach(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    provider.Provider
	}{
		{"panic", panicking{}},
		{"wrong count", short{}},
		{"empty outcome", empty{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := &Verb{Providers: registry(map[string]provider.Provider{"openai": tt.p})}
			out := v.Run(context.Background(), job(scriptedModel, map[string]any{"prompt": "p"}))
			if out.Err == nil || out.Err.Category != "internal_error" {
				t.Fatalf("outcome %+v", out)
			}
		})
	}
}

type panicking struct{}

func (panicking) Complete(context.Context, []provider.Request) []provider.Outcome { panic("boom") }

type short struct{}

func (short) Complete(context.Context, []provider.Request) []provider.Outcome { return nil }

type empty struct{}

func (empty) Complete(_ context.Context, reqs []provider.Request) []provider.Outcome {
	return make([]provider.Outcome, len(reqs))
}

func TestCancelled(t *testing.T) {
	cause := errors.New("task deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	s := providertest.NewScripted(providertest.Reply("never"))
	v := &Verb{Providers: registry(map[string]provider.Provider{"openai": s})}
	out := v.Run(ctx, job(scriptedModel, map[string]any{"prompt": "p"}))
	if out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, cause) {
		t.Fatalf("outcome %+v", out)
	}
	var inner *spec.Error
	if !errors.As(errors.Unwrap(out.Err), &inner) || inner.Code != "NIKA-INFER-001" {
		t.Errorf("the provider's error is not wrapped: %v", errors.Unwrap(out.Err))
	}
}

func TestRunBatch(t *testing.T) {
	mock := &counting{Provider: provider.NewMock()}
	s := providertest.NewScripted(providertest.Reply("not json"), providertest.Reply("plain"), providertest.Reply(`{"name":"abcd","n":3}`))
	scripted := &counting{Provider: s}
	v := &Verb{Providers: registry(map[string]provider.Provider{"mock": mock, "openai": scripted})}
	jobs := []workflow.Job{
		job(provider.MockModel, map[string]any{"prompt": "one"}),
		job(scriptedModel, map[string]any{"prompt": "needs a re-ask", "schema": objSchema}),
		job(provider.MockModel, map[string]any{"prompt": ""}), // VAR-006, never sent
		job(provider.MockModel, map[string]any{"prompt": "two"}),
		job(scriptedModel, map[string]any{"prompt": "plain"}),
		job(provider.MockModel, map[string]any{"prompt": "three", "schema": objSchema}),
	}
	out := v.RunBatch(context.Background(), jobs)
	if len(out) != len(jobs) {
		t.Fatalf("%d outcomes for %d jobs", len(out), len(jobs))
	}
	want := []any{"one", map[string]any{"name": "abcd", "n": 3}, nil, "two", "plain", map[string]any{"name": "xxx", "n": 2}}
	for i, o := range out {
		if i == 2 {
			if o.Err == nil || o.Err.Code != "NIKA-VAR-006" {
				t.Errorf("job 2: %+v", o)
			}
			continue
		}
		if o.Err != nil || !reflect.DeepEqual(o.Output, want[i]) {
			t.Errorf("job %d: %+v, want %#v", i, o, want[i])
		}
	}
	if len(out[1].Usage) != 2 || len(out[0].Usage) != 1 {
		t.Errorf("usages %d and %d", len(out[1].Usage), len(out[0].Usage))
	}
	// The first requests go to each provider in one Complete call; the re-ask is a second round.
	if !reflect.DeepEqual(mock.calls, []int{3}) {
		t.Errorf("mock Complete calls %v, want [3]", mock.calls)
	}
	if !reflect.DeepEqual(scripted.calls, []int{2, 1}) {
		t.Errorf("scripted Complete calls %v, want [2 1]", scripted.calls)
	}
	reqs := s.Requests()
	if provider.Text(reqs[0].Messages[0]) != "needs a re-ask" || provider.Text(reqs[1].Messages[0]) != "plain" {
		t.Errorf("scripted requests out of job order")
	}
	if got := v.RunBatch(context.Background(), nil); len(got) != 0 {
		t.Errorf("empty batch: %v", got)
	}
}

// Each provider request is reported to the live stream (D19) with its usage.
func TestLiveProviderRequest(t *testing.T) {
	var notes []workflow.LiveNote
	j := job(provider.MockModel, map[string]any{"prompt": "hello world!"})
	j.Live = func(n workflow.LiveNote) { notes = append(notes, n) }
	if out := (&Verb{Providers: registry(nil)}).Run(context.Background(), j); out.Err != nil {
		t.Fatal(out.Err)
	}
	if len(notes) != 1 || notes[0].Kind != "provider_request" || notes[0].Provider != "mock" || notes[0].Outcome != "ok" ||
		notes[0].InputTokens != 3 || notes[0].OutputTokens != 3 {
		t.Errorf("notes = %+v", notes)
	}
}

func nan() float64 { return math.NaN() }

// A failed request reaches the live stream with its D27 reason as the outcome (D19), so metrics
// label it rate_limited, server_error, … rather than by its NIKA code.
func TestLiveProviderRequestFailureReason(t *testing.T) {
	var notes []workflow.LiveNote
	s := providertest.NewScripted(providertest.Fail(provider.ReasonRateLimited))
	j := job(scriptedModel, map[string]any{"prompt": "p"})
	j.Live = func(n workflow.LiveNote) { notes = append(notes, n) }
	(&Verb{Providers: registry(map[string]provider.Provider{"openai": s})}).Run(context.Background(), j)
	if len(notes) != 1 || notes[0].Outcome != provider.ReasonRateLimited || !notes[0].RateLimited ||
		notes[0].Code != "NIKA-INFER-001" || !notes[0].IsError {
		t.Errorf("notes = %+v", notes)
	}
}
