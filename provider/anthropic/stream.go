package anthropic

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
	"slices"
	"strings"

	"github.com/nikahq/nika/provider"
)

var _ provider.StreamAdapter = (*Adapter)(nil)

// ExchangeStream sends req with "stream": true and reads the events as they arrive
// (provider.StreamAdapter). The events are assembled into the message the plain Exchange decodes,
// and mapped by the same code, so the Response is the same value:
//
//   - message_start gives the usage so far (input and cache tokens) and any stop reason;
//   - content_block_start opens block index with its type; content_block_delta adds text_delta
//     text, input_json_delta partial_json (a tool_use's input is their concatenation, else the
//     start block's input), thinking_delta thinking and signature_delta signature, so a thinking
//     block is replayed as the plain reply carries it; other blocks are kept as they started;
//   - content_block_stop closes a block: a tool_use is announced to obs then, and each text delta
//     was told as it came;
//   - message_delta gives the stop reason and the cumulative usage (its counts replace the
//     start's); message_stop ends the stream. EOF or a read error before it is a stream cut short
//     (reason network, or timeout/cancelled from the context), which the Front retries;
//   - an error event ({"type": "error", "error": …}, e.g. overloaded_error) is classified as the
//     same body in a plain reply; ping, unknown events and SSE comments are ignored.
//
// A reply that is not text/event-stream is read as a plain one.
func (a *Adapter) ExchangeStream(ctx context.Context, req provider.Request, obs *provider.StreamObserver) provider.Outcome {
	names := provider.NamesOf(req)
	body, err := buildRequest(req, names, true)
	if err != nil {
		return a.failed(req.Model, 0, provider.ReasonBadRequest, "anthropic: "+err.Error(), err)
	}
	resp, failed := a.post(ctx, req.Model, body, "text/event-stream")
	if failed != nil {
		return *failed
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 || !eventStream(resp.Header) {
		return a.plainReply(ctx, req.Model, resp, names)
	}
	s := &assembler{a: a, model: req.Model, status: resp.StatusCode, retry: retryAfterMs(resp.Header, a.clock()),
		names: names, obs: obs}
	return s.read(ctx, provider.NewSSEReader(resp.Body, maxBody))
}

func eventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// event is the data of one stream event; which fields are set depends on Type.
type event struct {
	Type         string          `json:"type"`
	Message      *wireResponse   `json:"message"`       // message_start
	Index        int             `json:"index"`         // content_block_*
	ContentBlock json.RawMessage `json:"content_block"` // content_block_start
	Delta        struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		StopReason  *string `json:"stop_reason"` // message_delta
	} `json:"delta"`
	Usage *struct { // message_delta: cumulative; a count left out keeps the start's
		InputTokens              *int `json:"input_tokens"`
		OutputTokens             *int `json:"output_tokens"`
		CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// streamBlock is a content block being assembled.
type streamBlock struct {
	index      int
	typ        string
	start      json.RawMessage // the content_block of content_block_start
	text       strings.Builder // text, or thinking
	partial    strings.Builder // input_json_delta fragments
	hasPartial bool
	signature  string
	announced  *provider.Block // a tool_use told to the observer
}

type assembler struct {
	a      *Adapter
	model  string
	status int
	retry  int64
	names  *provider.Names
	obs    *provider.StreamObserver

	msg    wireResponse // from message_start, then message_delta
	blocks []*streamBlock
}

func (s *assembler) fail(reason, msg string, cause error) provider.Outcome {
	return s.a.failed(s.model, s.status, reason, msg, cause)
}

func (s *assembler) read(ctx context.Context, r *provider.SSEReader) provider.Outcome {
	for {
		ev, err := r.Next()
		switch {
		case errors.Is(err, provider.ErrSSETooLarge):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream exceeds %d bytes", s.a.where(), s.status, maxBody), err)
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return s.fail(provider.ReasonNetwork, fmt.Sprintf("%s: HTTP %d: the stream ended before message_stop", s.a.where(), s.status), err)
		case err != nil:
			return s.a.readFailure(ctx, s.model, s.status, err)
		}
		var e event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: malformed %s event", s.a.where(), s.status, provider.OneLine(ev.Type, 40)), err)
		}
		if e.Type == "" {
			e.Type = ev.Type
		}
		if o, end := s.add(&e, ev.Data); end {
			return o
		}
	}
}

// add folds one event in; end reports the end of the stream, with its outcome.
func (s *assembler) add(e *event, data []byte) (provider.Outcome, bool) {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			s.msg = *e.Message
			s.msg.Content = nil
		}
	case "content_block_start":
		var head struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(e.ContentBlock, &head)
		b := s.block(e.Index)
		b.typ, b.start = head.Type, slices.Clone(e.ContentBlock)
		if head.Type == "text" {
			b.text.WriteString(head.Text)
			s.obs.Text(head.Text)
		}
	case "content_block_delta":
		s.delta(s.block(e.Index), e)
	case "content_block_stop":
		s.announce(s.block(e.Index))
	case "message_delta":
		if e.Delta.StopReason != nil {
			s.msg.StopReason = e.Delta.StopReason
		}
		s.usage(e)
	case "message_stop":
		return s.done(), true
	case "error":
		return s.a.failure(s.model, s.status, s.retry, data), true
	}
	return provider.Outcome{}, false // ping and events this wire does not define
}

func (s *assembler) delta(b *streamBlock, e *event) {
	switch e.Delta.Type {
	case "text_delta":
		b.text.WriteString(e.Delta.Text)
		if b.typ == "text" {
			s.obs.Text(e.Delta.Text)
		}
	case "input_json_delta":
		b.partial.WriteString(e.Delta.PartialJSON)
		b.hasPartial = true
	case "thinking_delta":
		b.text.WriteString(e.Delta.Thinking)
	case "signature_delta":
		b.signature += e.Delta.Signature
	}
}

func (s *assembler) usage(e *event) {
	u := e.Usage
	if u == nil {
		return
	}
	if s.msg.Usage == nil {
		s.msg.Usage = &wireUsage{}
	}
	for _, f := range []struct {
		from *int
		to   *int
	}{
		{u.InputTokens, &s.msg.Usage.InputTokens},
		{u.OutputTokens, &s.msg.Usage.OutputTokens},
		{u.CacheCreationInputTokens, &s.msg.Usage.CacheCreationInputTokens},
		{u.CacheReadInputTokens, &s.msg.Usage.CacheReadInputTokens},
	} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

// block returns block index, creating it.
func (s *assembler) block(index int) *streamBlock {
	k, found := slices.BinarySearchFunc(s.blocks, index, func(b *streamBlock, i int) int { return b.index - i })
	if found {
		return s.blocks[k]
	}
	b := &streamBlock{index: index}
	s.blocks = slices.Insert(s.blocks, k, b)
	return b
}

// raw is the block as a plain reply carries it.
func (b *streamBlock) raw() json.RawMessage {
	var v any
	switch b.typ {
	case "text":
		v = textBlock{Type: "text", Text: b.text.String()}
	case "tool_use":
		var head struct {
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(b.start, &head)
		input := head.Input
		if b.hasPartial {
			input = json.RawMessage(b.partial.String())
		}
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage("{}")
		} else if !json.Valid(input) {
			input, _ = json.Marshal(string(input)) // not an object: the decoder refuses it as the plain path would
		}
		v = toolUseBlock{Type: "tool_use", ID: head.ID, Name: head.Name, Input: input}
	case "thinking":
		v = struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{"thinking", b.text.String(), b.signature}
	default:
		return b.start
	}
	raw, _ := json.Marshal(v)
	return raw
}

// toolUse maps a closed tool_use block as the decoder will, or reports that it cannot.
func (s *assembler) toolUse(b *streamBlock) (provider.Block, bool) {
	r, err := decodeResponse(wireResponse{Content: []json.RawMessage{b.raw()}}, s.names)
	if err != nil || len(r.Message.Blocks) != 1 {
		return provider.Block{}, false
	}
	return r.Message.Blocks[0], true
}

// announce tells the observer of a closed tool_use block, placed among the tool_use blocks so far.
func (s *assembler) announce(b *streamBlock) {
	if b.typ != "tool_use" || b.announced != nil {
		return
	}
	tb, ok := s.toolUse(b)
	if !ok {
		return // the decoder fails the reply at message_stop
	}
	k := 0
	for _, o := range s.blocks {
		if o.index < b.index && o.typ == "tool_use" {
			k++
		}
	}
	b.announced = &tb
	s.obs.ToolCall(provider.StreamCall{Index: k, Block: tb})
}

// done maps the assembled message, checks it against what was announced, and announces the rest.
func (s *assembler) done() provider.Outcome {
	wr := s.msg
	wr.Type = "message"
	for _, b := range s.blocks {
		wr.Content = append(wr.Content, b.raw())
	}
	o := s.a.mapReply(s.model, s.status, wr, s.names)
	if o.Err != nil {
		return o
	}
	var uses []*streamBlock
	for _, b := range s.blocks {
		if b.typ == "tool_use" {
			uses = append(uses, b)
		}
	}
	k := 0
	for _, blk := range o.Response.Message.Blocks {
		if blk.Type != provider.BlockToolUse {
			continue
		}
		switch b := uses[k]; {
		case b.announced == nil:
			s.obs.ToolCall(provider.StreamCall{Index: k, Block: blk})
		case !reflect.DeepEqual(*b.announced, blk):
			return s.fail(provider.ReasonServerError, fmt.Sprintf("%s: HTTP %d: the stream changed tool call %d after its block closed", s.a.where(), s.status, k), nil)
		}
		k++
	}
	return o
}
