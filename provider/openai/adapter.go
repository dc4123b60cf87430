package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nikahq/nika/provider"
)

// maxBody bounds the bytes read from one response.
const maxBody = 32 << 20

// Adapter speaks Chat Completions to one provider (provider.Adapter). It holds no policy: no retries,
// no limiter. It is safe for concurrent use.
type Adapter struct {
	Profile Profile
	BaseURL string // without a trailing "/"
	Key     string // "" → no Authorization header
	Client  *http.Client

	now func() time.Time // clock for Retry-After HTTP-dates; nil → time.Now

	// plainOnly is set once the server refused a streamed request (ExchangeStream): every later
	// one is sent plain.
	plainOnly atomic.Bool
}

var (
	_ provider.Adapter        = (*Adapter)(nil)
	_ provider.NativeSchema   = (*Adapter)(nil)
	_ provider.NativeThinking = (*Adapter)(nil)
)

// New builds the adapter of p. The key is the first non-empty value of p.KeyVars, the base URL the
// first non-empty value of p.BaseURLVars, else p.BaseURL. lookup reads the environment (os.LookupEnv
// in production). A required key that is missing is an error naming the variable; a key never
// appears in an error. A nil client is http.DefaultClient.
func New(p Profile, lookup func(string) (string, bool), client *http.Client) (*Adapter, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	a := &Adapter{Profile: p, BaseURL: p.BaseURL, Client: client, Key: provider.Env(lookup, p.KeyVars...)}
	if base := provider.Env(lookup, p.BaseURLVars...); base != "" {
		a.BaseURL = base
	}
	a.BaseURL = strings.TrimRight(a.BaseURL, "/")
	if a.Key == "" && p.KeyRequired {
		name := provider.EnvVar(p.Name, "API_KEY")
		if len(p.KeyVars) > 0 {
			name = strings.Join(p.KeyVars, " or ")
		}
		return nil, fmt.Errorf("provider %s: no API key: set %s", p.Name, name)
	}
	if a.BaseURL == "" {
		return nil, fmt.Errorf("provider %s: no base URL: set %s", p.Name, strings.Join(p.BaseURLVars, " or "))
	}
	if a.Client == nil {
		a.Client = http.DefaultClient
	}
	return a, nil
}

// SupportsSchema reports whether Request.Schema is sent as a native json_schema response format
// (provider.NativeSchema).
func (a *Adapter) SupportsSchema(string) bool { return !a.Profile.JSONObjectOnly }

// SupportsThinking reports whether Request.Thinking is sent (provider.NativeThinking): the
// profile has a Reasoning form and, where it limits them, the model is one of its ReasoningModels.
func (a *Adapter) SupportsThinking(model string) bool {
	if a.Profile.Reasoning == "" {
		return false
	}
	_, name, _ := strings.Cut(model, "/")
	return a.Profile.ReasoningModels == nil || a.Profile.ReasoningModels.MatchString(name)
}

// Exchange sends one request and maps the answer (provider.Adapter).
func (a *Adapter) Exchange(ctx context.Context, req provider.Request) provider.Outcome {
	names := provider.NamesOf(req)
	body, err := a.encode(req, names, false)
	if err != nil {
		return a.encodeFailure(req.Model, err)
	}
	resp, failed := a.post(ctx, req.Model, body, "application/json")
	if failed != nil {
		return *failed
	}
	defer resp.Body.Close()
	return a.plainReply(ctx, req.Model, resp, names)
}

// plainReply reads and maps a whole (non-streamed) reply.
func (a *Adapter) plainReply(ctx context.Context, model string, resp *http.Response, names *provider.Names) provider.Outcome {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return a.transportFailure(ctx, model, resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a.httpFailure(model, resp.StatusCode, resp.Header, raw)
	}
	return a.decode(model, resp.StatusCode, resp.Header, raw, names)
}

func (a *Adapter) encodeFailure(model string, err error) provider.Outcome {
	return provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Reason: provider.ReasonBadRequest,
		Message: a.mask("cannot encode the request: " + err.Error()), Cause: err})
}

// post sends body to the chat completions route, asking for accept. A failure to send is the
// outcome; else the caller owns the response's body.
func (a *Adapter) post(ctx context.Context, model string, body []byte, accept string) (*http.Response, *provider.Outcome) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint(), bytes.NewReader(body))
	if err != nil {
		o := provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Reason: provider.ReasonBadRequest,
			Message: a.mask("cannot build the request: " + err.Error()), Cause: err})
		return nil, &o
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", accept)
	if a.Key != "" {
		hreq.Header.Set("Authorization", "Bearer "+a.Key)
	}
	resp, err := a.Client.Do(hreq)
	if err != nil {
		o := a.transportFailure(ctx, model, 0, err)
		return nil, &o
	}
	return resp, nil
}

// transportFailure classifies an error from sending or reading: the context first (deadline →
// timeout, cancellation → cancelled), then client timeouts, else network (this includes a body cut
// mid-way: WIRES.md §4.3 "EOF before a full body").
func (a *Adapter) transportFailure(ctx context.Context, model string, status int, err error) provider.Outcome {
	reason := provider.TransportReason(ctx, err)
	msg := fmt.Sprintf("%s: request failed (%s)", a.where(), reason)
	if status != 0 {
		msg = fmt.Sprintf("%s: HTTP %d: reading the response failed (%s)", a.where(), status, reason)
	}
	return provider.Failed(provider.Failure{Provider: a.Profile.Name, Model: model, Status: status,
		Reason: reason, Message: a.mask(msg + ": " + provider.TransportMessage(err)), Cause: err})
}

// endpoint is the URL of the chat completions route.
func (a *Adapter) endpoint() string { return a.BaseURL + "/chat/completions" }

// where names the request in an error: the provider and the URL tried, redacted (never a key or a
// query secret), so a wrong base URL reads as one.
func (a *Adapter) where() string {
	return a.Profile.Name + ": POST " + provider.RedactURL(a.endpoint())
}

// notFoundHint is added to a 404: with a base URL that has no version segment, the usual cause is
// a missing /v1 (a server answers its unknown routes with 404, which reads like an unknown model).
func (a *Adapter) notFoundHint() string {
	if provider.HasVersionSegment(a.BaseURL) {
		return ""
	}
	v := provider.EnvVar(a.Profile.Name, "BASE_URL")
	if len(a.Profile.BaseURLVars) > 0 {
		v = a.Profile.BaseURLVars[0]
	}
	return fmt.Sprintf(" — the base URL %s has no version segment; OpenAI-compatible servers usually serve under /v1: set %s to %s/v1",
		provider.RedactURL(a.BaseURL), v, provider.RedactURL(a.BaseURL))
}

// mask removes the key from a message (servers sometimes quote it).
func (a *Adapter) mask(s string) string {
	if a.Key != "" {
		s = strings.ReplaceAll(s, a.Key, "***")
	}
	return s
}

func (a *Adapter) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// ---- request ----

type wireRequest struct {
	Model             string          `json:"model"`
	Messages          []wireMessage   `json:"messages"`
	Tools             []wireTool      `json:"tools,omitempty"`
	ToolChoice        any             `json:"tool_choice,omitempty"` // "auto" | "none" | "required" | namedChoice
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *responseFormat `json:"response_format,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	MaxTokens         int             `json:"max_tokens,omitempty"`
	MaxCompletion     int             `json:"max_completion_tokens,omitempty"`
	ReasoningEffort   string          `json:"reasoning_effort,omitempty"`
	Reasoning         *reasoning      `json:"reasoning,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	StreamOptions     *streamOptions  `json:"stream_options,omitempty"`
}

// streamOptions asks for the usage chunk before [DONE] (WIRES.md §1.1).
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// reasoning is OpenRouter's reasoning object (Profile.Reasoning ReasoningMaxTokens).
type reasoning struct {
	MaxTokens int `json:"max_tokens"`
}

type wireMessage struct {
	Role             string         `json:"role"`
	Content          any            `json:"content"` // *string, or []contentPart for a user turn with images; null only on an assistant turn with calls only
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string      `json:"type"`
	Function wireFuncDef `json:"function"`
}

type wireFuncDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// namedChoice is the object form of tool_choice forcing one function (WIRES.md §1.1).
type namedChoice struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string `json:"name"`
	Strict *bool  `json:"strict,omitempty"`
	Schema any    `json:"schema"`
}

func ptr[T any](v T) *T { return &v }

// encode builds the request body; stream asks for the reply as server-sent events.
func (a *Adapter) encode(req provider.Request, names *provider.Names, stream bool) ([]byte, error) {
	choice, chosen, err := provider.ParseToolChoice(req)
	if err != nil {
		return nil, err
	}
	wantJSON, err := provider.WantsJSON(req)
	if err != nil {
		return nil, err
	}
	_, model, _ := strings.Cut(req.Model, "/")
	w := wireRequest{Model: model, Messages: []wireMessage{}, Temperature: req.Temperature}
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: ptr(req.System)})
	}
	for _, m := range req.Messages {
		msgs, err := a.encodeMessage(m, names)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, msgs...)
	}
	for _, t := range req.Tools {
		fd := wireFuncDef{Name: names.Wire(t.Name), Description: t.Description}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			var buf bytes.Buffer
			if err := json.Compact(&buf, t.Parameters); err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			fd.Parameters = buf.Bytes()
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: fd})
	}
	if len(w.Tools) > 0 && a.Profile.ParallelToolCalls {
		w.ParallelToolCalls = ptr(true)
	}
	// tool_choice only travels with tools (WIRES.md §1.1: omit it when there are none).
	if len(w.Tools) > 0 {
		switch choice {
		case provider.ChoiceAuto, provider.ChoiceNone, provider.ChoiceRequired:
			w.ToolChoice = choice
		case provider.ChoiceTool:
			nc := namedChoice{Type: "function"}
			nc.Function.Name = names.Wire(chosen)
			w.ToolChoice = nc
		}
	}
	if wantJSON {
		w.ResponseFormat = &responseFormat{Type: "json_object"}
		if a.Profile.NoJSONObject {
			w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: "output", Schema: map[string]any{}}}
		}
	}
	if req.Schema != nil {
		if a.Profile.JSONObjectOnly {
			w.ResponseFormat = &responseFormat{Type: "json_object"}
		} else {
			js := &jsonSchema{Name: "output", Schema: req.Schema}
			if !a.Profile.NoStrictSchema {
				js.Strict = ptr(true)
			}
			w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: js}
		}
	}
	if t := req.Thinking; t != nil && t.BudgetTokens > 0 && a.SupportsThinking(req.Model) {
		switch a.Profile.Reasoning {
		case ReasoningEffort:
			w.ReasoningEffort = Effort(t.BudgetTokens)
		case ReasoningMaxTokens:
			w.Reasoning = &reasoning{MaxTokens: t.BudgetTokens}
		}
	}
	if req.MaxTokens > 0 {
		if a.Profile.MaxTokensField == maxCompletionTokens {
			w.MaxCompletion = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	if stream {
		w.Stream = true
		if !a.Profile.NoStreamOptions {
			w.StreamOptions = &streamOptions{IncludeUsage: true}
		}
	}
	return json.Marshal(w)
}

// encodeMessage maps one neutral message. A user message's tool results become one "tool" message
// each, in block order, before any user text (the wire wants them right after the assistant turn).
func (a *Adapter) encodeMessage(m provider.Message, names *provider.Names) ([]wireMessage, error) {
	text := provider.Text(m)
	hasText := false
	for _, b := range m.Blocks {
		if b.Type == provider.BlockText {
			hasText = true
		}
	}
	var out []wireMessage
	switch m.Role {
	case provider.RoleAssistant:
		wm := wireMessage{Role: "assistant"}
		for _, b := range m.Blocks {
			if b.Type != provider.BlockToolUse {
				continue
			}
			args := a.replayArgs(b.Input)
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: a.wireID(b.ID), Type: "function",
				Function: wireFunction{Name: names.Wire(b.Name), Arguments: args}})
		}
		if hasText || len(wm.ToolCalls) == 0 {
			wm.Content = ptr(text)
		}
		if a.Profile.ReplayReasoning {
			if rc, ok := reasoningOf(m.ProviderData); ok {
				wm.ReasoningContent = &rc
			}
		}
		out = append(out, wm)
	default: // user
		for _, b := range m.Blocks {
			if b.Type == provider.BlockToolResult {
				out = append(out, wireMessage{Role: "tool", ToolCallID: a.wireID(b.ToolUseID), Content: ptr(b.Content)})
			}
		}
		if parts := userParts(m); parts != nil {
			out = append(out, wireMessage{Role: "user", Content: parts})
		} else if hasText || len(out) == 0 {
			out = append(out, wireMessage{Role: "user", Content: ptr(text)})
		}
	}
	return out, nil
}

// replayArgs is function.arguments of a replayed call: the input when it is a JSON object; else
// (arguments the model wrote that were not one, kept in the transcript as a JSON string) the text
// the model wrote, for a profile with RawArguments, or {} (provider.ReplayArgs).
func (a *Adapter) replayArgs(in json.RawMessage) string {
	if obj, err := provider.ObjectArgs(in); err == nil {
		return string(obj)
	}
	if !a.Profile.RawArguments {
		return string(provider.ReplayArgs(in))
	}
	var text string
	if json.Unmarshal(in, &text) == nil {
		return text
	}
	return string(bytes.TrimSpace(in))
}

// contentPart is one part of a user message's content array (WIRES §1.2): text, or an image as a
// base64 data URL.
type contentPart struct {
	Type     string    `json:"type"` // "text" | "image_url"
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// userParts is the content array of a user message that holds images: its text and image blocks
// in order. nil when it has no image (the content is then a plain string).
func userParts(m provider.Message) []contentPart {
	var parts []contentPart
	images := false
	for _, b := range m.Blocks {
		switch b.Type {
		case provider.BlockText:
			parts = append(parts, contentPart{Type: "text", Text: b.Text})
		case provider.BlockImage:
			images = true
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{
				URL: "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)}})
		}
	}
	if !images {
		return nil
	}
	return parts
}

// wireID maps a tool-call id for profiles with id constraints (Mistral: exactly 9 [a-zA-Z0-9]). A
// conforming id passes unchanged (Mistral's own ids); another is replaced by a deterministic hash, so
// a call and its result always agree without a table.
func (a *Adapter) wireID(id string) string {
	if !a.Profile.IDs9 || valid9(id) {
		return id
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 9)
	for i := range b {
		b[i] = alnum[int(sum[i])%len(alnum)]
	}
	return string(b)
}

func valid9(id string) bool {
	if len(id) != 9 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// ProviderData of an assistant message on this wire: {"reasoning_content": "<text>"} (D44).
type providerData struct {
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

func reasoningOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var pd providerData
	if json.Unmarshal(raw, &pd) != nil || pd.ReasoningContent == nil {
		return "", false
	}
	return *pd.ReasoningContent, true
}
