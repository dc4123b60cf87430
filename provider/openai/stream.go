package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/nikahq/nika/provider"
)

var _ provider.StreamAdapter = (*Adapter)(nil)

// ExchangeStream sends one request with "stream": true (and stream_options.include_usage unless
// the profile has NoStreamOptions) and reads the chunks as they arrive (provider.StreamAdapter).
// The chunks are assembled into the reply the plain Exchange decodes, and mapped by the same
// code, so the Response is the same value:
//
//   - content, refusal and reasoning_content deltas are concatenated; each content delta is
//     told to obs as it arrives;
//   - tool-call deltas are gathered by their index, in any interleaving (a delta without an
//     index continues the last call, or starts a new one when it brings a new id); arguments
//     are concatenated fragments (an object replaces them, for servers that send one); an id or
//     a name is taken from its first delta, a later different one appended as a fragment;
//   - the last finish_reason and the last usage (the include_usage chunk, choices: []) count;
//   - "data: [DONE]" ends the stream; EOF or a read error before it is a stream cut short
//     (reason network, or timeout/cancelled from the context), which the Front retries.
//
// A tool call is announced once its arguments can no longer change: when a delta for a later
// index arrives, the calls up to it have indexes 0…n (so its position is its index) and its
// arguments so far are one complete JSON value; the others when [DONE] arrives. A stream that
// changes a call after announcing it (a fragment after a complete value) fails as server_error,
// so an announcement never differs from the Response.
//
// An error chunk ({"error": …} without choices, OpenRouter; or an "error" event) is classified as
// the same body in a plain reply; other event types and SSE comments are ignored. A server that
// does not answer with text/event-stream is read as a plain reply. A 400 or 422 whose error names
// "stream" (the server or model cannot stream, or refuses stream_options) makes the adapter send
// the plain request at once, in the same send, and every later request of this adapter plain
// too; so does the profile's NoStream.
func (a *Adapter) ExchangeStream(ctx context.Context, req provider.Request, obs *provider.StreamObserver) provider.Outcome {
	if a.Profile.NoStream || a.plainOnly.Load() {
		return a.Exchange(ctx, req)
	}
	names := provider.NamesOf(req)
	body, err := a.encode(req, names, true)
	if err != nil {
		return a.encodeFailure(req.Model, err)
	}
	resp, failed := a.post(ctx, req.Model, body, "text/event-stream")
	if failed != nil {
		return *failed
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if err != nil {
			return a.transportFailure(ctx, req.Model, resp.StatusCode, err)
		}
		if streamRefused(resp.StatusCode, raw) {
			a.plainOnly.Store(true)
			resp.Body.Close()
			return a.Exchange(ctx, req)
		}
		return a.httpFailure(req.Model, resp.StatusCode, resp.Header, raw)
	}
	if !eventStream(resp.Header) {
		return a.plainReply(ctx, req.Model, resp, names)
	}
	s := &assembler{a: a, model: req.Model, status: resp.StatusCode, header: resp.Header, names: names, obs: obs}
	return s.read(ctx, provider.NewSSEReader(resp.Body, maxBody))
}

// eventStream reports whether a reply is server-sent events.
func eventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// streamWord finds "stream" or "stream_options" as a word ("upstream" is not one).
var streamWord = regexp.MustCompile(`(?i)\bstream(_options)?\b`)

// streamRefused reports a refusal of the streamed form itself: a 400 or 422 whose error names
// stream or stream_options.
func streamRefused(status int, raw []byte) bool {
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		return false
	}
	we, _ := parseError(raw)
	return streamWord.MatchString(we.message + " " + we.code + " " + we.typ)
}

// chunk is one chat.completion.chunk (unknown fields ignored).
type chunk struct {
	Choices []struct {
		Index        int        `json:"index"`
		Delta        chunkDelta `json:"delta"`
		FinishReason *string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type chunkDelta struct {
	Content          json.RawMessage `json:"content"`
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// streamCall is a tool call being assembled.
type streamCall struct {
	index     int
	id, name  string
	args      strings.Builder
	object    json.RawMessage // arguments sent as an object (replaces args)
	announced *provider.Block // what was told to the observer
}

// assembler turns the chunks of one streamed reply into the reply the plain path decodes.
type assembler struct {
	a      *Adapter
	model  string
	status int
	header http.Header
	names  *provider.Names
	obs    *provider.StreamObserver

	sawChoice          bool
	content            strings.Builder
	refusal, reasoning *strings.Builder // nil until a delta carries one
	calls              []*streamCall    // sorted by index
	finish             *string
	usage              *wireUsage
}

func (s *assembler) fail(reason, msg string, cause error) provider.Outcome {
	return provider.Failed(provider.Failure{Provider: s.a.Profile.Name, Model: s.model, Status: s.status,
		Reason: reason, Message: s.a.mask(msg), Cause: cause})
}

func (s *assembler) read(ctx context.Context, r *provider.SSEReader) provider.Outcome {
	for {
		ev, err := r.Next()
		switch {
		case errors.Is(err, provider.ErrSSETooLarge):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream exceeds %d bytes", s.a.where(), s.status, maxBody), err)
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return s.fail(provider.ReasonNetwork, fmt.Sprintf("%s: HTTP %d: the stream ended before [DONE]", s.a.where(), s.status), err)
		case err != nil:
			o := s.a.transportFailure(ctx, s.model, s.status, err)
			return o
		}
		switch ev.Type {
		case "", "message":
		case "error":
			return s.a.httpFailure(s.model, s.status, s.header, ev.Data)
		default:
			continue // an event type this wire does not define
		}
		if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
			return s.done()
		}
		if o := s.add(ev.Data); o != nil {
			return *o
		}
	}
}

// add folds one chunk in; a non-nil outcome ends the stream.
func (s *assembler) add(data []byte) *provider.Outcome {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		o := s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: malformed JSON chunk: %s", s.a.where(), s.status, oneLine(err.Error())), err)
		return &o
	}
	if len(c.Choices) == 0 && len(c.Error) > 0 && string(c.Error) != "null" {
		o := s.a.httpFailure(s.model, s.status, s.header, data)
		return &o
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // nika asks for one choice
		}
		s.sawChoice = true
		if ch.FinishReason != nil {
			s.finish = ch.FinishReason
		}
		d := ch.Delta
		if text := contentText(d.Content); text != "" {
			s.content.WriteString(text)
			s.obs.Text(text)
		}
		s.refusal = appendOpt(s.refusal, d.Refusal)
		s.reasoning = appendOpt(s.reasoning, d.ReasoningContent)
		for _, tc := range d.ToolCalls {
			call := s.call(tc.Index, tc.ID)
			call.id = fragment(call.id, tc.ID)
			call.name = fragment(call.name, tc.Function.Name)
			if raw := bytes.TrimSpace(tc.Function.Arguments); len(raw) > 0 && string(raw) != "null" {
				var frag string
				if json.Unmarshal(raw, &frag) == nil {
					call.args.WriteString(frag)
				} else {
					call.object = slices.Clone(raw)
				}
			}
		}
		if len(d.ToolCalls) > 0 {
			s.announceEarly()
		}
	}
	return nil
}

func appendOpt(b *strings.Builder, v *string) *strings.Builder {
	if v == nil {
		return b
	}
	if b == nil {
		b = &strings.Builder{}
	}
	b.WriteString(*v)
	return b
}

// fragment adds a delta's id or name to what a call has: the first value, then any different
// later one as a fragment (servers that repeat the whole value on every delta add nothing).
func fragment(have, v string) string {
	if v == "" || v == have {
		return have
	}
	return have + v
}

// call returns the call a tool-call delta continues, creating it: by index, or, without one,
// the last call (a new one when the delta brings an id the last call does not have).
func (s *assembler) call(index *int, id string) *streamCall {
	var i int
	switch {
	case index != nil:
		i = *index
	case len(s.calls) == 0:
		i = 0
	default:
		last := s.calls[len(s.calls)-1]
		i = last.index
		if id != "" && last.id != "" && id != last.id {
			i++
		}
	}
	k, found := slices.BinarySearchFunc(s.calls, i, func(c *streamCall, i int) int { return c.index - i })
	if found {
		return s.calls[k]
	}
	c := &streamCall{index: i}
	s.calls = slices.Insert(s.calls, k, c)
	return c
}

// rawArgs is a call's function.arguments as a plain reply would carry them.
func (c *streamCall) rawArgs() json.RawMessage {
	if c.object != nil {
		return c.object
	}
	b, _ := json.Marshal(c.args.String())
	return b
}

// complete reports arguments that are one whole JSON value (more can then only be white space).
func (c *streamCall) complete() bool {
	if c.object != nil {
		return true
	}
	v := bytes.TrimSpace([]byte(c.args.String()))
	return len(v) > 0 && json.Valid(v)
}

// announceEarly announces each call the stream has moved past (a later index has started) whose
// position is final (indexes 0…n so far) and whose arguments are complete.
func (s *assembler) announceEarly() {
	n := len(s.calls)
	if n < 2 || s.calls[0].index != 0 || s.calls[n-1].index != n-1 {
		return
	}
	ids := make([]string, n)
	for k, c := range s.calls {
		ids[k] = c.id
	}
	ids = callIDs(ids)
	for k, c := range s.calls[:n-1] {
		if c.announced != nil || !c.complete() || c.id == "" || c.name == "" {
			continue
		}
		b := provider.ToolUseBlock(ids[k], s.names.Canonical(c.name), arguments(c.rawArgs()))
		c.announced = &b
		s.obs.ToolCall(provider.StreamCall{Index: k, Block: b})
	}
}

// done maps the assembled reply, checks it against what was announced, and announces the rest.
func (s *assembler) done() provider.Outcome {
	if !s.sawChoice {
		return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream has no choices", s.a.where(), s.status), nil)
	}
	var c wireChoice
	c.FinishReason = s.finish
	c.Message.Content, _ = json.Marshal(s.content.String())
	if s.refusal != nil {
		c.Message.Refusal = ptr(s.refusal.String())
	}
	if s.reasoning != nil {
		c.Message.ReasoningContent = ptr(s.reasoning.String())
	}
	for _, sc := range s.calls {
		var wc wireRespCall
		wc.ID, wc.Function.Name, wc.Function.Arguments = sc.id, sc.name, sc.rawArgs()
		c.Message.ToolCalls = append(c.Message.ToolCalls, wc)
	}
	o := s.a.mapChoice(s.model, s.status, c, s.usage, s.names)
	if o.Err != nil {
		return o
	}
	k := 0
	for _, b := range o.Response.Message.Blocks {
		if b.Type != provider.BlockToolUse {
			continue
		}
		switch sc := s.calls[k]; {
		case sc.announced == nil:
			s.obs.ToolCall(provider.StreamCall{Index: k, Block: b})
		case !reflect.DeepEqual(*sc.announced, b):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream changed tool call %d after its arguments were complete", s.a.where(), s.status, k), nil)
		}
		k++
	}
	return o
}
