package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nikahq/nika/provider"
)

// wireRequest is the body of POST /v1/messages (WIRES §2.1), fields in the order they are sent.
type wireRequest struct {
	Model        string        `json:"model"`
	MaxTokens    int           `json:"max_tokens"`
	System       string        `json:"system,omitempty"`
	Messages     []wireMessage `json:"messages"`
	Tools        []wireTool    `json:"tools,omitempty"`
	ToolChoice   *toolChoice   `json:"tool_choice,omitempty"`
	Temperature  *float64      `json:"temperature,omitempty"`
	OutputConfig *outputConfig `json:"output_config,omitempty"`
	Thinking     *thinking     `json:"thinking,omitempty"`
	Stream       bool          `json:"stream,omitempty"`
}

// thinking enables extended thinking (WIRES §2.1).
type thinking struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"` // textBlock, toolUseBlock, toolResultBlock or json.RawMessage (replayed thinking)
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

// imageBlock is an image as a base64 source (WIRES §2.2).
type imageBlock struct {
	Type   string      `json:"type"` // "image"
	Source imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"` // encoding/json writes []byte as base64
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// toolChoice is {"type":"auto"|"any"|"none"} or {"type":"tool","name":…} (WIRES §2.1).
type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// JSONInstruction is appended to the system prompt for Request.Format "json": the wire has no JSON
// mode without a schema (WIRES §2.4), so the model is asked for a single JSON value instead.
const JSONInstruction = "Reply with a single JSON value only: no prose, no code fences."

type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string `json:"type"`
	Schema any    `json:"schema"`
}

// wireResponse is the reply of POST /v1/messages (WIRES §2.3); unknown fields are ignored.
type wireResponse struct {
	Type       string            `json:"type"`
	Role       string            `json:"role"`
	Content    []json.RawMessage `json:"content"`
	StopReason *string           `json:"stop_reason"`
	Usage      *wireUsage        `json:"usage"`
	Error      json.RawMessage   `json:"error"`
}

type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// providerKey keys this wire's replay data in Message.ProviderData (D44): {"anthropic": [blocks]}
// holds the thinking / redacted_thinking blocks of an assistant turn, replayed unchanged before its
// other blocks (WIRES §4.5).
const providerKey = "anthropic"

// buildRequest encodes req for the wire; stream asks for the reply as server-sent events.
func buildRequest(req provider.Request, names *provider.Names, stream bool) ([]byte, error) {
	choice, chosen, err := provider.ParseToolChoice(req)
	if err != nil {
		return nil, err
	}
	wantJSON, err := provider.WantsJSON(req)
	if err != nil {
		return nil, err
	}
	model := req.Model
	if _, name, found := strings.Cut(model, "/"); found {
		model = name
	}
	if model == "" {
		return nil, fmt.Errorf("empty model name in %q", req.Model)
	}
	maxTokens := req.MaxTokens
	var think *thinking
	if req.Thinking != nil && req.Thinking.BudgetTokens > 0 && thinks(model) {
		think = &thinking{Type: "enabled", BudgetTokens: max(req.Thinking.BudgetTokens, MinThinkingBudget)}
		if maxTokens <= 0 {
			maxTokens = think.BudgetTokens + DefaultMaxTokens
		}
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	wr := wireRequest{Model: model, MaxTokens: maxTokens, System: req.System, Temperature: req.Temperature,
		Messages: []wireMessage{}, Thinking: think}
	if strings.TrimSpace(req.System) == "" {
		wr.System = ""
	}
	if wantJSON {
		if wr.System == "" {
			wr.System = JSONInstruction
		} else {
			wr.System += "\n\n" + JSONInstruction
		}
	}
	for i, m := range req.Messages {
		var role string
		switch m.Role {
		case provider.RoleUser, provider.RoleAssistant:
			role = string(m.Role)
		default:
			return nil, fmt.Errorf("message %d: unsupported role %q", i, m.Role)
		}
		var content []any
		if m.Role == provider.RoleAssistant {
			content = append(content, replayData(m.ProviderData)...)
		}
		for j, b := range m.Blocks {
			switch b.Type {
			case provider.BlockText:
				if strings.TrimSpace(b.Text) == "" {
					continue // the wire rejects empty text blocks (WIRES §2.1)
				}
				content = append(content, textBlock{Type: "text", Text: b.Text})
			case provider.BlockToolUse:
				content = append(content, toolUseBlock{Type: "tool_use", ID: b.ID, Name: names.Wire(b.Name), Input: provider.ReplayArgs(b.Input)})
			case provider.BlockImage:
				content = append(content, imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: b.MediaType, Data: b.Data}})
			case provider.BlockToolResult:
				content = append(content, toolResultBlock{Type: "tool_result", ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError})
			default:
				return nil, fmt.Errorf("message %d block %d: unsupported block type %q", i, j, b.Type)
			}
		}
		if len(content) == 0 {
			continue
		}
		if n := len(wr.Messages); n > 0 && wr.Messages[n-1].Role == role {
			// Consecutive turns of one role form one wire turn: the results of one model turn go back in
			// a single user message (WIRES §4.1).
			wr.Messages[n-1].Content = append(wr.Messages[n-1].Content, content...)
			continue
		}
		wr.Messages = append(wr.Messages, wireMessage{Role: role, Content: content})
	}
	for k := range wr.Messages {
		if wr.Messages[k].Role == string(provider.RoleUser) {
			wr.Messages[k].Content = resultsFirst(wr.Messages[k].Content)
		}
	}
	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 || string(schema) == "null" {
			schema = []byte(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		wr.Tools = append(wr.Tools, wireTool{Name: names.Wire(t.Name), Description: t.Description, InputSchema: schema})
	}
	// tool_choice only travels with tools.
	if len(wr.Tools) > 0 {
		switch choice {
		case provider.ChoiceAuto, provider.ChoiceNone:
			wr.ToolChoice = &toolChoice{Type: choice}
		case provider.ChoiceRequired:
			wr.ToolChoice = &toolChoice{Type: "any"}
		case provider.ChoiceTool:
			wr.ToolChoice = &toolChoice{Type: "tool", Name: names.Wire(chosen)}
		}
	}
	if req.Schema != nil {
		wr.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: req.Schema}}
	}
	wr.Stream = stream
	return json.Marshal(wr)
}

// resultsFirst moves the tool_result blocks of a user turn before its other blocks, each group in its
// original order (WIRES §2.2 rule 3).
func resultsFirst(c []any) []any {
	out := make([]any, 0, len(c))
	for _, b := range c {
		if _, ok := b.(toolResultBlock); ok {
			out = append(out, b)
		}
	}
	for _, b := range c {
		if _, ok := b.(toolResultBlock); !ok {
			out = append(out, b)
		}
	}
	return out
}

// replayData returns this wire's replay blocks from a message's ProviderData; data of other wires or
// of an unexpected shape is ignored.
func replayData(pd json.RawMessage) []any {
	if len(pd) == 0 {
		return nil
	}
	var m map[string][]json.RawMessage
	if json.Unmarshal(pd, &m) != nil {
		return nil
	}
	var out []any
	for _, b := range m[providerKey] {
		out = append(out, b)
	}
	return out
}

// decodeResponse maps a successful reply to a neutral response.
func decodeResponse(wr wireResponse, names *provider.Names) (*provider.Response, error) {
	msg := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{}}
	var replay []json.RawMessage
	for i, raw := range wr.Content {
		var b struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("content block %d: %v", i, err)
		}
		switch b.Type {
		case "text":
			msg.Blocks = append(msg.Blocks, provider.TextBlock(b.Text))
		case "tool_use":
			if b.ID == "" {
				return nil, fmt.Errorf("content block %d: tool_use without id", i)
			}
			input, err := provider.ObjectArgs(b.Input)
			if err != nil {
				return nil, fmt.Errorf("content block %d: %v", i, err)
			}
			msg.Blocks = append(msg.Blocks, provider.ToolUseBlock(b.ID, names.Canonical(b.Name), input))
		case "thinking", "redacted_thinking":
			var c bytes.Buffer
			if err := json.Compact(&c, raw); err != nil {
				return nil, fmt.Errorf("content block %d: %v", i, err)
			}
			replay = append(replay, c.Bytes())
		default:
			// Server-tool and other blocks nika does not use are ignored (decode tolerantly).
		}
	}
	if len(replay) > 0 {
		pd, err := json.Marshal(map[string][]json.RawMessage{providerKey: replay})
		if err != nil {
			return nil, err
		}
		msg.ProviderData = pd
	}
	r := &provider.Response{Message: msg, StopReason: stopReason(wr.StopReason)}
	if u := wr.Usage; u != nil {
		r.Usage = provider.Usage{
			InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens: u.OutputTokens,
			Reported:     true,
		}
	}
	return r, nil
}

// stopReason maps a wire stop_reason to a neutral one (WIRES §4.2).
func stopReason(s *string) string {
	if s == nil {
		return provider.StopUnknown
	}
	switch *s {
	case "end_turn":
		return provider.StopEndTurn
	case "max_tokens", "model_context_window_exceeded":
		return provider.StopMaxTokens
	case "stop_sequence":
		return provider.StopSequence
	case "tool_use":
		return provider.StopToolUse
	case "refusal":
		return provider.StopContentFilter
	}
	return provider.StopUnknown
}
