// Package anthropic is the provider adapter for the Anthropic Messages wire (WIRES.md §2): one
// POST {base}/v1/messages per Exchange, the reply mapped to a neutral outcome, or per ExchangeStream
// the same request with "stream": true, its events assembled into the same outcome while text and
// tool calls are told to an observer (provider.StreamAdapter). It holds no policy (no retries,
// limiter or batching); the provider front end owns those.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// Defaults of the wire.
const (
	// DefaultBaseURL is the base URL used when NIKA_ANTHROPIC_BASE_URL is unset: the provider
	// table's (spec.Providers).
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent when NIKA_ANTHROPIC_VERSION is unset (D28).
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when Request.MaxTokens is 0: the wire requires max_tokens on every
	// request, and the model may stop earlier.
	DefaultMaxTokens = 4096
	// MinThinkingBudget is the smallest thinking budget the wire accepts; a smaller
	// Request.Thinking budget is raised to it.
	MinThinkingBudget = 1024
)

// providerName is the provider prefix reported in failures.
const providerName = "anthropic"

// maxBody bounds the bytes read from a response (success or error).
const maxBody = 64 << 20

// Adapter speaks the Anthropic Messages wire. It is safe for concurrent use; the fields must not
// change once Exchange is in use.
type Adapter struct {
	BaseURL string       // without the trailing /v1/messages; "" → DefaultBaseURL
	Key     string       // sent as x-api-key; never in errors
	Version string       // anthropic-version header; "" → DefaultVersion
	Client  *http.Client // nil → http.DefaultClient

	now func() time.Time // clock for HTTP-date Retry-After; nil → time.Now
}

var (
	_ provider.Adapter        = (*Adapter)(nil)
	_ provider.NativeSchema   = (*Adapter)(nil)
	_ provider.NativeThinking = (*Adapter)(nil)
)

// New builds an adapter from the environment seen through lookup: the key from NIKA_ANTHROPIC_API_KEY,
// then ANTHROPIC_API_KEY; the base URL from NIKA_ANTHROPIC_BASE_URL, else DefaultBaseURL; the
// anthropic-version from NIKA_ANTHROPIC_VERSION, else DefaultVersion (D28). A missing key is an error
// naming the variable. client may be nil (http.DefaultClient).
func New(lookup func(string) (string, bool), client *http.Client) (*Adapter, error) {
	row, _ := spec.LookupProvider("anthropic")
	key, base, err := provider.Endpoint(row, lookup)
	if err != nil {
		return nil, err
	}
	version := provider.Env(lookup, "NIKA_ANTHROPIC_VERSION")
	if version == "" {
		version = DefaultVersion
	}
	return &Adapter{BaseURL: base, Key: key, Version: version, Client: client}, nil
}

// nativeModel matches the model names of WIRES.md §2.4's native structured output: a family, a
// major version and an optional one- or two-digit minor version (a date suffix has 8 digits).
var nativeModel = regexp.MustCompile(`^claude-(?:opus|sonnet|haiku)-([0-9]+)(?:-([0-9]{1,2}))?(?:[-@.]|$)`)

// SupportsSchema reports native structured output (output_config.format json_schema, WIRES.md
// §2.4; provider.NativeSchema) for the models that have it: Claude Opus, Sonnet and Haiku 4.5 and
// every later version ("claude-sonnet-4-5", "claude-haiku-4-5-20251001", "claude-opus-5"). Any
// other name (older models such as "claude-3-7-sonnet-20250219" or "claude-opus-4-1", and names
// this table does not know) reports false: the verbs then put the schema in the system prompt,
// which every model accepts, instead of a field an older model answers with a 400.
func (a *Adapter) SupportsSchema(model string) bool {
	if _, name, found := strings.Cut(model, "/"); found {
		model = name
	}
	m := nativeModel.FindStringSubmatch(model)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2]) // "" → 0
	return major > 4 || major == 4 && minor >= 5
}

// thinkingModel matches the models with extended thinking: Claude 3.7 Sonnet, and Opus, Sonnet
// and Haiku 4 and later (nativeModel, major ≥ 4).
var thinkingModel = regexp.MustCompile(`^claude-3-7-sonnet(?:[-@.]|$)`)

// SupportsThinking reports extended thinking (provider.NativeThinking) for Claude 3.7 Sonnet and
// every Claude 4 or later model; Request.Thinking becomes {"thinking": {"type": "enabled",
// "budget_tokens": N}}, N raised to the wire's minimum of MinThinkingBudget.
func (a *Adapter) SupportsThinking(model string) bool {
	if _, name, found := strings.Cut(model, "/"); found {
		model = name
	}
	return thinks(model)
}

// thinks reports extended thinking for a model name without its provider prefix.
func thinks(model string) bool {
	if thinkingModel.MatchString(model) {
		return true
	}
	m := nativeModel.FindStringSubmatch(model)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	return major >= 4
}

// Exchange sends req and maps the reply. It never panics on a bad reply and always returns exactly one
// of Response and Err.
//
// Mapping (WIRES.md §2): the model name is the part after the first "/"; System becomes the top-level
// system string; MaxTokens 0 sends DefaultMaxTokens (with Thinking: the budget plus
// DefaultMaxTokens, since max_tokens must exceed the budget); Thinking becomes thinking
// {type: enabled, budget_tokens} for a model SupportsThinking reports (and is left out for any
// other); Temperature is omitted unless set; Schema becomes
// output_config.format json_schema (native structured output, WIRES §2.4: the reply is a text block).
// Consecutive messages of one role are merged into one wire turn and, in a user turn, tool_result
// blocks come first in their transcript order, so the results of one model turn go back in a single
// user message (WIRES §4.1). Empty or white-space text blocks are dropped (the wire rejects them).
// Tool names go on the wire per D41 and are mapped back in the reply. ToolChoice becomes tool_choice
// (auto, none, required → any, tool:<name> → {"type":"tool","name":<wire name>}), sent only with
// tools. The wire has no JSON mode without a schema (WIRES §2.4): Format "json" (Schema nil) appends
// JSONInstruction to the system prompt, after a blank line, or makes it the system prompt. An unknown
// ToolChoice or Format, or a named tool not in Tools, fails as bad_request before sending.
func (a *Adapter) Exchange(ctx context.Context, req provider.Request) provider.Outcome {
	names := provider.NamesOf(req)
	body, err := buildRequest(req, names, false)
	if err != nil {
		return a.failed(req.Model, 0, provider.ReasonBadRequest, "anthropic: "+err.Error(), err)
	}
	resp, failed := a.post(ctx, req.Model, body, "application/json")
	if failed != nil {
		return *failed
	}
	defer resp.Body.Close()
	return a.plainReply(ctx, req.Model, resp, names)
}

// failed is a failure of this wire, its message masked.
func (a *Adapter) failed(model string, status int, reason, msg string, cause error) provider.Outcome {
	return provider.Failed(provider.Failure{
		Provider: providerName, Model: model, Status: status, Reason: reason,
		Message: a.mask(msg), Cause: cause,
	})
}

// post sends body to the messages route, asking for accept. A failure to send is the outcome;
// else the caller owns the response's body.
func (a *Adapter) post(ctx context.Context, model string, body []byte, accept string) (*http.Response, *provider.Outcome) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint(), bytes.NewReader(body))
	if err != nil {
		o := a.failed(model, 0, provider.ReasonBadRequest, "anthropic: invalid base URL "+provider.RedactURL(a.BaseURL)+": set NIKA_ANTHROPIC_BASE_URL to an http or https URL", err)
		return nil, &o
	}
	version := a.Version
	if version == "" {
		version = DefaultVersion
	}
	hreq.Header.Set("content-type", "application/json")
	hreq.Header.Set("accept", accept)
	hreq.Header.Set("x-api-key", a.Key)
	hreq.Header.Set("anthropic-version", version)
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		reason := transportReason(ctx, err)
		o := a.failed(model, 0, reason, a.where()+": request failed ("+reason+"): "+provider.TransportMessage(err), err)
		return nil, &o
	}
	return resp, nil
}

// readFailure is the outcome of a body whose reading failed.
func (a *Adapter) readFailure(ctx context.Context, model string, status int, err error) provider.Outcome {
	reason := transportReason(ctx, err)
	return a.failed(model, status, reason, fmt.Sprintf("%s: HTTP %d: reading the body failed (%s): %s", a.where(), status, reason, provider.TransportMessage(err)), err)
}

// plainReply reads and maps a whole (non-streamed) reply.
func (a *Adapter) plainReply(ctx context.Context, model string, resp *http.Response, names *provider.Names) provider.Outcome {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return a.readFailure(ctx, model, resp.StatusCode, err)
	}
	retry := retryAfterMs(resp.Header, a.clock())
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a.failure(model, resp.StatusCode, retry, raw)
	}
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return a.failed(model, resp.StatusCode, provider.ReasonServerError, a.where()+": malformed response body", err)
	}
	if wr.Type == "error" || (len(wr.Error) > 0 && string(wr.Error) != "null") {
		// An error object in a 2xx body is an error (D46).
		return a.failure(model, resp.StatusCode, retry, raw)
	}
	return a.mapReply(model, resp.StatusCode, wr, names)
}

// mapReply maps a successful reply (plain, or assembled from a stream).
func (a *Adapter) mapReply(model string, status int, wr wireResponse, names *provider.Names) provider.Outcome {
	r, err := decodeResponse(wr, names)
	if err != nil {
		return a.failed(model, status, provider.ReasonServerError, a.where()+": "+err.Error(), err)
	}
	return provider.Outcome{Response: r}
}

// endpoint is the URL of the messages route.
func (a *Adapter) endpoint() string {
	base := a.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return strings.TrimRight(base, "/") + "/v1/messages"
}

// where names the request in an error: the URL tried, redacted (never a key or a query secret).
func (a *Adapter) where() string { return "anthropic: POST " + provider.RedactURL(a.endpoint()) }

// notFoundHint is added to a 404 when the base URL already ends in a version segment, which the
// adapter adds itself (".../v1/v1/messages").
func (a *Adapter) notFoundHint() string {
	base := strings.TrimRight(a.BaseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		return ""
	}
	return fmt.Sprintf(" — the base URL %s ends in /v1, which nika adds itself: set NIKA_ANTHROPIC_BASE_URL to %s",
		provider.RedactURL(base), provider.RedactURL(strings.TrimSuffix(base, "/v1")))
}

func (a *Adapter) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// mask removes the key from a message (a server may echo it back).
func (a *Adapter) mask(s string) string {
	if a.Key != "" {
		s = strings.ReplaceAll(s, a.Key, "***")
	}
	return s
}

// transportReason classifies an error of the transport (no HTTP status, or a body cut short).
func transportReason(ctx context.Context, err error) string {
	return provider.TransportReason(ctx, err)
}

// retryAfterMs reads the server's retry hint (WIRES §4.4).
func retryAfterMs(h http.Header, now time.Time) int64 { return provider.RetryAfterMs(h, now) }

// failure classifies an error reply by its body, then its status (D46, WIRES §2.5, §4.3).
func (a *Adapter) failure(model string, status int, retry int64, raw []byte) provider.Outcome {
	var eb struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	var etype, emsg string
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
		etype, emsg = eb.Error.Type, eb.Error.Message
	}
	reason := classify(status, etype, emsg)
	msg := fmt.Sprintf("%s: HTTP %d", a.where(), status)
	if etype != "" {
		msg += " " + etype
	}
	if emsg != "" {
		msg += ": " + provider.OneLine(emsg, 300)
	}
	if eb.RequestID != "" {
		msg += " (request " + provider.OneLine(eb.RequestID, 100) + ")"
	}
	if status == http.StatusNotFound {
		msg += a.notFoundHint()
	}
	return provider.Failed(provider.Failure{
		Provider: providerName, Model: model, Status: status, Reason: reason,
		RetryAfterMs: retry, Message: a.mask(msg),
	})
}

func classify(status int, etype, emsg string) string {
	lower := strings.ToLower(emsg)
	quota := strings.Contains(lower, "credit balance") || strings.Contains(lower, "billing") ||
		strings.Contains(lower, "spend limit") || strings.Contains(lower, "usage limit") || strings.Contains(lower, "quota")
	switch etype {
	case "billing_error":
		return provider.ReasonQuotaExceeded
	case "rate_limit_error":
		if quota {
			return provider.ReasonQuotaExceeded
		}
		return provider.ReasonRateLimited
	case "overloaded_error", "api_error":
		return provider.ReasonServerError
	case "timeout_error":
		return provider.ReasonTimeout
	case "authentication_error", "permission_error":
		return provider.ReasonAuthFailed
	case "not_found_error":
		return provider.ReasonModelNotFound
	case "invalid_request_error", "request_too_large":
		if quota {
			return provider.ReasonQuotaExceeded
		}
		if status < 500 {
			return provider.ReasonBadRequest
		}
	}
	return provider.StatusReason(status, quota)
}
