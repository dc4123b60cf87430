package spec

import "sort"

// Wires: the protocols nika speaks to model providers (WIRES.md). A provider of the table speaks
// exactly one.
const (
	WireChatCompletions = "openai"    // the OpenAI-compatible Chat Completions API (WIRES.md §1)
	WireAnthropic       = "anthropic" // the Anthropic Messages API (WIRES.md §2)
	WireGemini          = "gemini"    // the Gemini generateContent API (WIRES.md §3)
	WireMock            = "mock"      // the built-in offline provider (mock/echo)
)

// Provider is one row of the provider table (LANGUAGE.md §6.1–6.2): what a model id's
// `<provider>/` prefix means. It is the one table of providers: the checker knows the names
// from it, the engine builds each provider's wire adapter from it, and the README lists it (a
// test keeps the README in step).
type Provider struct {
	Name string // the prefix of a model id
	Wire string // Wire* constant
	// KeyVars are the environment variables holding the API key, in precedence order:
	// NIKA_<P>_API_KEY first, then the conventional ones.
	KeyVars []string
	// BaseURLVars override BaseURL, in precedence order (NIKA_<P>_BASE_URL first).
	BaseURLVars []string
	BaseURL     string // the default base URL (with its version segment where the wire wants one)
	KeyRequired bool   // a cloud API: no key, no provider
}

// providerTable is in model-id prefix order; Providers returns copies.
var providerTable = []Provider{
	{Name: "anthropic", Wire: WireAnthropic, KeyVars: []string{"NIKA_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"},
		BaseURLVars: []string{"NIKA_ANTHROPIC_BASE_URL"}, BaseURL: "https://api.anthropic.com", KeyRequired: true},
	{Name: "deepseek", Wire: WireChatCompletions, KeyVars: []string{"NIKA_DEEPSEEK_API_KEY", "DEEPSEEK_API_KEY"},
		BaseURLVars: []string{"NIKA_DEEPSEEK_BASE_URL"}, BaseURL: "https://api.deepseek.com", KeyRequired: true},
	{Name: "gemini", Wire: WireGemini, KeyVars: []string{"NIKA_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"},
		BaseURLVars: []string{"NIKA_GEMINI_BASE_URL"}, BaseURL: "https://generativelanguage.googleapis.com", KeyRequired: true},
	{Name: "groq", Wire: WireChatCompletions, KeyVars: []string{"NIKA_GROQ_API_KEY", "GROQ_API_KEY"},
		BaseURLVars: []string{"NIKA_GROQ_BASE_URL"}, BaseURL: "https://api.groq.com/openai/v1", KeyRequired: true},
	{Name: "llamacpp", Wire: WireChatCompletions, KeyVars: []string{"NIKA_LLAMACPP_API_KEY"},
		BaseURLVars: []string{"NIKA_LLAMACPP_BASE_URL"}, BaseURL: "http://localhost:8080/v1"},
	{Name: "lmstudio", Wire: WireChatCompletions, KeyVars: []string{"NIKA_LMSTUDIO_API_KEY"},
		BaseURLVars: []string{"NIKA_LMSTUDIO_BASE_URL"}, BaseURL: "http://localhost:1234/v1"},
	{Name: "localai", Wire: WireChatCompletions, KeyVars: []string{"NIKA_LOCALAI_API_KEY", "LOCALAI_API_KEY"},
		BaseURLVars: []string{"NIKA_LOCALAI_BASE_URL"}, BaseURL: "http://localhost:8080/v1"},
	{Name: "mistral", Wire: WireChatCompletions, KeyVars: []string{"NIKA_MISTRAL_API_KEY", "MISTRAL_API_KEY"},
		BaseURLVars: []string{"NIKA_MISTRAL_BASE_URL"}, BaseURL: "https://api.mistral.ai/v1", KeyRequired: true},
	{Name: "mock", Wire: WireMock},
	{Name: "ollama", Wire: WireChatCompletions, KeyVars: []string{"NIKA_OLLAMA_API_KEY"},
		BaseURLVars: []string{"NIKA_OLLAMA_BASE_URL"}, BaseURL: "http://localhost:11434/v1"},
	{Name: "openai", Wire: WireChatCompletions, KeyVars: []string{"NIKA_OPENAI_API_KEY", "OPENAI_API_KEY"},
		BaseURLVars: []string{"NIKA_OPENAI_BASE_URL", "OPENAI_BASE_URL"}, BaseURL: "https://api.openai.com/v1", KeyRequired: true},
	{Name: "openrouter", Wire: WireChatCompletions, KeyVars: []string{"NIKA_OPENROUTER_API_KEY", "OPENROUTER_API_KEY"},
		BaseURLVars: []string{"NIKA_OPENROUTER_BASE_URL"}, BaseURL: "https://openrouter.ai/api/v1", KeyRequired: true},
	{Name: "vllm", Wire: WireChatCompletions, KeyVars: []string{"NIKA_VLLM_API_KEY", "VLLM_API_KEY"},
		BaseURLVars: []string{"NIKA_VLLM_BASE_URL"}, BaseURL: "http://localhost:8000/v1"},
	{Name: "xai", Wire: WireChatCompletions, KeyVars: []string{"NIKA_XAI_API_KEY", "XAI_API_KEY"},
		BaseURLVars: []string{"NIKA_XAI_BASE_URL"}, BaseURL: "https://api.x.ai/v1", KeyRequired: true},
}

// Providers returns the provider table, sorted by name; the caller may keep and change it.
func Providers() []Provider {
	out := make([]Provider, len(providerTable))
	for i, p := range providerTable {
		p.KeyVars = append([]string(nil), p.KeyVars...)
		p.BaseURLVars = append([]string(nil), p.BaseURLVars...)
		out[i] = p
	}
	return out
}

// LookupProvider returns the row of provider name.
func LookupProvider(name string) (Provider, bool) {
	for _, p := range Providers() {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// providers are the names of the table, sorted: what the checker accepts before the `/`.
var providers = func() []string {
	names := make([]string, len(providerTable))
	for i, p := range providerTable {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}()
