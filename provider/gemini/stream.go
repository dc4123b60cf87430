package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"

	"github.com/nikahq/nika/provider"
)

var _ provider.StreamAdapter = (*Adapter)(nil)

// ExchangeStream sends req to streamGenerateContent?alt=sse and reads the chunks as they arrive
// (provider.StreamAdapter). Each chunk is a GenerateContentResponse holding the next parts; they
// are assembled into the reply the plain Exchange decodes, and mapped by the same code, so the
// Response is the same value:
//
//   - consecutive answer-text parts are one part, as in a plain reply: their text concatenated,
//     and the thoughtSignature of whichever piece carried one (Gemini sends it on the last piece,
//     often an empty text); a piece with a second signature starts a new part. Each piece's text
//     is told to obs as it arrives (never the text of a thought part);
//   - a functionCall part arrives whole, so each call is announced when its chunk comes; other
//     parts are kept as they came;
//   - the last finishReason, finishMessage, promptFeedback and usageMetadata count.
//
// The stream has no terminal event: it is whole when it ends after a chunk with a finishReason
// (or a blocked prompt's promptFeedback). EOF before that, or a read error, is a stream cut short
// (reason network, or timeout/cancelled from the context), which the Front retries. An error
// chunk ({"error": …}) is classified as the same body in a plain reply; SSE comments and events of
// another type are ignored. A reply that is not text/event-stream is read as a plain one.
func (a *Adapter) ExchangeStream(ctx context.Context, req provider.Request, obs *provider.StreamObserver) provider.Outcome {
	names := newNames(req)
	model, body, err := buildRequest(req, names)
	if err != nil {
		return a.failed(req.Model, 0, provider.ReasonBadRequest, "gemini: "+err.Error(), err)
	}
	x, failed := a.post(ctx, req.Model, a.streamEndpoint(model), body, "text/event-stream")
	if failed != nil {
		return *failed
	}
	defer x.resp.Body.Close()
	if x.resp.StatusCode < 200 || x.resp.StatusCode > 299 || !eventStream(x.resp.Header) {
		return a.plainReply(ctx, req, x, names)
	}
	s := &assembler{a: a, req: req, x: x, names: names, obs: obs}
	return s.read(ctx, provider.NewSSEReader(x.resp.Body, maxBody))
}

func eventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// streamPart is a part of the reply being assembled.
type streamPart struct {
	raw       json.RawMessage // a part kept as it came; nil for an assembled text part
	text      string
	signature string
}

// partHead is what the assembler reads of a part.
type partHead struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	ThoughtSignature string          `json:"thoughtSignature"`
}

type assembler struct {
	a     *Adapter
	req   provider.Request
	x     sent
	names *names
	obs   *provider.StreamObserver

	parts     []streamPart
	last      wireResponse // the latest chunk's candidate fields, feedback and usage
	whole     bool         // a chunk ended the reply
	announced []provider.Block
}

func (s *assembler) fail(reason, msg string, cause error) provider.Outcome {
	return s.a.failed(s.req.Model, s.x.resp.StatusCode, reason, msg, cause)
}

func (s *assembler) read(ctx context.Context, r *provider.SSEReader) provider.Outcome {
	status := s.x.resp.StatusCode
	for {
		ev, err := r.Next()
		switch {
		case errors.Is(err, provider.ErrSSETooLarge):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream exceeds %d bytes", s.x.where, status, maxBody), err)
		case err == io.EOF && s.whole:
			return s.done()
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return s.fail(provider.ReasonNetwork, fmt.Sprintf("%s: HTTP %d: the stream ended before a finishReason", s.x.where, status), err)
		case err != nil:
			return s.a.readFailure(ctx, s.req.Model, s.x, err)
		}
		if ev.Type != "" && ev.Type != "message" {
			continue
		}
		var c wireResponse
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: malformed chunk", s.x.where, status), err)
		}
		if c.Error != nil {
			return s.a.failure(s.req.Model, s.x.where, status, s.x.resp.Header, ev.Data)
		}
		if o := s.add(c); o != nil {
			return *o
		}
	}
}

// add folds one chunk in; a non-nil outcome ends the stream.
func (s *assembler) add(c wireResponse) *provider.Outcome {
	if c.PromptFeedback != nil {
		s.last.PromptFeedback = c.PromptFeedback
		s.whole = s.whole || c.PromptFeedback.BlockReason != ""
	}
	if c.UsageMetadata != nil {
		s.last.UsageMetadata = c.UsageMetadata
	}
	for _, cand := range c.Candidates {
		if cand.Index != 0 {
			continue // nika asks for one candidate
		}
		if len(s.last.Candidates) == 0 {
			s.last.Candidates = []wireCandidate{{}}
		}
		lc := &s.last.Candidates[0]
		if cand.FinishReason != "" {
			lc.FinishReason, s.whole = cand.FinishReason, true
		}
		if cand.FinishMessage != "" {
			lc.FinishMessage = cand.FinishMessage
		}
		if cand.Content == nil {
			continue
		}
		lc.Content = cand.Content
		for i, raw := range cand.Content.Parts {
			var p partHead
			if err := json.Unmarshal(raw, &p); err != nil {
				o := s.fail(provider.ReasonServerError, fmt.Sprintf("gemini: part %d: %v", i, err), err)
				return &o
			}
			s.part(p, raw)
		}
	}
	return nil
}

// part adds one part: answer text merges into the text part before it; a functionCall is
// announced.
func (s *assembler) part(p partHead, raw json.RawMessage) {
	if p.Text == nil || p.Thought || p.FunctionCall != nil {
		s.parts = append(s.parts, streamPart{raw: append(json.RawMessage(nil), raw...)})
		if p.FunctionCall != nil && !p.Thought {
			s.announce()
		}
		return
	}
	s.obs.Text(*p.Text)
	if n := len(s.parts); n > 0 {
		if prev := &s.parts[n-1]; prev.raw == nil && (prev.signature == "" || p.ThoughtSignature == "") {
			prev.text += *p.Text
			if prev.signature == "" {
				prev.signature = p.ThoughtSignature
			}
			return
		}
	}
	s.parts = append(s.parts, streamPart{text: *p.Text, signature: p.ThoughtSignature})
}

// assembled is the reply so far as a plain one would carry it.
func (s *assembler) assembled() wireResponse {
	wr := s.last
	cand := wireCandidate{}
	if len(wr.Candidates) > 0 {
		cand = wr.Candidates[0]
	}
	parts := make([]json.RawMessage, 0, len(s.parts))
	for _, p := range s.parts {
		if p.raw != nil {
			parts = append(parts, p.raw)
			continue
		}
		raw, _ := json.Marshal(wirePart{Text: &p.text, ThoughtSignature: p.signature})
		parts = append(parts, raw)
	}
	if cand.Content != nil || len(parts) > 0 {
		content := wireContentReply{Parts: parts}
		if cand.Content != nil {
			content.Role = cand.Content.Role
		}
		cand.Content = &content
		wr.Candidates = []wireCandidate{cand}
	}
	return wr
}

// toolUses decodes the reply so far and returns its tool_use blocks.
func (s *assembler) toolUses(wr wireResponse) []provider.Block {
	r, f := decodeResponse(wr, s.names, len(s.req.Messages))
	if f != nil {
		return nil
	}
	var out []provider.Block
	for _, b := range r.Message.Blocks {
		if b.Type == provider.BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// announce tells the observer of the call just added, as the decoder maps it.
func (s *assembler) announce() {
	uses := s.toolUses(s.assembled())
	if len(uses) != len(s.announced)+1 {
		return // the decoder refuses it: the reply fails when it ends
	}
	b := uses[len(uses)-1]
	s.announced = append(s.announced, b)
	s.obs.ToolCall(provider.StreamCall{Index: len(uses) - 1, Block: b})
}

// done maps the assembled reply, checks it against what was announced, and announces the rest.
func (s *assembler) done() provider.Outcome {
	o := s.a.mapReply(s.req, s.x.resp.StatusCode, s.assembled(), s.names)
	if o.Err != nil {
		return o
	}
	k := 0
	for _, b := range o.Response.Message.Blocks {
		if b.Type != provider.BlockToolUse {
			continue
		}
		switch {
		case k >= len(s.announced):
			s.obs.ToolCall(provider.StreamCall{Index: k, Block: b})
		case !reflect.DeepEqual(s.announced[k], b):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream changed tool call %d", s.x.where, s.x.resp.StatusCode, k), nil)
		}
		k++
	}
	return o
}
