package gemini_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/gemini"
	"github.com/nikahq/nika/provider/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, generateContentWire)
}

// generateContentWire speaks the Gemini generateContent wire (WIRES.md §3) for the conformance suite.
var generateContentWire = providertest.Wire{
	Name:   "gemini",
	Stream: &generateContentStream,
	New: func(baseURL string) provider.Adapter {
		env := map[string]string{"NIKA_GEMINI_API_KEY": providertest.TestKey, "NIKA_GEMINI_BASE_URL": baseURL}
		a, err := gemini.New(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if err != nil {
			panic(err)
		}
		return a
	},
	Reply: func(w http.ResponseWriter, msg provider.Message, usage *provider.Usage, stop string) {
		parts := []any{}
		for _, b := range msg.Blocks {
			switch b.Type {
			case provider.BlockText:
				parts = append(parts, map[string]any{"text": b.Text})
			case provider.BlockToolUse:
				fc := map[string]any{"name": b.Name, "args": json.RawMessage(b.Input)}
				if b.ID != "" {
					fc["id"] = b.ID
				}
				parts = append(parts, map[string]any{"functionCall": fc})
			}
		}
		// Gemini ends both a text reply and a reply with function calls with STOP.
		finish := map[string]string{provider.StopEndTurn: "STOP", provider.StopToolUse: "STOP", provider.StopMaxTokens: "MAX_TOKENS"}[stop]
		if finish == "" {
			finish = "STOP"
		}
		body := map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": parts},
				"finishReason": finish,
				"index":        0,
			}},
			"modelVersion": "test-model",
		}
		if usage != nil {
			body["usageMetadata"] = map[string]int{"promptTokenCount": usage.InputTokens, "candidatesTokenCount": usage.OutputTokens,
				"totalTokenCount": usage.InputTokens + usage.OutputTokens}
		}
		writeJSON(w, http.StatusOK, body)
	},
	Error: func(w http.ResponseWriter, status int, retryAfter string) {
		st := map[int]string{
			http.StatusBadRequest:          "INVALID_ARGUMENT",
			http.StatusUnauthorized:        "UNAUTHENTICATED",
			http.StatusForbidden:           "PERMISSION_DENIED",
			http.StatusNotFound:            "NOT_FOUND",
			http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
			http.StatusServiceUnavailable:  "UNAVAILABLE",
			http.StatusGatewayTimeout:      "DEADLINE_EXCEEDED",
			http.StatusInternalServerError: "INTERNAL",
		}[status]
		if st == "" {
			st = "UNKNOWN"
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"code": status, "message": http.StatusText(status), "status": st}})
	},
	Decode: func(body []byte) ([]string, []string, error) {
		var req struct {
			Tools []struct {
				FunctionDeclarations []struct {
					Name string `json:"name"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					FunctionResponse *struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, nil, err
		}
		var names, ids []string
		for _, t := range req.Tools {
			for _, d := range t.FunctionDeclarations {
				names = append(names, d.Name)
			}
		}
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					ids = append(ids, p.FunctionResponse.ID)
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// generateContentStream streams as streamGenerateContent?alt=sse does (WIRES.md §3): one chunk per
// text piece or function call, each a GenerateContentResponse with the usage so far, the last
// one with the finishReason and the whole usage.
var generateContentStream = providertest.StreamWire{
	Events: func(msg provider.Message, usage *provider.Usage, stop string, split int) []string {
		chunk := func(parts []any, finish string, u *provider.Usage) string {
			cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
			if finish != "" {
				cand["finishReason"] = finish
			}
			body := map[string]any{"candidates": []any{cand}, "modelVersion": "test-model"}
			if u != nil {
				body["usageMetadata"] = map[string]int{"promptTokenCount": u.InputTokens, "candidatesTokenCount": u.OutputTokens,
					"totalTokenCount": u.InputTokens + u.OutputTokens}
			}
			b, err := json.Marshal(body)
			if err != nil {
				panic(err)
			}
			return providertest.SSE("", string(b))
		}
		var partial *provider.Usage // the usage so far: the prompt only
		if usage != nil {
			partial = &provider.Usage{InputTokens: usage.InputTokens}
		}
		var out []string
		for _, b := range msg.Blocks {
			switch b.Type {
			case provider.BlockText:
				for _, p := range providertest.Pieces(b.Text, split) {
					out = append(out, chunk([]any{map[string]any{"text": p}}, "", partial))
				}
			case provider.BlockToolUse:
				fc := map[string]any{"name": b.Name, "args": json.RawMessage(b.Input)}
				if b.ID != "" {
					fc["id"] = b.ID
				}
				out = append(out, chunk([]any{map[string]any{"functionCall": fc}}, "", partial))
			}
		}
		finish := map[string]string{provider.StopMaxTokens: "MAX_TOKENS"}[stop]
		if finish == "" {
			finish = "STOP"
		}
		return append(out, chunk([]any{map[string]any{"text": ""}}, finish, usage))
	},
	ErrorEvent:  providertest.SSE("", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
	ErrorReason: provider.ReasonServerError,
}
