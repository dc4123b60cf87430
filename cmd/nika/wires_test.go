package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Black-box tests of what `nika run` sends on the three provider wires (issue 11 items 1–4 and
// 8), built as the CLI builds them: the adapter from the environment, behind the provider
// front, against a local server that speaks the wire.

// wireServer answers every wire at once: OpenAI-compatible /v1/chat/completions, Anthropic
// /v1/messages and Gemini /v1beta/models/{m}:generateContent, each with a reply of text
// (reply(n) for the n-th request, 0-based). It records the request bodies, and serves img at
// /img.png for vision URLs.
type wireServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	paths  []string
	reply  func(n int) string
}

var tinyPNG = func() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	return b
}()

func newWireServer(t *testing.T, reply func(n int) string) *wireServer {
	t.Helper()
	ws := &wireServer{reply: reply}
	ws.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/img.png" {
			w.Header().Set("Content-Type", "image/png")
			w.Write(tinyPNG)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ws.mu.Lock()
		n := len(ws.bodies)
		ws.bodies = append(ws.bodies, m)
		ws.paths = append(ws.paths, r.URL.Path)
		ws.mu.Unlock()
		text := ws.reply(n)
		switch {
		case r.URL.Path == "/v1/chat/completions":
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, text)
		case r.URL.Path == "/v1/messages":
			fmt.Fprintf(w, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`, text)
		case strings.HasPrefix(r.URL.Path, "/v1beta/models/") && strings.HasSuffix(r.URL.Path, ":generateContent"):
			fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}`, text)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *wireServer) requests() []map[string]any {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]map[string]any(nil), ws.bodies...)
}

// env points every wire at the server, with test keys.
func (ws *wireServer) env() []string {
	return []string{
		"OPENAI_BASE_URL=" + ws.URL + "/v1", "OPENAI_API_KEY=sk-wire-test-key",
		"NIKA_OLLAMA_BASE_URL=" + ws.URL + "/v1",
		"NIKA_GROQ_BASE_URL=" + ws.URL + "/v1", "GROQ_API_KEY=gk-wire-test-key",
		"NIKA_ANTHROPIC_BASE_URL=" + ws.URL, "ANTHROPIC_API_KEY=ak-wire-test-key",
		"NIKA_GEMINI_BASE_URL=" + ws.URL, "GEMINI_API_KEY=gm-wire-test-key",
	}
}

// runYAML writes a workflow (and extra files) into a fresh directory and runs it with the binary.
func runYAML(t *testing.T, yaml string, files map[string][]byte, env ...string) result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.nika.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return runBinaryEnv(t, dir, env, "run", "flow.nika.yaml", "--no-trace", "--no-progress")
}

// at walks a decoded JSON value by keys and indexes ("messages", 0, "content").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// okSchema is the test schema as jsonOf writes it back (keys sorted).
const okSchema = `{"properties":{"ok":{"type":"boolean"}},"required":["ok"],"type":"object"}`

// Item 1: an infer with `schema:` sends the provider's native response format on every wire
// that has one, and no schema instruction in the system prompt (LANGUAGE.md §5.1 rule 1).
func TestRunSchemaIsNative(t *testing.T) {
	flow := func(model string) string {
		return `nika: v1
workflow: native
tasks:
  - id: ask
    infer:
      model: ` + model + `
      prompt: "Is it ok?"
      schema: { type: object, required: [ok], properties: { ok: { type: boolean } } }
outputs:
  answer: ${{ tasks.ask.output }}
`
	}
	for _, tt := range []struct {
		model  string
		native func(body map[string]any) any // the native format in the body, nil when absent
		system func(body map[string]any) any
	}{
		{"openai/gpt-4o-mini", func(b map[string]any) any { return at(b, "response_format", "json_schema", "schema") },
			func(b map[string]any) any { return at(b, "messages", 0, "role") }},
		{"anthropic/claude-sonnet-4-5", func(b map[string]any) any { return at(b, "output_config", "format", "schema") },
			func(b map[string]any) any { return b["system"] }},
		{"gemini/gemini-2.5-flash", func(b map[string]any) any { return at(b, "generationConfig", "responseJsonSchema") },
			func(b map[string]any) any { return b["systemInstruction"] }},
	} {
		t.Run(tt.model, func(t *testing.T) {
			ws := newWireServer(t, func(int) string { return `{"ok":true}` })
			r := runYAML(t, flow(tt.model), nil, ws.env()...)
			if r.code != 0 || r.stdout != `{"answer":{"ok":true}}`+"\n" {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			reqs := ws.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			if got := jsonOf(tt.native(reqs[0])); got != okSchema {
				t.Errorf("native schema %s, want %s; body %s", got, okSchema, jsonOf(reqs[0]))
			}
			if s := tt.system(reqs[0]); s != nil && s != "user" {
				t.Errorf("a schema instruction went in the system prompt: %v", s)
			}
		})
	}
	t.Run("an older Claude gets the instruction instead", func(t *testing.T) {
		ws := newWireServer(t, func(int) string { return `{"ok":true}` })
		r := runYAML(t, flow("anthropic/claude-3-7-sonnet-20250219"), nil, ws.env()...)
		if r.code != 0 {
			t.Fatalf("exit %d stderr %q", r.code, r.stderr)
		}
		b := ws.requests()[0]
		if b["output_config"] != nil || !strings.Contains(fmt.Sprint(b["system"]), "JSON Schema") {
			t.Errorf("body %s", jsonOf(b))
		}
	})
	t.Run("the agent's final re-ask", func(t *testing.T) {
		ws := newWireServer(t, func(n int) string {
			if n == 0 {
				return "it is fine"
			}
			return `{"ok":true}`
		})
		r := runYAML(t, `nika: v1
workflow: native-agent
tasks:
  - id: ask
    agent:
      model: openai/gpt-4o-mini
      prompt: "Is it ok?"
      tools: ["nika:done"]
      schema: { type: object, required: [ok], properties: { ok: { type: boolean } } }
outputs:
  answer: ${{ tasks.ask.output }}
`, nil, ws.env()...)
		if r.code != 0 || r.stdout != `{"answer":{"ok":true}}`+"\n" {
			t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		reqs := ws.requests()
		if len(reqs) != 2 || jsonOf(at(reqs[1], "response_format", "json_schema", "schema")) != okSchema {
			t.Errorf("re-ask %s", jsonOf(reqs))
		}
	})
}

// Item 3: infer.thinking reaches each wire in its own form, and where the provider has none the
// run says so on stderr instead of dropping it silently.
func TestRunThinking(t *testing.T) {
	flow := func(model string) string {
		return `nika: v1
workflow: thinking
tasks:
  - id: ask
    infer:
      model: ` + model + `
      prompt: "Think."
      thinking: { enabled: true, budget_tokens: 3000 }
outputs:
  answer: ${{ tasks.ask.output }}
`
	}
	for _, tt := range []struct {
		model string
		field func(b map[string]any) any
		want  string
	}{
		{"openai/o4-mini", func(b map[string]any) any { return b["reasoning_effort"] }, `"low"`},
		{"ollama/qwen3:8b", func(b map[string]any) any { return b["reasoning_effort"] }, `"low"`},
		{"anthropic/claude-sonnet-4-5", func(b map[string]any) any { return []any{b["thinking"], b["max_tokens"]} },
			`[{"budget_tokens":3000,"type":"enabled"},7096]`},
		{"gemini/gemini-2.5-flash", func(b map[string]any) any { return at(b, "generationConfig", "thinkingConfig") }, `{"thinkingBudget":3000}`},
	} {
		t.Run(tt.model, func(t *testing.T) {
			ws := newWireServer(t, func(int) string { return "thought" })
			r := runYAML(t, flow(tt.model), nil, ws.env()...)
			if r.code != 0 || r.stdout != `{"answer":"thought"}`+"\n" || strings.Contains(r.stderr, "ignored") {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if got := jsonOf(tt.field(ws.requests()[0])); got != tt.want {
				t.Errorf("sent %s, want %s", got, tt.want)
			}
		})
	}
	for _, model := range []string{"openai/gpt-4o-mini", "groq/llama-3.3-70b-versatile", "gemini/gemini-2.0-flash"} {
		t.Run(model+" warns", func(t *testing.T) {
			ws := newWireServer(t, func(int) string { return "plain" })
			r := runYAML(t, flow(model), nil, ws.env()...)
			if r.code != 0 || !strings.Contains(r.stderr, "[warn] ask: `thinking` is ignored: "+model) {
				t.Fatalf("exit %d stderr %q", r.code, r.stderr)
			}
			b := jsonOf(ws.requests()[0])
			for _, f := range []string{"reasoning", "thinking", "Thinking"} {
				if strings.Contains(b, f) {
					t.Errorf("body carries %s: %s", f, b)
				}
			}
		})
	}
}

// Item 4: vision inputs, from a file and from a URL, reach each wire as an image of that wire,
// under permits.fs.read and permits.net.http (the SSRF floor refuses loopback without an exact
// entry).
func TestRunVision(t *testing.T) {
	flow := func(model, permits, url string) string {
		return `nika: v1
workflow: vision
` + permits + `tasks:
  - id: look
    infer:
      model: ` + model + `
      prompt: "What is this?"
      vision:
        - { source: file, path: dot.png }
        - { source: url, url: "` + url + `" }
outputs:
  answer: ${{ tasks.look.output }}
`
	}
	const permits = "permits:\n  fs: { read: [\"*.png\"] }\n  net: { http: [\"127.0.0.1\"] }\n"
	b64 := base64.StdEncoding.EncodeToString(tinyPNG)
	for _, tt := range []struct {
		model  string
		images func(b map[string]any) []any
		want   string
	}{
		{"openai/gpt-4o-mini", func(b map[string]any) []any {
			return []any{at(b, "messages", 0, "content", 0), at(b, "messages", 0, "content", 1), at(b, "messages", 0, "content", 2)}
		}, `[{"image_url":{"url":"data:image/png;base64,` + b64 + `"},"type":"image_url"},{"image_url":{"url":"data:image/png;base64,` + b64 + `"},"type":"image_url"},{"text":"What is this?","type":"text"}]`},
		{"anthropic/claude-sonnet-4-5", func(b map[string]any) []any {
			return []any{at(b, "messages", 0, "content", 0), at(b, "messages", 0, "content", 2)}
		}, `[{"source":{"data":"` + b64 + `","media_type":"image/png","type":"base64"},"type":"image"},{"text":"What is this?","type":"text"}]`},
		{"gemini/gemini-2.5-flash", func(b map[string]any) []any {
			return []any{at(b, "contents", 0, "parts", 1), at(b, "contents", 0, "parts", 2)}
		}, `[{"inlineData":{"data":"` + b64 + `","mimeType":"image/png"}},{"text":"What is this?"}]`},
	} {
		t.Run(tt.model, func(t *testing.T) {
			ws := newWireServer(t, func(int) string { return "a dot" })
			r := runYAML(t, flow(tt.model, permits, ws.URL+"/img.png"), map[string][]byte{"dot.png": tinyPNG}, ws.env()...)
			if r.code != 0 || r.stdout != `{"answer":"a dot"}`+"\n" {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if got := jsonOf(tt.images(ws.requests()[0])); got != tt.want {
				t.Errorf("images %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Vision failures are the task's, with the code of the rule that refused: the SSRF floor without
// a permits entry, permits.fs.read, a file that is not an image, a missing file. Nothing is sent.
func TestRunVisionRefused(t *testing.T) {
	ws := newWireServer(t, func(int) string { return "never" })
	flow := func(permits, item string) string {
		return "nika: v1\nworkflow: vision\n" + permits + `tasks:
  - id: look
    infer:
      model: openai/gpt-4o-mini
      prompt: "What is this?"
      vision: [` + item + `]
`
	}
	files := map[string][]byte{"dot.png": tinyPNG, "notes.txt": []byte("not an image")}
	for _, tt := range []struct{ name, permits, item, code string }{
		{"loopback without an entry", "", `{source: url, url: "` + ws.URL + `/img.png"}`, "NIKA-SEC-005"},
		{"outside permits.fs.read", "permits:\n  fs: { read: [\"*.jpg\"] }\n", `{source: file, path: "${{ 'dot' + '.png' }}"}`, "NIKA-SEC-004"},
		{"not an image", "", `{source: file, path: notes.txt}`, "NIKA-VAR-006"},
		{"missing file", "", `{source: file, path: gone.png}`, "NIKA-BUILTIN-READ-001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runYAML(t, flow(tt.permits, tt.item), files, ws.env()...)
			if r.code != 1 || !strings.Contains(r.stderr, "error["+tt.code+"]") || !strings.Contains(r.stderr, "vision[0]") {
				t.Fatalf("exit %d stderr %q", r.code, r.stderr)
			}
		})
	}
	if n := len(ws.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// Item 8: a provider error names the URL it tried (never the key), and a 404 from a base URL
// without a version segment hints at /v1 (or at a doubled one). The transport errors are tested
// on the adapters (they are retried for seconds here).
func TestRunProviderErrorNamesURL(t *testing.T) {
	ws := newWireServer(t, func(int) string { return "x" })
	flow := func(model string) string {
		return "nika: v1\nworkflow: where\ntasks:\n  - id: ask\n    infer: { model: " + model + ", prompt: hi }\n"
	}
	t.Run("openai without /v1", func(t *testing.T) {
		r := runYAML(t, flow("openai/gpt-4o-mini"), nil, "OPENAI_BASE_URL="+ws.URL, "OPENAI_API_KEY=sk-secret-key-1")
		want := "openai: POST " + ws.URL + "/chat/completions: HTTP 404"
		if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "set NIKA_OPENAI_BASE_URL to "+ws.URL+"/v1") {
			t.Fatalf("exit %d stderr %q, want %q and a /v1 hint", r.code, r.stderr, want)
		}
		if strings.Contains(r.stderr, "sk-secret-key-1") {
			t.Error("the key leaked")
		}
	})
	t.Run("anthropic with /v1", func(t *testing.T) {
		r := runYAML(t, flow("anthropic/claude-sonnet-4-5"), nil, "NIKA_ANTHROPIC_BASE_URL="+ws.URL+"/v1", "ANTHROPIC_API_KEY=ak-secret")
		if r.code != 1 || !strings.Contains(r.stderr, "anthropic: POST "+ws.URL+"/v1/v1/messages: HTTP 404") ||
			!strings.Contains(r.stderr, "set NIKA_ANTHROPIC_BASE_URL to "+ws.URL) {
			t.Fatalf("exit %d stderr %q", r.code, r.stderr)
		}
	})
}

// NIKA_RUN_DEPTH guards run recursion (NIKA-SEC-003): at 8 the run refuses to start, and a value
// that is not a whole number ≥ 0 is an environment error instead of a silent reset to 0.
func TestRunDepth(t *testing.T) {
	flow := "nika: v1\nworkflow: depth\ntasks:\n  - id: a\n    invoke: { tool: nika:log, args: { message: hi } }\n"
	for _, tt := range []struct {
		value string
		code  int
		want  string
	}{
		{"7", 0, ""},
		{"8", 3, "error[NIKA-SEC-003] run recursion: nesting depth 8"},
		{"abc", 3, `NIKA_RUN_DEPTH must be a whole number ≥ 0`},
		{"-1", 3, `got "-1"`},
		{"", 3, `got ""`},
	} {
		r := runYAML(t, flow, nil, "NIKA_RUN_DEPTH="+tt.value)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("NIKA_RUN_DEPTH=%q: exit %d stderr %q", tt.value, r.code, r.stderr)
		}
	}
	r := runBinaryEnv(t, t.TempDir(), []string{"NIKA_RUN_DEPTH=x"}, "serve", "--addr", "127.0.0.1:0")
	if r.code != 3 || !strings.Contains(r.stderr, "nika serve: NIKA_RUN_DEPTH must be a whole number") {
		t.Errorf("serve: exit %d stderr %q", r.code, r.stderr)
	}
}
