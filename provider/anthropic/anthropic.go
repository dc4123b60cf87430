// Package anthropic is the provider adapter for the Anthropic Messages wire (WIRES.md §2): one
// non-streaming POST {base}/v1/messages per Exchange, the reply mapped to a neutral outcome. It holds no
// policy (no retries, limiter or batching); the provider front end owns those.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nikahq/nika/provider"
)

// Defaults of the wire.
const (
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent when NIKA_ANTHROPIC_VERSION is unset (D28).
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when Request.MaxTokens is 0: the wire requires max_tokens on every
	// request, and the model may stop earlier.
	DefaultMaxTokens = 4096
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

var _ provider.Adapter = (*Adapter)(nil)

// New builds an adapter from the environment seen through lookup: the key from NIKA_ANTHROPIC_API_KEY,
// then ANTHROPIC_API_KEY; the base URL from NIKA_ANTHROPIC_BASE_URL, else DefaultBaseURL; the
// anthropic-version from NIKA_ANTHROPIC_VERSION, else DefaultVersion (D28). A missing key is an error
// naming the variable. client may be nil (http.DefaultClient).
func New(lookup func(string) (string, bool), client *http.Client) (*Adapter, error) {
	get := func(names ...string) string { return provider.Env(lookup, names...) }
	key := get("NIKA_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
	if key == "" {
		return nil, errors.New("anthropic: no API key: set NIKA_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY)")
	}
	base := get("NIKA_ANTHROPIC_BASE_URL")
	if base == "" {
		base = DefaultBaseURL
	}
	version := get("NIKA_ANTHROPIC_VERSION")
	if version == "" {
		version = DefaultVersion
	}
	return &Adapter{BaseURL: strings.TrimRight(base, "/"), Key: key, Version: version, Client: client}, nil
}

// Exchange sends req and maps the reply. It never panics on a bad reply and always returns exactly one
// of Response and Err.
//
// Mapping (WIRES.md §2): the model name is the part after the first "/"; System becomes the top-level
// system string; MaxTokens 0 sends DefaultMaxTokens; Temperature is omitted unless set; Schema becomes
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
	fail := func(status int, reason, msg string, cause error) provider.Outcome {
		return provider.Failed(provider.Failure{
			Provider: providerName, Model: req.Model, Status: status, Reason: reason,
			Message: a.mask(msg), Cause: cause,
		})
	}
	names := toolNames(req.Tools)
	body, err := buildRequest(req, names)
	if err != nil {
		return fail(0, provider.ReasonBadRequest, "anthropic: "+err.Error(), err)
	}
	base := a.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return fail(0, provider.ReasonBadRequest, "anthropic: invalid base URL", nil)
	}
	version := a.Version
	if version == "" {
		version = DefaultVersion
	}
	hreq.Header.Set("content-type", "application/json")
	hreq.Header.Set("accept", "application/json")
	hreq.Header.Set("x-api-key", a.Key)
	hreq.Header.Set("anthropic-version", version)
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		reason := transportReason(ctx, err)
		return fail(0, reason, "anthropic: request failed ("+reason+")", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		reason := transportReason(ctx, err)
		return fail(resp.StatusCode, reason, fmt.Sprintf("anthropic: HTTP %d: reading the body failed (%s)", resp.StatusCode, reason), err)
	}
	retry := retryAfterMs(resp.Header, a.clock())
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a.failure(req.Model, resp.StatusCode, retry, raw)
	}
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return fail(resp.StatusCode, provider.ReasonServerError, "anthropic: malformed response body", err)
	}
	if wr.Type == "error" || (len(wr.Error) > 0 && string(wr.Error) != "null") {
		// An error object in a 2xx body is an error (D46).
		return a.failure(req.Model, resp.StatusCode, retry, raw)
	}
	r, err := decodeResponse(wr, names)
	if err != nil {
		return fail(resp.StatusCode, provider.ReasonServerError, "anthropic: "+err.Error(), err)
	}
	return provider.Outcome{Response: r}
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

func toolNames(tools []provider.ToolDef) *provider.Names {
	c := make([]string, len(tools))
	for i, t := range tools {
		c[i] = t.Name
	}
	return provider.NewNames(c)
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
	msg := fmt.Sprintf("anthropic: HTTP %d", status)
	if etype != "" {
		msg += " " + etype
	}
	if emsg != "" {
		msg += ": " + provider.OneLine(emsg, 300)
	}
	if eb.RequestID != "" {
		msg += " (request " + provider.OneLine(eb.RequestID, 100) + ")"
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
