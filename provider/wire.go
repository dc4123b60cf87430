package provider

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Adapter speaks one wire (OpenAI-compatible chat completions, Anthropic
// messages, Gemini generateContent): one exchange, the wire response mapped
// to a neutral outcome. It holds no policy — no retries, no limiter, no
// batching; the front end that turns adapters into a Provider owns those
// (STYLE.md, like database/sql over a driver.Conn). Failures are
// NIKA-INFER-001 outcomes built with Failure, with the HTTP status, the
// D27/D46 reason and any Retry-After in milliseconds.
type Adapter interface {
	Exchange(ctx context.Context, req Request) Outcome
}

// Names maps canonical tool names to wire names for one request (D41): the
// wires accept `^[a-zA-Z0-9_-]{1,64}$` only. A wire name is the canonical
// name with every other character replaced by `_`, cut to 64 bytes, with
// `_2`, `_3`, … appended on a collision. Names in a response are mapped
// back; an unknown one passes through unchanged (the loop then refuses it).
type Names struct {
	toWire   map[string]string
	fromWire map[string]string
}

// NewNames builds the table for the tools of one request, in their order.
func NewNames(canonical []string) *Names {
	n := &Names{toWire: make(map[string]string, len(canonical)), fromWire: make(map[string]string, len(canonical))}
	for _, c := range canonical {
		if _, done := n.toWire[c]; done {
			continue
		}
		base := wireBase(c)
		w := base
		for k := 2; ; k++ {
			if _, taken := n.fromWire[w]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(k)
			w = base[:min(len(base), 64-len(suffix))] + suffix
		}
		n.toWire[c], n.fromWire[w] = w, c
	}
	return n
}

func wireBase(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if ch == '_' || ch == '-' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' {
			b.WriteByte(ch)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "_"
	}
	return s
}

// Wire returns the wire name of a canonical name (computing one for a name
// that was not in the table).
func (n *Names) Wire(canonical string) string {
	if w, ok := n.toWire[canonical]; ok {
		return w
	}
	return wireBase(canonical)
}

// Canonical maps a wire name back; an unknown one is returned unchanged.
func (n *Names) Canonical(wire string) string {
	if c, ok := n.fromWire[wire]; ok {
		return c
	}
	return wire
}

// TransportReason classifies a failed exchange that got no usable HTTP
// reply (D27): the caller's cancellation, a deadline or a network timeout,
// anything else a network failure.
func TransportReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return ReasonCancelled
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout
	}
	return ReasonNetwork
}

// RetryAfterMs reads a server's retry hint from the headers (WIRES.md
// §4.4): retry-after-ms (float milliseconds), then Retry-After as float
// seconds or an HTTP date relative to now. 0 means none.
func RetryAfterMs(h http.Header, now time.Time) int64 {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return int64(math.Ceil(min(f, math.MaxInt32)))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0
		}
		return int64(math.Ceil(min(f*1000, math.MaxInt32)))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return int64(math.Ceil(min(float64(d)/float64(time.Millisecond), math.MaxInt32)))
		}
	}
	return 0
}

// Env returns the first non-empty value (trimmed) among the variables names,
// read through lookup; "" when none is set. Credentials and endpoints come
// from the environment only (LANGUAGE.md §6.1).
func Env(lookup func(string) (string, bool), names ...string) string {
	if lookup == nil {
		return ""
	}
	for _, n := range names {
		if v, ok := lookup(n); ok {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}
