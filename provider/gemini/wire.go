package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nikahq/nika/provider"
)

// wireRequest is the body of generateContent (WIRES §3.1), fields in the order they are sent.
type wireRequest struct {
	SystemInstruction *wireContent      `json:"systemInstruction,omitempty"`
	Contents          []wireContent     `json:"contents"`
	Tools             []wireTool        `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

// wirePart is one part; exactly one of Text, FunctionCall, FunctionResponse and InlineData is set (Text may be ""
// only for a replayed part that carries a thoughtSignature).
type wirePart struct {
	Text             *string           `json:"text,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	InlineData       *inlineData       `json:"inlineData,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

// inlineData is an image part (WIRES §3.1).
type inlineData struct {
	MimeType string `json:"mimeType"`
	Data     []byte `json:"data"` // encoding/json writes []byte as base64
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// toolConfig carries Request.ToolChoice (WIRES §3.1).
type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"` // AUTO | NONE | ANY
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema any             `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// thinkingConfig carries Request.Thinking (WIRES §3.1).
type thinkingConfig struct {
	ThinkingBudget int `json:"thinkingBudget"`
}

// wireResponse is the reply of generateContent (WIRES §3.3); unknown fields are ignored.
type wireResponse struct {
	Candidates     []wireCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
		ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	} `json:"usageMetadata"`
	Error *wireError `json:"error"`
}

type wireCandidate struct {
	Index         int               `json:"index"`
	Content       *wireContentReply `json:"content"`
	FinishReason  string            `json:"finishReason"`
	FinishMessage string            `json:"finishMessage"`
}

// wireContentReply is a candidate's content; its parts are decoded one by one (decodeResponse).
type wireContentReply struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// providerKey keys this wire's replay data in Block.ProviderData (D44):
// {"gemini": {"thoughtSignature": "…", "localId": true}}. thoughtSignature is the part's signature,
// replayed verbatim on the same part; localId marks a functionCall id minted by the adapter because
// Gemini sent none (WIRES §3.2), so it is not sent back.
const providerKey = "gemini"

type blockData struct {
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
	LocalID          bool   `json:"localId,omitempty"`
}

func readBlockData(pd json.RawMessage) blockData {
	if len(pd) == 0 {
		return blockData{}
	}
	var m map[string]blockData
	if json.Unmarshal(pd, &m) != nil {
		return blockData{}
	}
	return m[providerKey]
}

func (d blockData) raw() json.RawMessage {
	if d == (blockData{}) {
		return nil
	}
	b, _ := json.Marshal(map[string]blockData{providerKey: d})
	return b
}

// names is the tool-name table of one request: D41's table, with names that would not start with a
// letter prefixed by "f" (WIRES §3.5, D45).
type names struct {
	base     *provider.Names
	fromWire map[string]string
}

func newNames(req provider.Request) *names {
	n := &names{base: provider.NamesOf(req), fromWire: map[string]string{}}
	for _, name := range req.Admitted {
		n.fromWire[n.Wire(name)] = name
	}
	for _, t := range req.Tools {
		n.fromWire[n.Wire(t.Name)] = t.Name
	}
	return n
}

func (n *names) Wire(canonical string) string {
	w := n.base.Wire(canonical)
	if ch := w[0]; !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
		w = ("f" + w)[:min(64, len(w)+1)]
	}
	return w
}

func (n *names) Canonical(wire string) string {
	if c, ok := n.fromWire[wire]; ok {
		return c
	}
	return n.base.Canonical(wire)
}

// call is a tool_use of the transcript, for answering it with a functionResponse.
type call struct {
	name  string // wire name
	id    string // "" when the id was minted locally
	turn  int    // index of its wire turn
	index int    // position among the calls of that turn
}

// buildRequest encodes req for the wire and returns the model name for the URL.
func buildRequest(req provider.Request, n *names) (string, []byte, error) {
	choice, chosen, err := provider.ParseToolChoice(req)
	if err != nil {
		return "", nil, err
	}
	wantJSON, err := provider.WantsJSON(req)
	if err != nil {
		return "", nil, err
	}
	model, err := modelName(req.Model)
	if err != nil {
		return "", nil, err
	}
	var wr wireRequest
	if strings.TrimSpace(req.System) != "" {
		wr.SystemInstruction = &wireContent{Parts: []wirePart{{Text: &req.System}}}
	}
	if wr.Contents, err = encodeContents(req.Messages, n); err != nil {
		return "", nil, err
	}
	if len(req.Tools) > 0 {
		if wr.Tools, err = encodeTools(req.Tools, n); err != nil {
			return "", nil, err
		}
		wr.ToolConfig = toolConfigOf(choice, chosen, n)
	}
	wr.GenerationConfig = generationOf(req, model, wantJSON)
	body, err := json.Marshal(wr)
	if err != nil {
		return "", nil, err
	}
	return model, body, nil
}

// modelName is the model of "gemini/<model>" (or of a bare name), as it goes into the URL path.
func modelName(ref string) (string, error) {
	_, model, found := strings.Cut(ref, "/")
	if !found {
		model = ref
	}
	if model == "" || strings.ContainsFunc(model, func(r rune) bool { return r == '/' || r <= ' ' }) {
		return "", fmt.Errorf("invalid model name in %q", ref)
	}
	return model, nil
}

// transcript accumulates the wire turns of a request's messages.
type transcript struct {
	n        *names
	contents []wireContent
	calls    map[string]call            // tool_use id → the call it made
	answers  map[*functionResponse]call // each functionResponse → the call it answers
}

// encodeContents turns the messages into wire turns (never nil: "contents" is always sent).
func encodeContents(msgs []provider.Message, n *names) ([]wireContent, error) {
	t := &transcript{n: n, contents: []wireContent{}, calls: map[string]call{}, answers: map[*functionResponse]call{}}
	for i, m := range msgs {
		if err := t.add(i, m); err != nil {
			return nil, err
		}
	}
	// In each user turn the functionResponse parts go first, in the order of the calls they answer
	// (WIRES §4.1), then the other parts in transcript order.
	for k := range t.contents {
		if t.contents[k].Role == "user" {
			t.contents[k].Parts = responsesFirst(t.contents[k].Parts, t.answers)
		}
	}
	return t.contents, nil
}

// add appends message i, merged into the last turn when that turn has the same role.
func (t *transcript) add(i int, m provider.Message) error {
	var role string
	switch m.Role {
	case provider.RoleUser:
		role = "user"
	case provider.RoleAssistant:
		role = "model"
	default:
		return fmt.Errorf("message %d: unsupported role %q", i, m.Role)
	}
	turn := len(t.contents)
	if turn > 0 && t.contents[turn-1].Role == role {
		turn-- // consecutive messages of one role form one wire turn
	}
	var parts []wirePart
	ncalls := 0
	if turn < len(t.contents) {
		for _, p := range t.contents[turn].Parts {
			if p.FunctionCall != nil {
				ncalls++
			}
		}
	}
	for j, b := range m.Blocks {
		pd := readBlockData(b.ProviderData)
		switch b.Type {
		case provider.BlockText:
			if strings.TrimSpace(b.Text) == "" && pd.ThoughtSignature == "" {
				continue
			}
			parts = append(parts, wirePart{Text: &b.Text, ThoughtSignature: pd.ThoughtSignature})
		case provider.BlockToolUse:
			if m.Role != provider.RoleAssistant {
				return fmt.Errorf("message %d block %d: tool_use in a user message", i, j)
			}
			args := provider.ReplayArgs(b.Input)
			c := call{name: t.n.Wire(b.Name), turn: turn, index: ncalls}
			if !pd.LocalID {
				c.id = b.ID
			}
			ncalls++
			if b.ID != "" {
				t.calls[b.ID] = c
			}
			parts = append(parts, wirePart{FunctionCall: &functionCall{ID: c.id, Name: c.name, Args: args},
				ThoughtSignature: pd.ThoughtSignature})
		case provider.BlockImage:
			parts = append(parts, wirePart{InlineData: &inlineData{MimeType: b.MediaType, Data: b.Data}})
		case provider.BlockToolResult:
			if m.Role != provider.RoleUser {
				return fmt.Errorf("message %d block %d: tool_result in an assistant message", i, j)
			}
			c, ok := t.calls[b.ToolUseID]
			if !ok {
				return fmt.Errorf("message %d block %d: tool_result answers unknown tool_use %q", i, j, b.ToolUseID)
			}
			key := "output"
			if b.IsError {
				key = "error"
			}
			fr := &functionResponse{ID: c.id, Name: c.name, Response: map[string]any{key: b.Content}}
			t.answers[fr] = c
			parts = append(parts, wirePart{FunctionResponse: fr})
		default:
			return fmt.Errorf("message %d block %d: unsupported block type %q", i, j, b.Type)
		}
	}
	switch {
	case len(parts) == 0:
	case turn < len(t.contents):
		t.contents[turn].Parts = append(t.contents[turn].Parts, parts...)
	default:
		t.contents = append(t.contents, wireContent{Role: role, Parts: parts})
	}
	return nil
}

// encodeTools declares the offered tools; parameters that are empty or null become an empty object schema.
func encodeTools(tools []provider.ToolDef, n *names) ([]wireTool, error) {
	decls := make([]functionDeclaration, 0, len(tools))
	for _, t := range tools {
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 || string(schema) == "null" {
			schema = []byte(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		decls = append(decls, functionDeclaration{Name: n.Wire(t.Name), Description: t.Description, ParametersJSONSchema: schema})
	}
	return []wireTool{{FunctionDeclarations: decls}}, nil
}

// toolConfigOf maps a provider.ParseToolChoice mode to functionCallingConfig; the default sends none.
func toolConfigOf(choice, chosen string, n *names) *toolConfig {
	switch choice {
	case provider.ChoiceAuto:
		return &toolConfig{functionCallingConfig{Mode: "AUTO"}}
	case provider.ChoiceNone:
		return &toolConfig{functionCallingConfig{Mode: "NONE"}}
	case provider.ChoiceRequired:
		return &toolConfig{functionCallingConfig{Mode: "ANY"}}
	case provider.ChoiceTool:
		return &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{n.Wire(chosen)}}}
	}
	return nil
}

// generationOf is the request's generationConfig, or nil when it would be empty.
func generationOf(req provider.Request, model string, wantJSON bool) *generationConfig {
	gc := generationConfig{Temperature: req.Temperature}
	if req.MaxTokens > 0 {
		gc.MaxOutputTokens = req.MaxTokens
	}
	if req.Schema != nil {
		gc.ResponseMimeType, gc.ResponseJSONSchema = "application/json", req.Schema
	} else if wantJSON {
		gc.ResponseMimeType = "application/json"
	}
	if req.Thinking != nil && req.Thinking.BudgetTokens > 0 && thinks(model) {
		gc.ThinkingConfig = &thinkingConfig{ThinkingBudget: req.Thinking.BudgetTokens}
	}
	if gc.Temperature == nil && gc.MaxOutputTokens == 0 && gc.ResponseMimeType == "" && gc.ThinkingConfig == nil {
		return nil
	}
	return &gc
}

// responsesFirst orders a user turn: functionResponse parts first, sorted (stably) by the wire turn
// and position of the call each answers, then the other parts in their order.
func responsesFirst(parts []wirePart, answers map[*functionResponse]call) []wirePart {
	var rs, rest []wirePart
	for _, p := range parts {
		if p.FunctionResponse != nil {
			rs = append(rs, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(rs) == 0 {
		return parts
	}
	slices.SortStableFunc(rs, func(x, y wirePart) int {
		cx, cy := answers[x.FunctionResponse], answers[y.FunctionResponse]
		if cx.turn != cy.turn {
			return cx.turn - cy.turn
		}
		return cx.index - cy.index
	})
	return append(rs, rest...)
}

// decodeResponse maps a successful reply to a neutral response, or to a failure (content_filter for a
// blocked prompt or a filtered reply without output; server_error for a reply without a candidate or
// with a bad part). The returned failure has only Reason, Message and Cause set. ordinal is the index
// the reply will take in the transcript; it makes minted call ids unique within the transcript.
func decodeResponse(wr wireResponse, n *names, ordinal int) (*provider.Response, *provider.Failure) {
	if len(wr.Candidates) == 0 {
		if pf := wr.PromptFeedback; pf != nil && pf.BlockReason != "" {
			msg := "gemini: prompt blocked (" + provider.OneLine(pf.BlockReason, 60) + ")"
			if pf.BlockReasonMessage != "" {
				msg += ": " + provider.OneLine(pf.BlockReasonMessage, 300)
			}
			return nil, &provider.Failure{Reason: provider.ReasonContentFilter, Message: msg}
		}
		return nil, &provider.Failure{Reason: provider.ReasonServerError, Message: "gemini: reply without a candidate"}
	}
	cand := wr.Candidates[0]
	msg := provider.Message{Role: provider.RoleAssistant, Blocks: []provider.Block{}}
	calls := 0
	if cand.Content != nil {
		for i, raw := range cand.Content.Parts {
			var p struct {
				Text         *string `json:"text"`
				Thought      bool    `json:"thought"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
				ThoughtSignature string `json:"thoughtSignature"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &provider.Failure{Reason: provider.ReasonServerError, Message: fmt.Sprintf("gemini: part %d: %v", i, err), Cause: err}
			}
			switch {
			case p.Thought:
				// Reasoning, not answer text: dropped and not replayed (WIRES §4.5).
			case p.FunctionCall != nil:
				args, err := provider.ObjectArgs(p.FunctionCall.Args)
				if err != nil {
					return nil, &provider.Failure{Reason: provider.ReasonServerError, Message: fmt.Sprintf("gemini: part %d: functionCall args %v", i, err), Cause: err}
				}
				d := blockData{ThoughtSignature: p.ThoughtSignature}
				id := p.FunctionCall.ID
				if id == "" {
					id, d.LocalID = fmt.Sprintf("gemini-call-%d-%d", ordinal, calls), true
				}
				calls++
				b := provider.ToolUseBlock(id, n.Canonical(p.FunctionCall.Name), args)
				b.ProviderData = d.raw()
				msg.Blocks = append(msg.Blocks, b)
			case p.Text != nil:
				b := provider.TextBlock(*p.Text)
				b.ProviderData = blockData{ThoughtSignature: p.ThoughtSignature}.raw()
				if b.Text == "" && b.ProviderData == nil {
					continue
				}
				msg.Blocks = append(msg.Blocks, b)
			default:
				// Parts nika does not use (inline data, code execution, …) are ignored; a bare signature
				// is kept on an empty text part so it is replayed.
				if p.ThoughtSignature != "" {
					b := provider.TextBlock("")
					b.ProviderData = blockData{ThoughtSignature: p.ThoughtSignature}.raw()
					msg.Blocks = append(msg.Blocks, b)
				}
			}
		}
	}
	stop := stopReason(cand.FinishReason, calls > 0)
	if stop == provider.StopContentFilter && strings.TrimSpace(provider.Text(msg)) == "" && calls == 0 {
		m := "gemini: reply blocked (" + provider.OneLine(cand.FinishReason, 60) + ")"
		if cand.FinishMessage != "" {
			m += ": " + provider.OneLine(cand.FinishMessage, 300)
		}
		return nil, &provider.Failure{Reason: provider.ReasonContentFilter, Message: m}
	}
	r := &provider.Response{Message: msg, StopReason: stop}
	if u := wr.UsageMetadata; u != nil {
		r.Usage = provider.Usage{
			InputTokens:  u.PromptTokenCount + u.ToolUsePromptTokenCount,
			OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			Reported:     true,
		}
	}
	return r, nil
}

// stopReason maps a finishReason to a neutral stop reason (WIRES §4.2).
func stopReason(finish string, calls bool) string {
	switch finish {
	case "STOP":
		if calls {
			return provider.StopToolUse
		}
		return provider.StopEndTurn
	case "MAX_TOKENS":
		return provider.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
		"IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return provider.StopContentFilter
	}
	return provider.StopUnknown
}
