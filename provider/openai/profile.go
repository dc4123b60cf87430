// Package openai is the OpenAI-compatible Chat Completions wire (WIRES.md §1): one Adapter speaks to
// OpenAI and to every compatible server (Ollama, LM Studio, llama.cpp, LocalAI, vLLM, Mistral,
// OpenRouter, Groq, DeepSeek, xAI). Server differences are data in a Profile, not types. Exchange
// sends a plain request; ExchangeStream sends it with "stream": true and assembles the chunks into
// the same outcome while text and tool calls are told to an observer (provider.StreamAdapter).
// A profile says it cannot stream with NoStream, and that it refuses stream_options with
// NoStreamOptions; a server that answers the streamed form with a 400 or 422 naming "stream" is
// sent plain requests from then on without one.
package openai

import (
	"regexp"

	"github.com/nikahq/nika/spec"
)

// Profile describes one OpenAI-compatible provider: its defaults and its quirks, as data.
type Profile struct {
	Name    string // provider name, the prefix of a model id ("openai", "ollama", …)
	BaseURL string // default base URL, version segment included (WIRES.md §1)

	// KeyVars are the environment variables holding the API key, in precedence order:
	// NIKA_<P>_API_KEY first, then the conventional one (LANGUAGE.md §6.1).
	KeyVars []string
	// BaseURLVars override BaseURL, in precedence order (NIKA_<P>_BASE_URL first).
	BaseURLVars []string
	// KeyRequired: a cloud provider; New fails when no KeyVars variable is set.
	KeyRequired bool

	// MaxTokensField is the request field carrying Request.MaxTokens: "max_completion_tokens" (OpenAI)
	// or "max_tokens" (most compatible servers, WIRES.md §1.7).
	MaxTokensField string
	// NoStrictSchema omits "strict": true from response_format.json_schema.
	NoStrictSchema bool
	// JSONObjectOnly: the server knows response_format json_object but not json_schema (DeepSeek);
	// a Request.Schema is then sent as {"type":"json_object"} and SupportsSchema reports false.
	JSONObjectOnly bool
	// NoJSONObject: the server refuses response_format json_object (LM Studio,
	// WIRES.md §1.7); a plain JSON request goes as json_schema with the
	// schema {}, which admits any JSON value.
	NoJSONObject bool
	// IDs9: tool-call ids must be exactly 9 characters [a-zA-Z0-9] (Mistral, D44); other ids are
	// mapped deterministically on the way out.
	IDs9 bool
	// ReplayReasoning: replay an assistant message's reasoning_content (DeepSeek thinking mode, D44).
	// Other servers never get it back (Mistral answers 422).
	ReplayReasoning bool
	// ParallelToolCalls sends "parallel_tool_calls": true when tools are offered (llama.cpp turns
	// parallel calls off by default).
	ParallelToolCalls bool
	// Reasoning is how Request.Thinking travels to this server: "" not at all (SupportsThinking
	// reports false and the infer verb warns), ReasoningEffort as reasoning_effort, or
	// ReasoningMaxTokens as OpenRouter's reasoning: {max_tokens: N}.
	Reasoning string
	// ReasoningModels, when set, limits Reasoning to the model names it matches (OpenAI: only its
	// reasoning models accept reasoning_effort).
	ReasoningModels *regexp.Regexp
	// RawArguments: the server takes a replayed tool call's arguments as any string (OpenAI), so
	// arguments a model wrote that are not a JSON object go back exactly as it wrote them. Other
	// servers parse them and answer 400 (Ollama: "invalid tool call arguments"), so they get {}.
	RawArguments bool
	// NoStream: the server cannot stream; ExchangeStream sends the plain request (the Front then
	// announces the whole reply). A server that answers a streamed request with a 400 or 422
	// naming "stream" is treated so from then on, for the adapter's lifetime, without a profile.
	NoStream bool
	// NoStreamOptions omits stream_options from a streamed request: the server refuses fields it
	// does not know (Mistral answers 422) and sends its usage chunk unasked, if at all.
	NoStreamOptions bool
}

// Values of Profile.Reasoning.
const (
	ReasoningEffort    = "effort"     // "reasoning_effort": "low" | "medium" | "high", from the budget (Effort)
	ReasoningMaxTokens = "max_tokens" // "reasoning": {"max_tokens": budget}
)

// Effort maps a thinking budget to a reasoning effort: under 4,096 tokens "low", under 16,384
// "medium", else "high".
func Effort(budget int) string {
	switch {
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

const (
	maxTokens           = "max_tokens"
	maxCompletionTokens = "max_completion_tokens"
)

// quirks are what sets each OpenAI-compatible server apart on the wire (WIRES.md §1.7, D28),
// by provider name. Name, default URL and variables come from the one provider table,
// spec.Providers (LANGUAGE.md §6.2); a Chat Completions row without quirks here gets none.
var quirks = map[string]Profile{
	"openai": {MaxTokensField: maxCompletionTokens, Reasoning: ReasoningEffort,
		ReasoningModels: regexp.MustCompile(`^(o[1-9]|gpt-5)`), RawArguments: true},
	"ollama":     {MaxTokensField: maxTokens, Reasoning: ReasoningEffort},
	"lmstudio":   {MaxTokensField: maxTokens, NoJSONObject: true},
	"llamacpp":   {MaxTokensField: maxTokens, ParallelToolCalls: true},
	"localai":    {MaxTokensField: maxTokens},
	"vllm":       {MaxTokensField: maxTokens},
	"mistral":    {MaxTokensField: maxTokens, NoStrictSchema: true, IDs9: true, NoStreamOptions: true},
	"openrouter": {MaxTokensField: maxTokens, Reasoning: ReasoningMaxTokens},
	"groq":       {MaxTokensField: maxTokens},
	"deepseek":   {MaxTokensField: maxTokens, JSONObjectOnly: true, ReplayReasoning: true},
	"xai":        {MaxTokensField: maxTokens},
}

// Profiles returns the profile of every provider of the table that speaks Chat Completions, in
// the table's order.
func Profiles() []Profile {
	var out []Profile
	for _, row := range spec.Providers() {
		if row.Wire == spec.WireChatCompletions {
			out = append(out, profileOf(row))
		}
	}
	return out
}

func profileOf(row spec.Provider) Profile {
	p := quirks[row.Name]
	if p.MaxTokensField == "" {
		p.MaxTokensField = maxTokens
	}
	p.Name, p.BaseURL, p.KeyVars, p.BaseURLVars, p.KeyRequired = row.Name, row.BaseURL, row.KeyVars, row.BaseURLVars, row.KeyRequired
	return p
}

// Lookup returns the profile of provider name, when it speaks Chat Completions.
func Lookup(name string) (Profile, bool) {
	row, ok := spec.LookupProvider(name)
	if !ok || row.Wire != spec.WireChatCompletions {
		return Profile{}, false
	}
	return profileOf(row), true
}
