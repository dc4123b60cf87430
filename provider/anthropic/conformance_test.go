package anthropic_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/anthropic"
	"github.com/nikahq/nika/provider/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, messagesWire)
}

// messagesWire speaks the Messages wire (WIRES.md §2) for the conformance suite.
var messagesWire = providertest.Wire{
	Name:   "anthropic",
	Stream: &messagesStream,
	New: func(baseURL string) provider.Adapter {
		env := map[string]string{"NIKA_ANTHROPIC_API_KEY": providertest.TestKey, "NIKA_ANTHROPIC_BASE_URL": baseURL}
		a, err := anthropic.New(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if err != nil {
			panic(err)
		}
		return a
	},
	Reply: func(w http.ResponseWriter, msg provider.Message, usage *provider.Usage, stop string) {
		content := []any{}
		for _, b := range msg.Blocks {
			switch b.Type {
			case provider.BlockText:
				content = append(content, map[string]any{"type": "text", "text": b.Text})
			case provider.BlockToolUse:
				content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(b.Input)})
			}
		}
		body := map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model",
			"content": content, "stop_reason": stop, "stop_sequence": nil, // the neutral stop reasons are this wire's names
		}
		if usage != nil {
			body["usage"] = map[string]int{"input_tokens": usage.InputTokens, "output_tokens": usage.OutputTokens}
		}
		writeJSON(w, http.StatusOK, body)
	},
	Error: func(w http.ResponseWriter, status int, retryAfter string) {
		typ := map[int]string{
			http.StatusBadRequest:      "invalid_request_error",
			http.StatusUnauthorized:    "authentication_error",
			http.StatusForbidden:       "permission_error",
			http.StatusNotFound:        "not_found_error",
			http.StatusTooManyRequests: "rate_limit_error",
			529:                        "overloaded_error",
		}[status]
		if typ == "" {
			typ = "api_error"
		}
		if retryAfter != "" {
			w.Header().Set("retry-after", retryAfter)
		}
		writeJSON(w, status, map[string]any{"type": "error",
			"error": map[string]string{"type": typ, "message": http.StatusText(status)}, "request_id": "req_test"})
	},
	Decode: func(body []byte) ([]string, []string, error) {
		var req struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, nil, err
		}
		var names, ids []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					ids = append(ids, b.ToolUseID)
				}
			}
		}
		return names, ids, nil
	},
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// messagesStream streams as the Messages API does (WIRES.md §2): message_start with the input
// usage, per block a content_block_start, its deltas and a content_block_stop, pings between,
// message_delta with the stop reason and the output usage, then message_stop.
var messagesStream = providertest.StreamWire{
	Events: func(msg provider.Message, usage *provider.Usage, stop string, split int) []string {
		ev := func(typ string, v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			return providertest.SSE(typ, string(b))
		}
		start := map[string]any{"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model",
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil}
		if usage != nil {
			start["usage"] = map[string]int{"input_tokens": usage.InputTokens, "output_tokens": 1}
		}
		out := []string{ev("message_start", map[string]any{"type": "message_start", "message": start}), ev("ping", map[string]any{"type": "ping"})}
		for i, b := range msg.Blocks {
			switch b.Type {
			case provider.BlockText:
				out = append(out, ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
					"content_block": map[string]any{"type": "text", "text": ""}}))
				for _, p := range providertest.Pieces(b.Text, split) {
					out = append(out, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
						"delta": map[string]any{"type": "text_delta", "text": p}}))
				}
			case provider.BlockToolUse:
				out = append(out, ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
					"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}}))
				for _, p := range append([]string{""}, providertest.Pieces(string(b.Input), split)...) {
					out = append(out, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
						"delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
				}
			}
			out = append(out, ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
		}
		md := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}}
		if usage != nil {
			md["usage"] = map[string]int{"output_tokens": usage.OutputTokens}
		}
		return append(out, ev("message_delta", md), ev("message_stop", map[string]any{"type": "message_stop"}))
	},
	ErrorEvent:  providertest.SSE("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
	ErrorReason: provider.ReasonServerError,
}
