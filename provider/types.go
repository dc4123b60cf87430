package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nikahq/nika/spec"
)

// Role is the author of a transcript message. The system prompt is not a message: it travels in
// Request.System.
type Role string

// The roles of a neutral transcript.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Block types (Block.Type).
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockImage      = "image"
)

// Block is one content block of a message, a tagged union on Type (AGENT.md §4.1):
//
//   - "text": Text.
//   - "tool_use": ID (non-empty, unique within its message), Name (the canonical tool name, e.g.
//     "nika:read"; wire adapters map names per D41) and Input, the provider's argument bytes with
//     their key order preserved.
//   - "tool_result": ToolUseID (the ID of the answered tool_use), Content (always a string) and
//     IsError.
//   - "image": MediaType ("image/png", "image/jpeg", "image/gif" or "image/webp") and Data, the
//     image's bytes (infer.vision, in a user message).
//
// ProviderData is opaque per-provider replay data (D44, e.g. Gemini's thoughtSignature): an adapter
// fills it from a response and sends it back untouched when the transcript is replayed. Nothing else
// reads it.
type Block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	MediaType    string          `json:"media_type,omitempty"`
	Data         []byte          `json:"data,omitempty"`
	ProviderData json.RawMessage `json:"provider_data,omitempty"`
}

// Message is one transcript message. ProviderData is opaque per-provider replay data attached to the
// whole message (D44, e.g. DeepSeek's reasoning_content of an assistant turn with tool calls).
type Message struct {
	Role         Role            `json:"role"`
	Blocks       []Block         `json:"blocks"`
	ProviderData json.RawMessage `json:"provider_data,omitempty"`
}

// ToolDef is a tool offered to the model. Name is canonical ("nika:read", "mcp:fs/read_text_file");
// Parameters is the tool's JSON Schema for its arguments.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call. Every request stands alone: a provider never merges requests or lets
// one condition another's answer.
type Request struct {
	Model       string    // "<provider>/<name>", LANGUAGE.md §6.1
	System      string    // "" → no system prompt
	Messages    []Message // the transcript, oldest first
	Tools       []ToolDef // offered tools, in the order to present them; empty → none
	Schema      any       // decoded JSON Schema for structured output; nil → free text
	Temperature *float64  // nil → the provider's default
	MaxTokens   int       // 0 → the provider's default
	// ToolChoice constrains tool use: "" or "auto" (the model decides), "none", "required" (some tool), or "tool:<canonical name>" (that tool).
	ToolChoice string
	// Format asks for the reply's form when Schema is nil: "" or "text", or "json" (any JSON value; a wire's JSON mode). Schema, when set, wins.
	Format string
	// Admitted lists the canonical names of every tool the reply may call, in a fixed order (the
	// agent's universe): a superset of Tools when a router offers only some of them. AGENT.md
	// §5.2(b): the whitelist decides, not the offered set, so a call to an admitted tool the
	// router left out this turn must map back to its canonical name. Wire adapters build the
	// request's name table (D41, NamesOf) over Admitted, then Tools; wire names thus stay the same
	// from turn to turn whatever the router offers. Empty: Tools only.
	Admitted []string
	// Thinking asks for extended reasoning before the answer (infer.thinking, LANGUAGE.md §5.1);
	// nil: none is asked for (the model's default). Only a provider that reports NativeThinking
	// for the model sends it; others ignore it.
	Thinking *Thinking
}

// Thinking is the reasoning asked for by Request.Thinking.
type Thinking struct {
	BudgetTokens int // reasoning tokens the model may spend, > 0
}

// Tool choice modes returned by ParseToolChoice.
const (
	ChoiceDefault  = ""         // ToolChoice "": send nothing, the wire's default
	ChoiceAuto     = "auto"     // the model decides
	ChoiceNone     = "none"     // no tool call
	ChoiceRequired = "required" // some tool
	ChoiceTool     = "tool"     // the named tool
)

// ParseToolChoice validates req.ToolChoice against req.Tools and returns its mode (a Choice
// constant) and, for ChoiceTool, the canonical tool name. An unknown value, an empty or unoffered
// tool name, or "required" with no tools is an error (the adapters fail the request as bad_request
// without sending it).
func ParseToolChoice(req Request) (mode, name string, err error) {
	switch c := req.ToolChoice; {
	case c == "":
		return ChoiceDefault, "", nil
	case c == ChoiceAuto || c == ChoiceNone:
		return c, "", nil
	case c == ChoiceRequired:
		if len(req.Tools) == 0 {
			return "", "", fmt.Errorf("tool choice %q: no tools offered", c)
		}
		return c, "", nil
	case strings.HasPrefix(c, "tool:"):
		name = strings.TrimPrefix(c, "tool:")
		for _, t := range req.Tools {
			if t.Name == name {
				return ChoiceTool, name, nil
			}
		}
		return "", "", fmt.Errorf("tool choice %q: no such tool offered", c)
	default:
		return "", "", fmt.Errorf("unknown tool choice %q", c)
	}
}

// Reply formats (Request.Format).
const (
	FormatText = "text"
	FormatJSON = "json"
)

// WantsJSON validates req.Format and reports whether the request asks for the JSON mode: Format
// "json" and no Schema (a Schema wins). An unknown Format is an error.
func WantsJSON(req Request) (bool, error) {
	switch req.Format {
	case "", FormatText:
		return false, nil
	case FormatJSON:
		return req.Schema == nil, nil
	}
	return false, fmt.Errorf("unknown response format %q", req.Format)
}

// Usage is the token count of one request. Reported is false when the provider gave no usage (the
// counts are then zero and the report counts the request as unreported).
type Usage struct {
	InputTokens  int  `json:"input_tokens"`
	OutputTokens int  `json:"output_tokens"`
	Reported     bool `json:"reported"`
}

// Neutral stop reasons (WIRES.md §4.2).
const (
	StopEndTurn       = "end_turn"
	StopMaxTokens     = "max_tokens"
	StopSequence      = "stop_sequence"
	StopToolUse       = "tool_use"
	StopContentFilter = "content_filter"
	StopUnknown       = "unknown"
)

// Response is a provider's answer: one assistant message, verbatim as the wire carried it.
type Response struct {
	Message    Message // Role is RoleAssistant
	Usage      Usage
	StopReason string // one of the Stop constants
}

// Outcome answers one request: exactly one of Response and Err is non-nil. Err is NIKA-INFER-001 with
// the details of D27 (see Failure).
type Outcome struct {
	Response *Response
	Err      *spec.Error
}

// Provider answers batches of requests (AGENT.md §11.1).
//
// Complete returns exactly one outcome per request, out[i] answering reqs[i], and an empty slice for
// an empty batch. A failed request is a failed outcome and never affects another request. Complete
// never panics into its caller, never merges requests, and on cancellation still returns one outcome
// per request (reason "cancelled" for those not answered). One instance per provider serves a whole
// run and must be safe for concurrent use.
type Provider interface {
	Complete(ctx context.Context, reqs []Request) []Outcome
}

// NativeSchema is an optional capability, found by type assertion: a provider that implements it and
// returns true for a model honours Request.Schema as a native response format, so the first request
// of an `infer` with `schema:` already carries it (LANGUAGE.md §5.1).
type NativeSchema interface {
	SupportsSchema(model string) bool
}

// NativeThinking is an optional capability, found by type assertion: a provider that implements it
// and returns true for a model sends Request.Thinking on its wire (Anthropic thinking, Gemini
// thinkingConfig, an OpenAI-compatible reasoning effort). For any other provider or model the
// request's Thinking is ignored, and the infer verb says so on stderr (LANGUAGE.md §5.1).
type NativeThinking interface {
	SupportsThinking(model string) bool
}

// Text returns the concatenated Text of m's text blocks, in order, without separators.
func Text(m Message) string {
	var n int
	for _, b := range m.Blocks {
		if b.Type == BlockText {
			n += len(b.Text)
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, b := range m.Blocks {
		if b.Type == BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// ToolUseBlock returns a tool_use block.
func ToolUseBlock(id, name string, input json.RawMessage) Block {
	return Block{Type: BlockToolUse, ID: id, Name: name, Input: input}
}

// ToolResultBlock returns a tool_result block answering the tool_use with id toolUseID.
func ToolResultBlock(toolUseID, content string, isError bool) Block {
	return Block{Type: BlockToolResult, ToolUseID: toolUseID, Content: content, IsError: isError}
}

// ImageBlock returns an image block.
func ImageBlock(mediaType string, data []byte) Block {
	return Block{Type: BlockImage, MediaType: mediaType, Data: data}
}

// UserText returns a user message holding one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Blocks: []Block{TextBlock(text)}}
}
