package openai_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/provider/providertest"
)

// TestConformance runs the provider conformance suite against every Chat Completions profile whose
// tool-call ids pass through unchanged (Mistral's 9-character ids are covered by adapter_test.go).
func TestConformance(t *testing.T) {
	for _, p := range openai.Profiles() {
		if p.IDs9 {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			providertest.Run(t, chatCompletionsWire(p))
		})
	}
}

func chatCompletionsWire(p openai.Profile) providertest.Wire {
	return providertest.Wire{
		Name:   "openai/" + p.Name,
		Stream: &chatCompletionsStream,
		New: func(baseURL string) provider.Adapter {
			env := map[string]string{p.KeyVars[0]: providertest.TestKey, p.BaseURLVars[0]: baseURL}
			a, err := openai.New(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
			if err != nil {
				panic(err)
			}
			return a
		},
		Reply: func(w http.ResponseWriter, msg provider.Message, usage *provider.Usage, stop string) {
			type function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			type call struct {
				ID       string   `json:"id"`
				Type     string   `json:"type"`
				Function function `json:"function"`
			}
			m := map[string]any{"role": "assistant", "content": nil}
			var calls []call
			for _, b := range msg.Blocks {
				if b.Type == provider.BlockToolUse {
					calls = append(calls, call{ID: b.ID, Type: "function", Function: function{Name: b.Name, Arguments: string(b.Input)}})
				}
			}
			if text := provider.Text(msg); text != "" {
				m["content"] = text
			}
			if len(calls) > 0 {
				m["tool_calls"] = calls
			}
			finish := map[string]string{provider.StopEndTurn: "stop", provider.StopToolUse: "tool_calls", provider.StopMaxTokens: "length"}[stop]
			body := map[string]any{
				"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test-model",
				"choices": []any{map[string]any{"index": 0, "message": m, "finish_reason": finish}},
			}
			if usage != nil {
				body["usage"] = map[string]int{"prompt_tokens": usage.InputTokens, "completion_tokens": usage.OutputTokens,
					"total_tokens": usage.InputTokens + usage.OutputTokens}
			}
			writeJSON(w, http.StatusOK, body)
		},
		Error: func(w http.ResponseWriter, status int, retryAfter string) {
			typ, code := "invalid_request_error", any(nil)
			switch status {
			case http.StatusUnauthorized:
				code = "invalid_api_key"
			case http.StatusNotFound:
				code = "model_not_found"
			case http.StatusTooManyRequests:
				typ, code = "requests", "rate_limit_exceeded"
			default:
				if status >= 500 {
					typ = "server_error"
				}
			}
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeJSON(w, status, map[string]any{"error": map[string]any{
				"message": http.StatusText(status), "type": typ, "param": nil, "code": code}})
		},
		Decode: func(body []byte) ([]string, []string, error) {
			var req struct {
				Tools []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tools"`
				Messages []struct {
					Role       string `json:"role"`
					ToolCallID string `json:"tool_call_id"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return nil, nil, err
			}
			var names, ids []string
			for _, t := range req.Tools {
				names = append(names, t.Function.Name)
			}
			for _, m := range req.Messages {
				if m.Role == "tool" {
					ids = append(ids, m.ToolCallID)
				}
			}
			return names, ids, nil
		},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// finishReason is the wire's finish_reason for a neutral stop reason.
func finishReason(stop string) string {
	return map[string]string{provider.StopEndTurn: "stop", provider.StopToolUse: "tool_calls", provider.StopMaxTokens: "length"}[stop]
}

// chatCompletionsStream streams as OpenAI does: a first chunk with the role, content pieces, for
// each call a chunk with its index, id and name and then its argument pieces, a chunk with the
// finish_reason, the include_usage chunk (choices: []), then [DONE].
var chatCompletionsStream = providertest.StreamWire{
	Events: func(msg provider.Message, usage *provider.Usage, stop string, split int) []string {
		head := `{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1,"model":"test-model",`
		choice := func(delta any, finish any) string {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			return providertest.SSE("", head+string(b[1:]))
		}
		ev := []string{choice(map[string]any{"role": "assistant", "content": ""}, nil)}
		if text := provider.Text(msg); text != "" {
			for _, p := range providertest.Pieces(text, split) {
				ev = append(ev, choice(map[string]any{"content": p}, nil))
			}
		}
		i := 0
		for _, b := range msg.Blocks {
			if b.Type != provider.BlockToolUse {
				continue
			}
			ev = append(ev, choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": b.ID, "type": "function",
				"function": map[string]any{"name": b.Name, "arguments": ""}}}}, nil))
			for _, p := range providertest.Pieces(string(b.Input), split) {
				ev = append(ev, choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
			}
			i++
		}
		ev = append(ev, choice(map[string]any{}, finishReason(stop)))
		if usage != nil {
			b, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": map[string]int{"prompt_tokens": usage.InputTokens,
				"completion_tokens": usage.OutputTokens, "total_tokens": usage.InputTokens + usage.OutputTokens}})
			ev = append(ev, providertest.SSE("", head+string(b[1:])))
		}
		return append(ev, providertest.SSE("", "[DONE]"))
	},
	// OpenRouter reports a failure after the model started as an error chunk (WIRES.md §1.7).
	ErrorEvent:  providertest.SSE("", `{"error":{"code":502,"message":"Upstream provider overloaded"}}`),
	ErrorReason: provider.ReasonServerError,
}
