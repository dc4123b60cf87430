package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/provider"
)

type wireResponse struct {
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Message      wireRespMessage `json:"message"`
	FinishReason *string         `json:"finish_reason"`
}

type wireRespMessage struct {
	Content          json.RawMessage `json:"content"`
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []wireRespCall  `json:"tool_calls"`
}

type wireRespCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// decode maps a 2xx body. A body that is not a JSON object or has no choices is reason server_error
// (the server answered, but not with a usable reply; transient, as a repeat may succeed). An error
// object with no choices is an error whatever the status (OpenRouter, D46).
func (a *Adapter) decode(model string, status int, h http.Header, raw []byte, names *provider.Names) provider.Outcome {
	fail := func(reason, msg string, cause error) provider.Outcome {
		return provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Status: status,
			Reason: reason, Message: a.mask(msg), Cause: cause})
	}
	var w wireResponse
	if err := json.Unmarshal(raw, &w); err != nil {
		return fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: malformed JSON response: %s", a.where(), status, oneLine(err.Error())), err)
	}
	if len(w.Choices) == 0 {
		if len(w.Error) > 0 && string(w.Error) != "null" {
			return a.httpFailure(model, status, h, raw)
		}
		return fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: response has no choices", a.where(), status), nil)
	}
	return a.mapChoice(model, status, w.Choices[0], w.Usage, names)
}

// mapChoice maps the first choice of a successful reply (plain, or assembled from a stream).
func (a *Adapter) mapChoice(model string, status int, c wireChoice, usage *wireUsage, names *provider.Names) provider.Outcome {
	fail := func(reason, msg string) provider.Outcome {
		return provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Status: status,
			Reason: reason, Message: a.mask(msg)})
	}
	finish := ""
	if c.FinishReason != nil {
		finish = *c.FinishReason
	}
	if finish == "insufficient_system_resource" { // DeepSeek: generation cut for lack of capacity
		return fail(provider.ReasonServerError, a.Profile.Name+": generation cut: insufficient_system_resource")
	}
	msg := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{}}
	if text := contentText(c.Message.Content); text != "" {
		msg.Blocks = append(msg.Blocks, provider.TextBlock(text))
	}
	ids := make([]string, len(c.Message.ToolCalls))
	for i, tc := range c.Message.ToolCalls {
		ids[i] = tc.ID
	}
	ids = callIDs(ids)
	for i, tc := range c.Message.ToolCalls {
		msg.Blocks = append(msg.Blocks, provider.ToolUseBlock(ids[i], names.Canonical(tc.Function.Name), arguments(tc.Function.Arguments)))
	}
	if c.Message.ReasoningContent != nil && len(c.Message.ToolCalls) > 0 && a.Profile.ReplayReasoning {
		pd, _ := json.Marshal(providerData{ReasoningContent: c.Message.ReasoningContent})
		msg.ProviderData = pd
	}
	stop := stopReason(finish, len(c.Message.ToolCalls) > 0)
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		stop = provider.StopContentFilter
	}
	if stop == provider.StopContentFilter && len(msg.Blocks) == 0 {
		m := a.Profile.Name + ": the reply was filtered"
		if c.Message.Refusal != nil && *c.Message.Refusal != "" {
			m += ": " + clip(oneLine(*c.Message.Refusal))
		}
		return fail(provider.ReasonContentFilter, m)
	}
	out := &provider.Response{Message: msg, StopReason: stop}
	if usage != nil {
		out.Usage = provider.Usage{InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens, Reported: true}
	}
	return provider.Outcome{Response: out}
}

// callIDs are the ids of a reply's tool calls, in order: each as the server sent it, or
// "call_<position>" when it sent none or one already taken (WIRES.md §1.7 rule 2). An id depends
// only on the ids before it, so a streamed call's id is known once the calls before it are.
func callIDs(ids []string) []string {
	out := make([]string, len(ids))
	seen := map[string]bool{}
	for i, id := range ids {
		if id == "" || seen[id] {
			id = "call_" + strconv.Itoa(i)
		}
		seen[id] = true
		out[i] = id
	}
	return out
}

// contentText accepts content as a string, null, or an array of text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "" || p.Type == "text" {
				sb.WriteString(p.Text)
			}
		}
		return sb.String()
	}
	return ""
}

// arguments decodes function.arguments: a JSON string holding JSON (OpenAI), or an object (some
// llama.cpp builds); empty/absent → {}. The value is decoded with UseNumber and re-encoded compact
// (key order preserved). Arguments that are not JSON are kept as a JSON string, so the loop's
// validation reports them rather than the adapter dropping the call.
func arguments(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	src := raw
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return json.RawMessage("{}")
		}
		if strings.TrimSpace(s) == "" {
			return json.RawMessage("{}")
		}
		src = []byte(s)
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil || dec.More() {
		b, _ := json.Marshal(string(src))
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		b, _ := json.Marshal(string(src))
		return b
	}
	return buf.Bytes()
}

// stopReason maps finish_reason (WIRES.md §4.2).
func stopReason(finish string, calls bool) string {
	if finish == "length" {
		return provider.StopMaxTokens
	}
	if calls {
		return provider.StopToolUse
	}
	switch finish {
	case "stop":
		return provider.StopEndTurn
	case "tool_calls", "function_call", "tool":
		return provider.StopToolUse
	case "content_filter":
		return provider.StopContentFilter
	}
	return provider.StopUnknown
}

// ---- errors ----

// wireError is the union of the error body shapes of WIRES.md §1.7 rule 5.
type wireError struct {
	message string
	typ     string
	code    string
	codeInt int
}

func parseError(raw []byte) (wireError, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return wireError{}, false
	}
	var we wireError
	obj := top
	if e, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(e, &inner) == nil {
			obj = inner
		} else {
			_ = json.Unmarshal(e, &we.message) // {"error": "<string>"}
		}
	}
	if m, ok := obj["message"]; ok && we.message == "" {
		if json.Unmarshal(m, &we.message) != nil {
			we.message = compact(m) // message as an object (Mistral 422)
		}
	}
	if t, ok := obj["type"]; ok {
		_ = json.Unmarshal(t, &we.typ)
	}
	if c, ok := obj["code"]; ok {
		if json.Unmarshal(c, &we.code) != nil {
			var n json.Number
			if json.Unmarshal(c, &n) == nil {
				we.code = n.String()
				if i, err := n.Int64(); err == nil {
					we.codeInt = int(i)
				}
			}
		}
	}
	return we, we.message != "" || we.typ != "" || we.code != ""
}

// httpFailure classifies an error answer by body, then status (D46, WIRES.md §1.5, §4.3). For an
// error inside a 200 body, an integer error.code of 400–599 stands in for the status when
// classifying; details.status stays the HTTP status.
func (a *Adapter) httpFailure(model string, status int, h http.Header, raw []byte) provider.Outcome {
	we, _ := parseError(raw)
	eff := status
	if status < 400 && we.codeInt >= 400 && we.codeInt <= 599 {
		eff = we.codeInt
	}
	reason := classify(eff, we)
	msg := fmt.Sprintf("%s: HTTP %d", a.where(), status)
	if eff != status {
		msg += fmt.Sprintf(" (error %d)", eff)
	}
	msg += " (" + reason + ")"
	if we.message != "" {
		msg += ": " + clip(oneLine(we.message))
	} else if len(raw) > 0 && !json.Valid(raw) {
		msg += ": " + clip(oneLine(string(raw)))
	}
	if eff == http.StatusNotFound {
		msg += a.notFoundHint()
	}
	return provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Status: status, Reason: reason,
		RetryAfterMs: retryAfterMs(h, a.clock()), Message: a.mask(msg)})
}

func classify(status int, we wireError) string {
	hay := strings.ToLower(we.typ + " " + we.code + " " + we.message)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(hay, w) {
				return true
			}
		}
		return false
	}
	switch {
	case status == 402,
		(status == 429 || status == 403) && has("insufficient_quota", "credit_balance_exhausted", "exceeded your current quota", "billing", "insufficient balance", "insufficient credits"):
		return provider.ReasonQuotaExceeded
	case status == 400 && has("invalid_api_key", "incorrect api key", "invalid api key", "api key not valid", "authentication_error", "unauthorized"):
		return provider.ReasonAuthFailed
	case status == 401 || status == 403:
		return provider.ReasonAuthFailed
	case status == 404:
		return provider.ReasonModelNotFound
	case status == 429:
		return provider.ReasonRateLimited
	case status == 408 || status == 409 || status >= 500 || has("overloaded_error", "server_is_overloaded"):
		return provider.ReasonServerError
	case has("content_filter", "content_policy_violation"):
		return provider.ReasonContentFilter
	}
	return provider.ReasonBadRequest
}

// retryAfterMs parses the server's retry hint (WIRES.md §4.4): retry-after-ms (float milliseconds),
// then Retry-After as float seconds, then as an HTTP-date relative to now (negative → 0). 0 when
// absent or unparseable. Fractions are rounded up to the next millisecond.
func retryAfterMs(h http.Header, now time.Time) int64 { return provider.RetryAfterMs(h, now) }

func compact(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func clip(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}
