package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/provider"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// server is an httptest server that records request bodies and answers with a fixed reply.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	auth   []string
}

func newServer(t *testing.T, status int, header map[string]string, body string) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "bad path "+r.URL.Path, http.StatusTeapot)
			return
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) lastBody(t *testing.T) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("no request received")
	}
	return s.bodies[len(s.bodies)-1]
}

func adapter(t *testing.T, name, url string) *Adapter {
	t.Helper()
	p, ok := Lookup(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	env := map[string]string{"NIKA_" + strings.ToUpper(name) + "_BASE_URL": url + "/v1/", "NIKA_" + strings.ToUpper(name) + "_API_KEY": "sk-secret-key"}
	a, err := New(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("request body differs from %s:\ngot:\n%s\nwant:\n%s", path, buf.Bytes(), want)
	}
}

func mustOK(t *testing.T, o provider.Outcome) *provider.Response {
	t.Helper()
	if o.Err != nil {
		t.Fatalf("unexpected error: %v %v", o.Err, o.Err.Details)
	}
	if o.Response == nil {
		t.Fatal("nil response")
	}
	return o.Response
}

func mustFail(t *testing.T, o provider.Outcome, reason string, status int, retry int64) {
	t.Helper()
	if o.Err == nil {
		t.Fatalf("want failure %s, got response %+v", reason, o.Response)
	}
	if got := provider.ReasonOf(o.Err); got != reason {
		t.Errorf("reason = %q, want %q (%s)", got, reason, o.Err.Error())
	}
	if got, _ := o.Err.Details["status"].(int); got != status {
		t.Errorf("status = %v, want %d", o.Err.Details["status"], status)
	}
	var gotRetry int64
	if r, ok := o.Err.Details["retry_after_ms"].(int64); ok {
		gotRetry = r
	}
	if gotRetry != retry {
		t.Errorf("retry_after_ms = %v, want %d", o.Err.Details["retry_after_ms"], retry)
	}
	if strings.Contains(o.Err.Error(), "sk-secret-key") {
		t.Errorf("key leaked: %s", o.Err.Error())
	}
}

const textReply = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null},"logprobs":null,"finish_reason":"stop"}],
 "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

func TestPlainText(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	a := adapter(t, "openai", s.URL)
	temp := 0.2
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{
		Model: "openai/gpt-4o-mini", System: "Answer briefly.", Messages: []provider.Message{provider.UserText("Hi")},
		Temperature: &temp, MaxTokens: 100,
	}))
	if provider.Text(r.Message) != "Hello there." || r.StopReason != provider.StopEndTurn || r.Message.Role != provider.RoleAssistant {
		t.Errorf("response = %+v", r)
	}
	if r.Usage != (provider.Usage{InputTokens: 12, OutputTokens: 3, Reported: true}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	if s.auth[0] != "Bearer sk-secret-key" {
		t.Errorf("auth header = %q", s.auth[0])
	}
	golden(t, "plain_text", s.lastBody(t))
}

func TestUsageAbsentAndMaxTokensField(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"content":"x"},"finish_reason":"length"}]}`)
	a := adapter(t, "ollama", s.URL)
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "ollama/qwen3:8b", Messages: []provider.Message{provider.UserText("Hi")}, MaxTokens: 5}))
	if r.Usage.Reported || r.Usage.InputTokens != 0 || r.StopReason != provider.StopMaxTokens {
		t.Errorf("response = %+v", r)
	}
	var body map[string]any
	json.Unmarshal(s.lastBody(t), &body)
	if body["max_tokens"] != 5.0 || body["model"] != "qwen3:8b" || body["max_completion_tokens"] != nil {
		t.Errorf("body = %v", body)
	}
}

var tools = []provider.ToolDef{
	{Name: "nika:read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "mcp:fs/read_text_file", Description: "Read text", Parameters: json.RawMessage(`{"type": "object"}`)},
}

func TestToolCalls(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
	 {"id":"call_a1","type":"function","function":{"name":"nika_read","arguments":"{\n\"path\": \"a.txt\", \"n\": 1.50}"}},
	 {"type":"function","index":1,"function":{"name":"mcp_fs_read_text_file","arguments":{"z":1,"a":2}}},
	 {"id":"call_a1","type":"function","function":{"name":"unknown_tool","arguments":""}}]},
	 "finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)
	a := adapter(t, "openai", s.URL)
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText("read")}, Tools: tools}))
	if r.StopReason != provider.StopToolUse {
		t.Errorf("stop = %s", r.StopReason)
	}
	want := []provider.Block{
		provider.ToolUseBlock("call_a1", "nika:read", json.RawMessage(`{"path":"a.txt","n":1.50}`)),
		provider.ToolUseBlock("call_1", "mcp:fs/read_text_file", json.RawMessage(`{"z":1,"a":2}`)),
		provider.ToolUseBlock("call_2", "unknown_tool", json.RawMessage(`{}`)),
	}
	if len(r.Message.Blocks) != len(want) {
		t.Fatalf("blocks = %+v", r.Message.Blocks)
	}
	for i, b := range r.Message.Blocks {
		if b.Type != want[i].Type || b.ID != want[i].ID || b.Name != want[i].Name || string(b.Input) != string(want[i].Input) {
			t.Errorf("block %d = %+v (input %s), want %+v (input %s)", i, b, b.Input, want[i], want[i].Input)
		}
	}
	golden(t, "tools_offered", s.lastBody(t))
}

func TestOneToolCall(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"content":"Let me look.","tool_calls":[
	 {"id":"c9","type":"function","function":{"name":"nika_read","arguments":"{\"path\":\"b\"}"}}]},"finish_reason":"tool_calls"}]}`)
	a := adapter(t, "openai", s.URL)
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText("read")}, Tools: tools}))
	if len(r.Message.Blocks) != 2 || provider.Text(r.Message) != "Let me look." || r.Message.Blocks[1].Name != "nika:read" || r.Message.Blocks[1].ID != "c9" {
		t.Errorf("blocks = %+v", r.Message.Blocks)
	}
}

func transcript() []provider.Message {
	return []provider.Message{
		provider.UserText("Weather in Paris and Oslo?"),
		{Role: provider.RoleAssistant, Blocks: []provider.Block{
			provider.ToolUseBlock("call_a1", "nika:read", json.RawMessage(`{"path": "paris"}`)),
			provider.ToolUseBlock("call_b2", "mcp:fs/read_text_file", json.RawMessage(`{"path":"oslo"}`)),
		}, ProviderData: json.RawMessage(`{"reasoning_content":"thinking..."}`)},
		{Role: provider.RoleUser, Blocks: []provider.Block{
			provider.ToolResultBlock("call_a1", `{"temp_c":18}`, false),
			provider.ToolResultBlock("call_b2", "error: city not found", true),
		}},
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	a := adapter(t, "openai", s.URL)
	mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o-mini", System: "Answer briefly.", Messages: transcript(), Tools: tools}))
	var body struct {
		Messages []struct {
			Role       string
			Content    *string
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			ReasoningContent *string `json:"reasoning_content"`
		}
	}
	if err := json.Unmarshal(s.lastBody(t), &body); err != nil {
		t.Fatal(err)
	}
	m := body.Messages
	if len(m) != 5 || m[0].Role != "system" || m[1].Role != "user" || m[2].Role != "assistant" || m[3].Role != "tool" || m[4].Role != "tool" {
		t.Fatalf("messages = %+v", m)
	}
	if m[2].Content != nil || len(m[2].ToolCalls) != 2 || m[2].ToolCalls[0].Function.Name != "nika_read" ||
		m[2].ToolCalls[0].Function.Arguments != `{"path":"paris"}` || m[2].ToolCalls[1].Function.Name != "mcp_fs_read_text_file" {
		t.Errorf("assistant = %+v", m[2])
	}
	if m[2].ReasoningContent != nil {
		t.Error("reasoning_content replayed to openai")
	}
	if m[3].ToolCallID != "call_a1" || *m[3].Content != `{"temp_c":18}` || m[4].ToolCallID != "call_b2" || *m[4].Content != "error: city not found" {
		t.Errorf("tool messages = %+v %+v", m[3], m[4])
	}
	golden(t, "tool_results", s.lastBody(t))
}

func TestDeepSeekReasoningReplay(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"content":"","reasoning_content":"hmm","tool_calls":[
	 {"id":"c1","type":"function","function":{"name":"nika_read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	a := adapter(t, "deepseek", s.URL)
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "deepseek/deepseek-chat", Messages: transcript(), Tools: tools, Schema: map[string]any{"type": "object"}}))
	if string(r.Message.ProviderData) != `{"reasoning_content":"hmm"}` {
		t.Errorf("provider data = %s", r.Message.ProviderData)
	}
	golden(t, "deepseek", s.lastBody(t))
}

func TestMistralIDs(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	a := adapter(t, "mistral", s.URL)
	mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "mistral/mistral-large-latest", Messages: transcript(), Tools: tools, Schema: map[string]any{"type": "object"}}))
	var body struct {
		Messages []struct {
			ToolCallID string                `json:"tool_call_id"`
			ToolCalls  []struct{ ID string } `json:"tool_calls"`
		}
	}
	json.Unmarshal(s.lastBody(t), &body)
	id := body.Messages[1].ToolCalls[0].ID
	if !valid9(id) || body.Messages[2].ToolCallID != id || body.Messages[3].ToolCallID == id || !valid9(body.Messages[3].ToolCallID) {
		t.Errorf("ids not mapped: %s", s.lastBody(t))
	}
	golden(t, "mistral", s.lastBody(t))
}

func TestSchemaRequest(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"content":"{\"ok\":true}"},"finish_reason":"stop"}]}`)
	a := adapter(t, "openai", s.URL)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []any{"ok"}, "additionalProperties": false}
	r := mustOK(t, a.Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText("ok?")}, Schema: schema}))
	if provider.Text(r.Message) != `{"ok":true}` {
		t.Errorf("text = %q", provider.Text(r.Message))
	}
	if !a.SupportsSchema("gpt-4o") {
		t.Error("openai should support schemas")
	}
	golden(t, "schema", s.lastBody(t))
}

func TestRefusal(t *testing.T) {
	s := newServer(t, 200, nil, `{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`)
	mustFail(t, adapter(t, "openai", s.URL).Exchange(context.Background(), provider.Request{Model: "openai/x", Messages: []provider.Message{provider.UserText("?")}}), provider.ReasonContentFilter, 200, 0)
}

func TestErrors(t *testing.T) {
	future := time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)
	cases := []struct {
		name    string
		profile string
		status  int
		header  map[string]string
		body    string
		reason  string
		retry   int64
	}{
		{"400", "openai", 400, nil, `{"error":{"message":"Invalid 'tools[0].function.name'","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}`, provider.ReasonBadRequest, 0},
		{"400 xai key", "xai", 400, nil, `{"code":"Client specified an invalid argument","error":"Incorrect API key provided: sk-***"}`, provider.ReasonAuthFailed, 0},
		{"401", "openai", 401, nil, `{"error":{"message":"Incorrect API key provided: sk-secret-key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, provider.ReasonAuthFailed, 0},
		{"403", "openai", 403, nil, `{"error":{"message":"unsupported_country_region_territory"}}`, provider.ReasonAuthFailed, 0},
		{"404", "ollama", 404, nil, `{"error":{"message":"model \"x\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`, provider.ReasonModelNotFound, 0},
		{"422 mistral", "mistral", 422, nil, `{"object":"error","message":{"detail":[{"type":"extra_forbidden"}]},"type":"invalid_request_error","param":null,"code":null}`, provider.ReasonBadRequest, 0},
		{"429", "openai", 429, nil, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, provider.ReasonRateLimited, 0},
		{"429 seconds", "openai", 429, map[string]string{"Retry-After": "2"}, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`, provider.ReasonRateLimited, 2000},
		{"429 float seconds", "openai", 429, map[string]string{"Retry-After": "1.5"}, `{}`, provider.ReasonRateLimited, 1500},
		{"429 ms", "openai", 429, map[string]string{"Retry-After-Ms": "250.2", "Retry-After": "9"}, `{}`, provider.ReasonRateLimited, 251},
		{"429 date", "openai", 429, map[string]string{"Retry-After": future.Format(http.TimeFormat)}, `{}`, provider.ReasonRateLimited, 30000},
		{"429 past date", "openai", 429, map[string]string{"Retry-After": "Fri, 23 Jan 2026 07:42:01 GMT"}, `{}`, provider.ReasonRateLimited, 0},
		{"429 quota", "openai", 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, provider.ReasonQuotaExceeded, 0},
		{"402", "deepseek", 402, nil, `{"error":{"message":"Insufficient Balance"}}`, provider.ReasonQuotaExceeded, 0},
		{"408", "openai", 408, nil, ``, provider.ReasonServerError, 0},
		{"500", "openai", 500, nil, `{"error":{"message":"The server had an error"}}`, provider.ReasonServerError, 0},
		{"503 retry", "openai", 503, map[string]string{"Retry-After": "3"}, `{"error":{"message":"overloaded","type":"service_unavailable_error","code":"server_is_overloaded"}}`, provider.ReasonServerError, 3000},
		{"lmstudio string error", "lmstudio", 400, nil, `{"error":"'response_format.type' must be 'json_schema' or 'text'"}`, provider.ReasonBadRequest, 0},
		{"content filter", "openai", 400, nil, `{"error":{"message":"filtered","code":"content_filter"}}`, provider.ReasonContentFilter, 0},
		{"openrouter 200 error", "openrouter", 200, nil, `{"error":{"code":502,"message":"Provider returned error"}}`, provider.ReasonServerError, 0},
		{"openrouter 200 rate", "openrouter", 200, nil, `{"error":{"code":429,"message":"Rate limited"}}`, provider.ReasonRateLimited, 0},
		{"malformed json", "openai", 200, nil, `{"choices":[{"message":`, provider.ReasonServerError, 0},
		{"html 502", "openai", 502, nil, `<html>Bad gateway</html>`, provider.ReasonServerError, 0},
		{"no choices", "openai", 200, nil, `{"choices":[]}`, provider.ReasonServerError, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, c.status, c.header, c.body)
			a := adapter(t, c.profile, s.URL)
			a.now = func() time.Time { return future.Add(-30 * time.Second) }
			o := a.Exchange(context.Background(), provider.Request{Model: c.profile + "/m", Messages: []provider.Message{provider.UserText("hi")}})
			mustFail(t, o, c.reason, c.status, c.retry)
			if o.Err != nil && o.Err.Transient != provider.Transient(c.reason) {
				t.Errorf("transient = %v", o.Err.Transient)
			}
		})
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	a := adapter(t, "openai", s.URL)
	req := provider.Request{Model: "openai/m", Messages: []provider.Message{provider.UserText("hi")}}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	mustFail(t, a.Exchange(ctx, req), provider.ReasonTimeout, 0, 0)

	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel2)
	mustFail(t, a.Exchange(ctx2, req), provider.ReasonCancelled, 0, 0)
}

func TestConnectionClosedMidBody(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, buf, _ := hj.Hijack()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"Hel")
		buf.Flush()
		conn.Close()
	}))
	t.Cleanup(s.Close)
	mustFail(t, adapter(t, "openai", s.URL).Exchange(context.Background(), provider.Request{Model: "openai/m", Messages: []provider.Message{provider.UserText("hi")}}), provider.ReasonNetwork, 200, 0)
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	mustFail(t, adapter(t, "ollama", url).Exchange(context.Background(), provider.Request{Model: "ollama/m", Messages: []provider.Message{provider.UserText("hi")}}), provider.ReasonNetwork, 0, 0)
}

// fields decodes a request body into its top-level fields.
func fields(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

func TestToolChoiceAndFormat(t *testing.T) {
	cases := []struct {
		name, choice, format string
		tools                []provider.ToolDef
		wantChoice, wantFmt  string // compact JSON; "" → field absent
	}{
		{"default", "", "", tools, "", ""},
		{"text", "", "text", tools, "", ""},
		{"auto", "auto", "", tools, `"auto"`, ""},
		{"none", "none", "", tools, `"none"`, ""},
		{"required", "required", "", tools, `"required"`, ""},
		{"named", "tool:mcp:fs/read_text_file", "", tools, `{"type":"function","function":{"name":"mcp_fs_read_text_file"}}`, ""},
		{"auto without tools", "auto", "", nil, "", ""},
		{"json", "", "json", nil, "", `{"type":"json_object"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, 200, nil, textReply)
			mustOK(t, adapter(t, "openai", s.URL).Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o",
				Messages: []provider.Message{provider.UserText("json please")}, Tools: c.tools, ToolChoice: c.choice, Format: c.format}))
			f := fields(t, s.lastBody(t))
			if got := string(f["tool_choice"]); got != c.wantChoice {
				t.Errorf("tool_choice = %s, want %s", got, c.wantChoice)
			}
			if got := string(f["response_format"]); got != c.wantFmt {
				t.Errorf("response_format = %s, want %s", got, c.wantFmt)
			}
		})
	}
}

func TestSchemaWinsOverFormat(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	schema := map[string]any{"type": "object"}
	mustOK(t, adapter(t, "openai", s.URL).Exchange(context.Background(), provider.Request{Model: "openai/gpt-4o",
		Messages: []provider.Message{provider.UserText("ok?")}, Schema: schema, Format: "json"}))
	if got := string(fields(t, s.lastBody(t))["response_format"]); !strings.Contains(got, `"json_schema"`) {
		t.Errorf("response_format = %s", got)
	}
}

func TestToolChoiceBadRequest(t *testing.T) {
	for _, c := range []provider.Request{
		{ToolChoice: "sometimes", Tools: tools},
		{ToolChoice: "tool:nika:write", Tools: tools},
		{ToolChoice: "tool:nika:read"},
		{ToolChoice: "required"},
		{Format: "yaml"},
	} {
		s := newServer(t, 200, nil, textReply)
		c.Model = "openai/gpt-4o"
		c.Messages = []provider.Message{provider.UserText("hi")}
		mustFail(t, adapter(t, "openai", s.URL).Exchange(context.Background(), c), provider.ReasonBadRequest, 0, 0)
		if len(s.bodies) != 0 {
			t.Errorf("%+v: a request was sent", c)
		}
	}
}

// LM Studio refuses json_object (WIRES.md §1.7): a plain JSON request goes as
// json_schema with the schema {}.
func TestJSONFormatWithoutJSONObject(t *testing.T) {
	s := newServer(t, 200, nil, textReply)
	mustOK(t, adapter(t, "lmstudio", s.URL).Exchange(context.Background(), provider.Request{Model: "lmstudio/m",
		Messages: []provider.Message{provider.UserText("json please")}, Format: "json"}))
	if got := string(fields(t, s.lastBody(t))["response_format"]); got != `{"type":"json_schema","json_schema":{"name":"output","schema":{}}}` {
		t.Errorf("response_format = %s", got)
	}
}

// A refused connection names the URL tried, and the message never quotes a query (net/http's
// *url.Error does).
func TestTransportErrorNamesURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	p, _ := Lookup("vllm")
	a, err := New(p, func(k string) (string, bool) { return url + "/v1?token=qsecret", k == "NIKA_VLLM_BASE_URL" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := a.Exchange(context.Background(), provider.Request{Model: "vllm/m", Messages: []provider.Message{provider.UserText("hi")}})
	if o.Err == nil {
		t.Fatal("no error")
	}
	if msg := o.Err.Message; !strings.HasPrefix(msg, "vllm: POST "+url+"/v1?…: request failed (network): ") ||
		strings.Contains(msg, "qsecret") {
		t.Errorf("message %q", msg)
	}
}

// Arguments a model wrote that are not a JSON object (kept in the transcript as a JSON string)
// go back verbatim to OpenAI, and as {} to servers that parse them (Ollama answers 400 "invalid
// tool call arguments" to anything else).
func TestReplayNonJSONArguments(t *testing.T) {
	msgs := []provider.Message{provider.UserText("go"),
		{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.ToolUseBlock("c1", "nika:read", json.RawMessage(`"{path: a"`))}},
		{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock("c1", "not JSON", true)}}}
	for _, tt := range []struct{ profile, want string }{{"openai", `{path: a`}, {"ollama", `{}`}, {"vllm", `{}`}} {
		s := newServer(t, 200, nil, textReply)
		mustOK(t, adapter(t, tt.profile, s.URL).Exchange(context.Background(), provider.Request{Model: tt.profile + "/m", Messages: msgs}))
		var body struct {
			Messages []struct {
				ToolCalls []struct {
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(s.lastBody(t), &body); err != nil {
			t.Fatal(err)
		}
		if got := body.Messages[1].ToolCalls[0].Function.Arguments; got != tt.want {
			t.Errorf("%s: arguments %q, want %q", tt.profile, got, tt.want)
		}
	}
}

// SupportsThinking: only the profiles with a reasoning form, and for OpenAI only its reasoning
// models; SupportsSchema is unaffected by the model.
func TestCapabilities(t *testing.T) {
	for _, tt := range []struct {
		profile, model string
		thinks         bool
	}{
		{"openai", "openai/o4-mini", true}, {"openai", "openai/gpt-5.1", true}, {"openai", "openai/gpt-4o", false},
		{"ollama", "ollama/qwen3:8b", true}, {"openrouter", "openrouter/x/y", true}, {"groq", "groq/llama", false},
	} {
		a := adapter(t, tt.profile, "http://127.0.0.1:1")
		if got := a.SupportsThinking(tt.model); got != tt.thinks {
			t.Errorf("%s: SupportsThinking = %v", tt.model, got)
		}
	}
	if adapter(t, "deepseek", "http://x").SupportsSchema("deepseek/m") || !adapter(t, "openai", "http://x").SupportsSchema("openai/m") {
		t.Error("SupportsSchema")
	}
}
