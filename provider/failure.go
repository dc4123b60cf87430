package provider

import (
	"net/http"
	"strings"
	"unicode"

	"github.com/nikahq/nika/spec"
)

// Reasons of NIKA-INFER-001 (D27, plus quota_exceeded from D46). Only the first four are transient.
const (
	ReasonRateLimited   = "rate_limited"
	ReasonServerError   = "server_error"
	ReasonNetwork       = "network"
	ReasonTimeout       = "timeout"
	ReasonAuthFailed    = "auth_failed"
	ReasonModelNotFound = "model_not_found"
	ReasonBadRequest    = "bad_request"
	ReasonContentFilter = "content_filter"
	ReasonCancelled     = "cancelled"
	ReasonQuotaExceeded = "quota_exceeded"
)

// Transient reports whether a failure with this reason may succeed when repeated (D27).
func Transient(reason string) bool {
	switch reason {
	case ReasonRateLimited, ReasonServerError, ReasonNetwork, ReasonTimeout:
		return true
	}
	return false
}

// Failure describes a failed request; Err turns it into NIKA-INFER-001.
type Failure struct {
	Provider     string // "" → the prefix of Model
	Model        string // the requested model id
	Status       int    // HTTP status; 0 when there was none (details: null)
	Reason       string // a Reason constant
	RetryAfterMs int64  // the server's retry hint; 0 when none (details: null)
	Message      string // one line, already masked; "" → a default naming the reason
	Cause        error  // wrapped for errors.Is / errors.As; may be nil
}

// Err returns NIKA-INFER-001 with details {provider, model, status, reason, retry_after_ms} (D27),
// transient iff Transient(Reason).
func (f Failure) Err() *spec.Error {
	prov := f.Provider
	if prov == "" {
		prov, _, _ = SplitModel(f.Model)
	}
	var status, retry any
	if f.Status != 0 {
		status = f.Status
	}
	if f.RetryAfterMs != 0 {
		retry = f.RetryAfterMs
	}
	msg := f.Message
	if msg == "" {
		msg = "provider request failed (" + f.Reason + ")"
	}
	e := spec.NewError(spec.CodeInferProvider, msg, map[string]any{
		"provider":       prov,
		"model":          f.Model,
		"status":         status,
		"reason":         f.Reason,
		"retry_after_ms": retry,
	})
	e.Transient = Transient(f.Reason)
	if f.Cause != nil {
		e.Wrap(f.Cause)
	}
	return e
}

// Failed returns the failed outcome for f.
func Failed(f Failure) Outcome { return Outcome{Err: f.Err()} }

// ReasonOf returns the D27 reason of a NIKA-INFER-001 error, or "" for any other error.
func ReasonOf(e *spec.Error) string {
	if e == nil || e.Code != spec.CodeInferProvider {
		return ""
	}
	r, _ := e.Details["reason"].(string)
	return r
}

// OutcomeOf names how a request ended on the live stream (D19): "ok" without an error, the D27
// reason of a NIKA-INFER-001 (rate_limited, server_error, …), else the error's code.
func OutcomeOf(e *spec.Error) string {
	switch {
	case e == nil:
		return "ok"
	case ReasonOf(e) != "":
		return ReasonOf(e)
	}
	return e.Code
}

// SplitModel splits a model id at its first "/" (LANGUAGE.md §6.1). ok is false when either part is
// empty or the name contains white space.
func SplitModel(model string) (provider, name string, ok bool) {
	provider, name, found := strings.Cut(model, "/")
	if !found || provider == "" || name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
		return provider, name, false
	}
	return provider, name, true
}

// StatusReason is the D27 reason of an HTTP error status when the error body said nothing more
// specific; quota marks a 429 that the body blames on an exhausted quota or balance. A 2xx
// status (an error object in a successful body) is a server error.
func StatusReason(status int, quota bool) string {
	switch {
	case status == http.StatusTooManyRequests:
		if quota {
			return ReasonQuotaExceeded
		}
		return ReasonRateLimited
	case status == http.StatusPaymentRequired:
		return ReasonQuotaExceeded
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ReasonAuthFailed
	case status == http.StatusNotFound:
		return ReasonModelNotFound
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ReasonTimeout
	case status == http.StatusConflict || status >= 500:
		return ReasonServerError
	case status >= 400:
		return ReasonBadRequest
	}
	return ReasonServerError
}

// OneLine collapses white space (newlines included) to single spaces and cuts s to at most n
// bytes on a rune boundary, marking a cut with "…": provider text quoted in an error message.
func OneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	if len(s) > n {
		i := n
		for i > 0 && (s[i]&0xC0) == 0x80 {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
