package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nikahq/nika/spec/canon"
)

// MockModel is the one model the mock provider serves (LANGUAGE.md §6.3).
const MockModel = "mock/echo"

// doneTool is the agent intrinsic the mock switches to when its candidate call is pointless.
const doneTool = "nika:done"

// Mock is the `mock` provider of LANGUAGE.md §6.3 and D26: offline, free and byte-stable. It serves
// only mock/echo (any other model is NIKA-INFER-001 model_not_found) and otherwise fails only when the
// context is cancelled before it answers (reason cancelled). It ignores System (except for usage),
// Temperature and MaxTokens. A Mock is safe for concurrent use; its only state is a cache of the
// minimal arguments of the tool schemas it has seen (a fan-out of agents offers the same tools
// thousands of times, and building an instance decodes the schema).
type Mock struct {
	args     sync.Map // string(Parameters) → canonical minimal arguments ([]byte, shared read-only)
	argCount atomic.Int64
}

// maxMockArgs bounds the cache: a mock that sees more distinct schemas builds the rest each time.
const maxMockArgs = 1024

// NewMock returns the mock provider.
func NewMock() *Mock { return &Mock{} }

// SupportsSchema reports native structured output for mock/echo (D26): rule 1 answers every request
// that carries a schema.
func (m *Mock) SupportsSchema(model string) bool { return model == MockModel }

// SupportsThinking reports true for mock/echo: the mock takes Request.Thinking and, by its
// contract, ignores it (LANGUAGE.md §6.3), which is not the missing support §5.1 warns about.
func (m *Mock) SupportsThinking(model string) bool { return model == MockModel }

// Complete answers each request by the first matching rule of LANGUAGE.md §6.3:
//
//  1. Schema set: the reply is the canonical JSON of MinimalInstance(Schema), no tool call.
//  2. Tools offered: a text block equal to the text of the first user message, then one tool call
//     to the first tool with arguments MinimalInstance(Parameters) as canonical JSON — or to
//     nika:done with {} when nika:done is offered and either the latest result for a call to that
//     first tool is an error, or the same call (name and canonical arguments) is already in the
//     transcript. The call id is mock-call-<k>, k = 1 + the tool_use blocks already in the transcript.
//  3. Otherwise: the concatenated text blocks of the last user message (for infer: the prompt).
//
// Usage is reported (D26): input tokens = ⌈bytes/4⌉ over System, every text block, every tool_use
// Input as canonical JSON and every tool_result Content (tool definitions and the schema excluded);
// output tokens = ⌈bytes/4⌉ over the reply's text plus its tool-call arguments.
func (m *Mock) Complete(ctx context.Context, reqs []Request) []Outcome {
	out := make([]Outcome, len(reqs))
	for i := range reqs {
		out[i] = m.answer(ctx, &reqs[i])
	}
	return out
}

func (m *Mock) answer(ctx context.Context, req *Request) (o Outcome) {
	defer func() {
		if r := recover(); r != nil { // a defect; never let it reach the caller
			o = Failed(Failure{Model: req.Model, Reason: ReasonBadRequest, Message: fmt.Sprintf("mock: internal failure: %v", r)})
		}
	}()
	if err := ctx.Err(); err != nil {
		return Failed(Failure{Model: req.Model, Reason: ReasonCancelled,
			Message: "request cancelled before the provider answered", Cause: context.Cause(ctx)})
	}
	if req.Model != MockModel {
		return Failed(Failure{Model: req.Model, Reason: ReasonModelNotFound,
			Message: "the mock provider serves only " + strconv.Quote(MockModel) + ", not " + strconv.Quote(req.Model)})
	}
	var blocks []Block
	var outBytes int
	stop := StopEndTurn
	switch {
	case req.Schema != nil:
		reply, err := canon.Marshal(MinimalInstance(req.Schema))
		if err != nil {
			return Failed(Failure{Model: req.Model, Reason: ReasonBadRequest, Cause: err,
				Message: "mock: the schema's minimal instance has no JSON encoding: " + err.Error()})
		}
		blocks = []Block{TextBlock(string(reply))}
		outBytes = len(reply)
	case len(req.Tools) > 0:
		call, err := m.mockCall(req)
		if err != nil {
			return Failed(Failure{Model: req.Model, Reason: ReasonBadRequest, Cause: err,
				Message: "mock: the tool's minimal arguments have no JSON encoding: " + err.Error()})
		}
		text := Text(firstUser(req.Messages))
		blocks = []Block{TextBlock(text), call}
		outBytes = len(text) + len(call.Input)
		stop = StopToolUse
	default:
		text := Text(lastUser(req.Messages))
		blocks = []Block{TextBlock(text)}
		outBytes = len(text)
	}
	return Outcome{Response: &Response{
		Message:    Message{Role: RoleAssistant, Blocks: blocks},
		Usage:      Usage{InputTokens: tokens(inputBytes(req)), OutputTokens: tokens(outBytes), Reported: true},
		StopReason: stop,
	}}
}

// minimalArgs is the canonical JSON of a schema's minimal instance, from the cache when it is
// there (a fresh copy either way: the caller owns it).
func (m *Mock) minimalArgs(params json.RawMessage) ([]byte, error) {
	if b, ok := m.args.Load(string(params)); ok {
		return bytes.Clone(b.([]byte)), nil
	}
	args, err := canon.Marshal(MinimalInstance(params))
	if err != nil {
		return nil, err
	}
	if m.argCount.Load() < maxMockArgs {
		if _, loaded := m.args.LoadOrStore(string(params), bytes.Clone(args)); !loaded {
			m.argCount.Add(1)
		}
	}
	return args, nil
}

// mockCall is rule 2's tool call.
func (m *Mock) mockCall(req *Request) (Block, error) {
	cand := req.Tools[0]
	args, err := m.minimalArgs(cand.Parameters)
	if err != nil {
		return Block{}, err
	}
	name := cand.Name
	if offers(req.Tools, doneTool) && (latestIsError(req.Messages, name) || alreadyCalled(req.Messages, name, args)) {
		name, args = doneTool, []byte("{}")
	}
	k := 1
	for _, msg := range req.Messages {
		for _, b := range msg.Blocks {
			if b.Type == BlockToolUse {
				k++
			}
		}
	}
	return ToolUseBlock("mock-call-"+strconv.Itoa(k), name, json.RawMessage(args)), nil
}

func offers(tools []ToolDef, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// latestIsError reports whether the last tool_result, in transcript order, that answers a call to
// name has is_error set.
func latestIsError(msgs []Message, name string) bool {
	ids := map[string]bool{}
	for _, msg := range msgs {
		for _, b := range msg.Blocks {
			if b.Type == BlockToolUse && b.Name == name {
				ids[b.ID] = true
			}
		}
	}
	if len(ids) == 0 {
		return false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		blocks := msgs[i].Blocks
		for j := len(blocks) - 1; j >= 0; j-- {
			if b := blocks[j]; b.Type == BlockToolResult && ids[b.ToolUseID] {
				return b.IsError
			}
		}
	}
	return false
}

// alreadyCalled reports whether the transcript holds a call to name whose canonical arguments are
// args.
func alreadyCalled(msgs []Message, name string, args []byte) bool {
	for _, msg := range msgs {
		for _, b := range msg.Blocks {
			if b.Type == BlockToolUse && b.Name == name && (bytes.Equal(b.Input, args) || bytes.Equal(canonicalInput(b.Input), args)) {
				return true
			}
		}
	}
	return false
}

// canonicalInput is a tool_use Input as canonical JSON; bytes that are not JSON are kept as they are.
func canonicalInput(in json.RawMessage) []byte {
	if len(in) == 0 {
		return nil
	}
	c, err := canon.Marshal(in)
	if err != nil {
		return in
	}
	return c
}

func firstUser(msgs []Message) Message {
	for _, m := range msgs {
		if m.Role == RoleUser {
			return m
		}
	}
	return Message{}
}

func lastUser(msgs []Message) Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i]
		}
	}
	return Message{}
}

// inputBytes counts the request text of D26: system, text blocks, canonical tool_use inputs and
// tool_result contents.
func inputBytes(req *Request) int {
	n := len(req.System)
	for _, msg := range req.Messages {
		for _, b := range msg.Blocks {
			switch b.Type {
			case BlockText:
				n += len(b.Text)
			case BlockToolUse:
				n += len(canonicalInput(b.Input))
			case BlockToolResult:
				n += len(b.Content)
			}
		}
	}
	return n
}

// tokens is ⌈bytes/4⌉.
func tokens(bytes int) int { return (bytes + 3) / 4 }
