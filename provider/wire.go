package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/url"
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

// NamesOf builds the name table of req: over req.Admitted, then the names of req.Tools (see
// Request.Admitted).
func NamesOf(req Request) *Names {
	names := make([]string, 0, len(req.Admitted)+len(req.Tools))
	names = append(names, req.Admitted...)
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return NewNames(names)
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

// ObjectArgs checks that tool-call arguments are one JSON object (numbers decoded with UseNumber,
// so no precision is lost in the check) and returns them compacted, key order preserved; absent or
// null is {}. The wires whose replies carry arguments as an object (Anthropic, Gemini) decode with it.
func ObjectArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, errors.New("not a JSON object")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// ReplayArgs is the arguments of a replayed tool_use block on a wire that takes only an object:
// ObjectArgs of the input, or {} when the input is not one. A model's arguments that were not JSON
// are kept in the transcript as a JSON string (so the loop can report them to it); sent back as
// they are, they would make the server refuse the whole request (Anthropic and Gemini want an
// object; Ollama answers 400 "invalid tool call arguments").
func ReplayArgs(raw json.RawMessage) json.RawMessage {
	if obj, err := ObjectArgs(raw); err == nil {
		return obj
	}
	return json.RawMessage("{}")
}

// RedactURL is a request URL as errors may show it (WIRES: never a key or a query secret): the
// scheme, host and path, with any user information dropped and a query or fragment replaced by
// "?…". A URL that does not parse is shown as "(invalid URL)".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	out := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	s := out.String()
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		s += "?…"
	}
	return s
}

// HasVersionSegment reports whether a base URL's path holds an API version segment ("/v1",
// "/v1beta", "/api/v2/…"): a 404 from a base without one usually means the segment is missing.
func HasVersionSegment(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return true // nothing useful to hint
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= 2 && seg[0] == 'v' && seg[1] >= '0' && seg[1] <= '9' {
			return true
		}
	}
	return false
}

// TransportMessage is the text of a transport error without the URL net/http puts in it (a
// *url.Error quotes the whole request URL, query included): error messages name the URL
// themselves, through RedactURL.
func TransportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return OneLine(err.Error(), 300)
}
