// Package gemini is the provider adapter for the Gemini generateContent wire (WIRES.md §3): one
// POST {base}/v1beta/models/{name}:generateContent per Exchange, the reply mapped to a neutral
// outcome, or per ExchangeStream one POST to :streamGenerateContent?alt=sse, its chunks assembled
// into the same outcome while text and tool calls are told to an observer
// (provider.StreamAdapter). It holds no policy (no retries, limiter or batching); the provider front
// end owns those.
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

// DefaultBaseURL is the base URL used when NIKA_GEMINI_BASE_URL is unset: the provider table's
// (spec.Providers).
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// providerName is the provider prefix reported in failures.
const providerName = "gemini"

// maxBody bounds the bytes read from a response (success or error).
const maxBody = 64 << 20

// Adapter speaks the Gemini generateContent wire. It is safe for concurrent use; the fields must not
// change once Exchange is in use.
type Adapter struct {
	BaseURL string       // without /v1beta/...; "" → DefaultBaseURL
	Key     string       // sent as x-goog-api-key (D28); never in errors
	Client  *http.Client // nil → http.DefaultClient

	now func() time.Time // clock for HTTP-date Retry-After; nil → time.Now
}

var (
	_ provider.Adapter        = (*Adapter)(nil)
	_ provider.NativeSchema   = (*Adapter)(nil)
	_ provider.NativeThinking = (*Adapter)(nil)
)

// New builds an adapter from the environment seen through lookup: the key from NIKA_GEMINI_API_KEY,
// then GEMINI_API_KEY, then GOOGLE_API_KEY; the base URL from NIKA_GEMINI_BASE_URL, else
// DefaultBaseURL (D28). A missing key is an error naming the variables. client may be nil
// (http.DefaultClient).
func New(lookup func(string) (string, bool), client *http.Client) (*Adapter, error) {
	row, _ := spec.LookupProvider(providerName)
	key, base, err := provider.Endpoint(row, lookup)
	if err != nil {
		return nil, err
	}
	return &Adapter{BaseURL: base, Key: key, Client: client}, nil
}

// SupportsSchema reports that Request.Schema is sent natively (responseJsonSchema).
func (a *Adapter) SupportsSchema(string) bool { return true }

// thinkingModel matches the Gemini versions that think: 2.5 and later.
var thinkingModel = regexp.MustCompile(`^gemini-([0-9]+)(?:\.([0-9]+))?(?:[-.]|$)`)

// SupportsThinking reports a thinking budget (generationConfig.thinkingConfig.thinkingBudget,
// provider.NativeThinking) for Gemini 2.5 and later models; older ones ignore Request.Thinking.
func (a *Adapter) SupportsThinking(model string) bool {
	if _, name, found := strings.Cut(model, "/"); found {
		model = name
	}
	return thinks(model)
}

// thinks reports a thinking budget for a model name without its provider prefix.
func thinks(model string) bool {
	m := thinkingModel.FindStringSubmatch(model)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 2 || major == 2 && minor >= 5
}

// Exchange sends req and maps the reply. It never panics on a bad reply and always returns exactly one
// of Response and Err.
//
// Mapping (WIRES.md §3): the model name is the part after the first "/"; System becomes
// systemInstruction; user → "user", assistant → "model", consecutive messages of one role form one
// wire turn; tool_use → functionCall (wire name per D41/D45; id only when Gemini gave one, §3.2),
// tool_result → functionResponse {name, id?, response: {output|error}}, placed first in their user
// turn in the order of the calls they answer (§4.1); thoughtSignature replayed from Block.ProviderData
// (D44); tools → functionDeclarations with parametersJsonSchema (D45); Temperature, MaxTokens and
// Schema → generationConfig; Thinking → generationConfig.thinkingConfig.thinkingBudget for a
// model SupportsThinking reports (left out for any other). ToolChoice → toolConfig.functionCallingConfig, sent only with tools:
// auto → AUTO, none → NONE, required → ANY, tool:<name> → ANY with allowedFunctionNames [wire name].
// Format "json" (Schema nil) → generationConfig.responseMimeType "application/json". An unknown
// ToolChoice or Format, or a named tool not in Tools, fails as bad_request before sending.
func (a *Adapter) Exchange(ctx context.Context, req provider.Request) provider.Outcome {
	names := newNames(req)
	model, body, err := buildRequest(req, names)
	if err != nil {
		return a.failed(req.Model, 0, provider.ReasonBadRequest, "gemini: "+err.Error(), err)
	}
	x, failed := a.post(ctx, req.Model, a.endpoint(model), body, "application/json")
	if failed != nil {
		return *failed
	}
	defer x.resp.Body.Close()
	return a.plainReply(ctx, req, x, names)
}

// failed is a failure of this wire, its message masked.
func (a *Adapter) failed(model string, status int, reason, msg string, cause error) provider.Outcome {
	return provider.Failed(provider.Failure{
		Provider: providerName, Model: model, Status: status, Reason: reason,
		Message: a.mask(msg), Cause: cause,
	})
}

// sent is a request on its way: its reply, and where it went, for error messages.
type sent struct {
	resp  *http.Response
	where string
}

// post sends body to endpoint, asking for accept. A failure to send is the outcome; else the
// caller owns the response's body.
func (a *Adapter) post(ctx context.Context, model, endpoint string, body []byte, accept string) (sent, *provider.Outcome) {
	where := "gemini: POST " + provider.RedactURL(endpoint)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		o := a.failed(model, 0, provider.ReasonBadRequest, "gemini: invalid base URL "+provider.RedactURL(a.BaseURL)+": set NIKA_GEMINI_BASE_URL to an http or https URL", err)
		return sent{}, &o
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", accept)
	hreq.Header.Set("x-goog-api-key", a.Key)
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		reason := transportReason(ctx, err)
		o := a.failed(model, 0, reason, where+": request failed ("+reason+"): "+provider.TransportMessage(err), err)
		return sent{}, &o
	}
	return sent{resp: resp, where: where}, nil
}

// readFailure is the outcome of a body whose reading failed.
func (a *Adapter) readFailure(ctx context.Context, model string, x sent, err error) provider.Outcome {
	reason := transportReason(ctx, err)
	return a.failed(model, x.resp.StatusCode, reason, fmt.Sprintf("%s: HTTP %d: reading the body failed (%s): %s", x.where, x.resp.StatusCode, reason, provider.TransportMessage(err)), err)
}

// plainReply reads and maps a whole (non-streamed) reply.
func (a *Adapter) plainReply(ctx context.Context, req provider.Request, x sent, names *names) provider.Outcome {
	resp := x.resp
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return a.readFailure(ctx, req.Model, x, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a.failure(req.Model, x.where, resp.StatusCode, resp.Header, raw)
	}
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return a.failed(req.Model, resp.StatusCode, provider.ReasonServerError, x.where+": malformed response body", err)
	}
	if wr.Error != nil {
		return a.failure(req.Model, x.where, resp.StatusCode, resp.Header, raw)
	}
	return a.mapReply(req, resp.StatusCode, wr, names)
}

// mapReply maps a successful reply (plain, or assembled from a stream).
func (a *Adapter) mapReply(req provider.Request, status int, wr wireResponse, names *names) provider.Outcome {
	r, f := decodeResponse(wr, names, len(req.Messages))
	if f != nil {
		f.Provider, f.Model, f.Status, f.Message = providerName, req.Model, status, a.mask(f.Message)
		return provider.Failed(*f)
	}
	return provider.Outcome{Response: r}
}

// endpoint is the URL of the generateContent route of model (a name without its provider prefix).
func (a *Adapter) endpoint(model string) string { return a.route(model) + ":generateContent" }

// streamEndpoint is the URL of the streamGenerateContent route of model, as server-sent events.
func (a *Adapter) streamEndpoint(model string) string {
	return a.route(model) + ":streamGenerateContent?alt=sse"
}

func (a *Adapter) route(model string) string {
	base := a.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return strings.TrimRight(base, "/") + "/v1beta/models/" + url.PathEscape(model)
}

// notFoundHint is added to a 404 when the base URL already ends in a version segment, which the
// adapter adds itself (".../v1beta/v1beta/models/...").
func (a *Adapter) notFoundHint() string {
	base := strings.TrimRight(a.BaseURL, "/")
	i := strings.LastIndex(base, "/")
	if i < 0 || !provider.HasVersionSegment("/"+base[i+1:]) {
		return ""
	}
	return fmt.Sprintf(" — the base URL %s ends in a version segment, which nika adds itself (/v1beta): set NIKA_GEMINI_BASE_URL to %s",
		provider.RedactURL(base), provider.RedactURL(base[:i]))
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

// wireError is the body of an error reply (WIRES §3.4).
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		Reason     string `json:"reason"`
		RetryDelay string `json:"retryDelay"`
		Violations []struct {
			QuotaMetric string `json:"quotaMetric"`
			QuotaID     string `json:"quotaId"`
		} `json:"violations"`
	} `json:"details"`
}

// parseError reads {"error": {...}}, also wrapped in a one-element array as some Google front ends
// send it.
func parseError(raw []byte) (wireError, bool) {
	var eb struct {
		Error *wireError `json:"error"`
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil || len(arr) == 0 {
			return wireError{}, false
		}
		raw = arr[0]
	}
	if json.Unmarshal(raw, &eb) != nil || eb.Error == nil {
		return wireError{}, false
	}
	return *eb.Error, true
}

// failure classifies an error reply by its body, then its status (D46, WIRES §3.4, §4.3), with the
// retry hint from the headers, else the body (§4.4).
func (a *Adapter) failure(model, where string, status int, h http.Header, raw []byte) provider.Outcome {
	we, _ := parseError(raw)
	reason := classify(status, we)
	msg := fmt.Sprintf("%s: HTTP %d", where, status)
	if we.Status != "" {
		msg += " " + provider.OneLine(we.Status, 60)
	}
	if we.Message != "" {
		msg += ": " + provider.OneLine(we.Message, 300)
	}
	if status == http.StatusNotFound {
		msg += a.notFoundHint()
	}
	return provider.Failed(provider.Failure{
		Provider: providerName, Model: model, Status: status, Reason: reason,
		RetryAfterMs: retryAfterMs(h, we, a.clock()), Message: a.mask(msg),
	})
}

func classify(status int, we wireError) string {
	lower := strings.ToLower(we.Message)
	for _, d := range we.Details {
		if d.Reason == "API_KEY_INVALID" || d.Reason == "API_KEY_EXPIRED" {
			return provider.ReasonAuthFailed
		}
	}
	if strings.Contains(lower, "api key not valid") || strings.Contains(lower, "api key expired") {
		return provider.ReasonAuthFailed
	}
	switch we.Status {
	case "RESOURCE_EXHAUSTED":
		if dailyQuota(we) {
			return provider.ReasonQuotaExceeded
		}
		return provider.ReasonRateLimited
	case "UNAVAILABLE", "INTERNAL":
		return provider.ReasonServerError
	case "DEADLINE_EXCEEDED":
		return provider.ReasonTimeout
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return provider.ReasonAuthFailed
	case "NOT_FOUND":
		return provider.ReasonModelNotFound
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		if status < 500 {
			return provider.ReasonBadRequest
		}
	}
	return provider.StatusReason(status, dailyQuota(we))
}

// dailyQuota reports a 429 that will not clear within the retry window (WIRES §3.4): a QuotaFailure
// violation of a per-day quota (D46: quota_exceeded, not transient).
func dailyQuota(we wireError) bool {
	for _, d := range we.Details {
		for _, v := range d.Violations {
			if strings.Contains(strings.ToLower(v.QuotaID+" "+v.QuotaMetric), "perday") {
				return true
			}
		}
	}
	return false
}

var retryInText = regexp.MustCompile(`(?i)retry in ([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b`)

// retryAfterMs reads the server's retry hint (WIRES §4.4): retry-after-ms (float milliseconds), then
// Retry-After as float seconds or an HTTP date relative to now (negative → 0), then the body's
// google.rpc.RetryInfo retryDelay, then "Please retry in 22.23s" in the message. 0 means none.
func retryAfterMs(h http.Header, we wireError, now time.Time) int64 {
	if h.Get("Retry-After-Ms") != "" || h.Get("Retry-After") != "" {
		return provider.RetryAfterMs(h, now)
	}
	for _, d := range we.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") || d.RetryDelay == "" {
			continue
		}
		if dur, err := time.ParseDuration(strings.TrimSpace(d.RetryDelay)); err == nil && dur > 0 {
			return durationMs(dur)
		}
	}
	if m := retryInText.FindStringSubmatch(we.Message); m != nil {
		if dur, err := time.ParseDuration(m[1] + strings.ToLower(m[2])); err == nil && dur > 0 {
			return durationMs(dur)
		}
	}
	return 0
}

func durationMs(d time.Duration) int64 {
	return int64(math.Ceil(min(float64(d)/float64(time.Millisecond), math.MaxInt32)))
}
