package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/")

// recorder is an httptest server that records the last request and answers with a fixed reply.
type recorder struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
	path   string
}

func (r *recorder) last() ([]byte, http.Header, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body, r.header, r.path
}

func serve(t *testing.T, status int, hdr map[string]string, reply string) (*Adapter, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.body, rec.header, rec.path = b, r.Header.Clone(), r.Method+" "+r.URL.Path
		rec.mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("content-type", "application/json")
		w.Header().Set("request-id", "req_test")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return &Adapter{BaseURL: srv.URL, Key: "sk-ant-secret", Client: srv.Client()}, rec
}

func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("request body differs from %s:\ngot:\n%s\nwant:\n%s", path, pretty.Bytes(), want)
	}
}

func ok(t *testing.T, out provider.Outcome) *provider.Response {
	t.Helper()
	if out.Err != nil || out.Response == nil {
		t.Fatalf("want a response, got err %v", out.Err)
	}
	return out.Response
}

const textReply = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
 "content":[{"type":"text","text":"Hello"},{"type":"text","text":" world"}],
 "stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"service_tier":"standard"}}`

func TestPlainText(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	temp := 0.2
	r := ok(t, a.Exchange(context.Background(), provider.Request{
		Model: "anthropic/claude-sonnet-4-5", System: "Answer briefly.",
		Messages: []provider.Message{provider.UserText("Hi")}, Temperature: &temp,
	}))
	if got := provider.Text(r.Message); got != "Hello world" || len(r.Message.Blocks) != 2 {
		t.Errorf("text = %q, blocks %d", got, len(r.Message.Blocks))
	}
	if r.Message.Role != provider.RoleAssistant || r.StopReason != provider.StopEndTurn {
		t.Errorf("role %q stop %q", r.Message.Role, r.StopReason)
	}
	if r.Usage != (provider.Usage{InputTokens: 15, OutputTokens: 5, Reported: true}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	body, hdr, path := rec.last()
	if path != "POST /v1/messages" {
		t.Errorf("path = %q", path)
	}
	if hdr.Get("x-api-key") != "sk-ant-secret" || hdr.Get("anthropic-version") != DefaultVersion ||
		hdr.Get("content-type") != "application/json" {
		t.Errorf("headers = %v", hdr)
	}
	golden(t, "plain_text", body)
}

func TestNoUsage(t *testing.T) {
	a, _ := serve(t, 200, nil, `{"type":"message","role":"assistant","content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens"}`)
	r := ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("Hi")}}))
	if r.Usage.Reported || r.StopReason != provider.StopMaxTokens {
		t.Errorf("usage %+v stop %q", r.Usage, r.StopReason)
	}
}

var tools = []provider.ToolDef{
	{Name: "nika:read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "mcp:fs/read_text_file", Description: "Read text", Parameters: json.RawMessage(`{"type":"object"}`)},
}

func TestToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		want  []provider.Block
	}{
		{"one", `{"type":"message","role":"assistant","content":[
			{"type":"tool_use","id":"toolu_1","name":"nika_read","input":{"path":"a.txt"}}],
			"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			[]provider.Block{provider.ToolUseBlock("toolu_1", "nika:read", json.RawMessage(`{"path":"a.txt"}`))}},
		{"several", `{"type":"message","role":"assistant","content":[
			{"type":"text","text":"Reading both."},
			{"type":"tool_use","id":"toolu_B","name":"mcp_fs_read_text_file","input":{"z":1,"a":12345678901234567890}},
			{"type":"tool_use","id":"toolu_A","name":"nika_read","input":{"path":"b"}},
			{"type":"tool_use","id":"toolu_C","name":"unknown_tool","input":{}}],
			"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			[]provider.Block{
				provider.TextBlock("Reading both."),
				provider.ToolUseBlock("toolu_B", "mcp:fs/read_text_file", json.RawMessage(`{"z":1,"a":12345678901234567890}`)),
				provider.ToolUseBlock("toolu_A", "nika:read", json.RawMessage(`{"path":"b"}`)),
				provider.ToolUseBlock("toolu_C", "unknown_tool", json.RawMessage(`{}`)),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := serve(t, 200, nil, tc.reply)
			r := ok(t, a.Exchange(context.Background(), provider.Request{
				Model: "anthropic/claude-sonnet-4-5", Messages: []provider.Message{provider.UserText("Read")}, Tools: tools,
			}))
			if r.StopReason != provider.StopToolUse {
				t.Errorf("stop = %q", r.StopReason)
			}
			got, _ := json.Marshal(r.Message.Blocks)
			want, _ := json.Marshal(tc.want)
			if !bytes.Equal(got, want) {
				t.Errorf("blocks:\n got %s\nwant %s", got, want)
			}
			if tc.name == "one" {
				body, _, _ := rec.last()
				golden(t, "tools", body)
			}
		})
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	req := provider.Request{
		Model: "anthropic/claude-sonnet-4-5", Tools: tools, MaxTokens: 1000,
		Messages: []provider.Message{
			provider.UserText("Read two files"),
			{Role: provider.RoleAssistant, Blocks: []provider.Block{
				provider.TextBlock("Reading."),
				provider.TextBlock("  "), // dropped: the wire rejects blank text
				provider.ToolUseBlock("toolu_A", "nika:read", json.RawMessage(`{"path":"a"}`)),
				provider.ToolUseBlock("toolu_B", "mcp:fs/read_text_file", json.RawMessage(`{"path":"b"}`)),
				provider.ToolUseBlock("toolu_C", "nika:read", nil),
			}},
			// Results split over two neutral user messages, with a text between them: one wire user
			// message, results first in request order, then the text.
			{Role: provider.RoleUser, Blocks: []provider.Block{
				provider.ToolResultBlock("toolu_A", "content of a", false),
				provider.TextBlock("note"),
				provider.ToolResultBlock("toolu_B", "not found", true),
			}},
			{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock("toolu_C", "", false)}},
		},
	}
	ok(t, a.Exchange(context.Background(), req))
	body, _, _ := rec.last()
	var wr struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Name      string `json:"name"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &wr); err != nil {
		t.Fatal(err)
	}
	if len(wr.Messages) != 3 || wr.Messages[2].Role != "user" {
		t.Fatalf("want 3 wire messages ending with one user message, got %s", body)
	}
	var order []string
	for _, c := range wr.Messages[2].Content {
		order = append(order, c.Type+":"+c.ToolUseID)
	}
	if got := strings.Join(order, ","); got != "tool_result:toolu_A,tool_result:toolu_B,tool_result:toolu_C,text:" {
		t.Errorf("user turn = %s", got)
	}
	if n := wr.Messages[1].Content[1].Name; n != "nika_read" {
		t.Errorf("wire name = %q", n)
	}
	golden(t, "tool_results", body)
}

func TestStructuredOutput(t *testing.T) {
	a, rec := serve(t, 200, nil, `{"type":"message","role":"assistant","content":[{"type":"text","text":"{\"ok\":true}"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}`)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
		"required": []any{"ok"}, "additionalProperties": false}
	r := ok(t, a.Exchange(context.Background(), provider.Request{
		Model: "anthropic/claude-sonnet-4-5", Messages: []provider.Message{provider.UserText("ok?")}, Schema: schema,
	}))
	if provider.Text(r.Message) != `{"ok":true}` {
		t.Errorf("text = %q", provider.Text(r.Message))
	}
	body, _, _ := rec.last()
	golden(t, "structured", body)
}

func TestThinkingReplay(t *testing.T) {
	a, rec := serve(t, 200, nil, `{"type":"message","role":"assistant","content":[
		{"type":"thinking","thinking":"hmm","signature":"sig=="},
		{"type":"redacted_thinking","data":"abc"},
		{"type":"tool_use","id":"toolu_1","name":"nika_read","input":{"path":"a"}}],"stop_reason":"tool_use"}`)
	req := provider.Request{Model: "anthropic/m", Tools: tools, Messages: []provider.Message{provider.UserText("go")}}
	r := ok(t, a.Exchange(context.Background(), req))
	if want := `{"anthropic":[{"type":"thinking","thinking":"hmm","signature":"sig=="},{"type":"redacted_thinking","data":"abc"}]}`; string(r.Message.ProviderData) != want {
		t.Errorf("provider data = %s", r.Message.ProviderData)
	}
	if len(r.Message.Blocks) != 1 {
		t.Errorf("blocks = %+v", r.Message.Blocks)
	}
	req.Messages = append(req.Messages, r.Message, provider.Message{Role: provider.RoleUser,
		Blocks: []provider.Block{provider.ToolResultBlock("toolu_1", "x", false)}})
	ok(t, a.Exchange(context.Background(), req))
	body, _, _ := rec.last()
	if !bytes.Contains(body, []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig=="},{"type":"redacted_thinking","data":"abc"},{"type":"tool_use"`)) {
		t.Errorf("thinking not replayed first: %s", body)
	}
}

func TestVersionHeader(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	a.Version = "2099-01-01"
	ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("x")}}))
	if _, hdr, _ := rec.last(); hdr.Get("anthropic-version") != "2099-01-01" {
		t.Errorf("version = %q", hdr.Get("anthropic-version"))
	}
}

func TestNew(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if _, err := New(env(nil), nil); err == nil || !strings.Contains(err.Error(), "NIKA_ANTHROPIC_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	a, err := New(env(map[string]string{"ANTHROPIC_API_KEY": "k2"}), nil)
	if err != nil || a.Key != "k2" || a.BaseURL != DefaultBaseURL || a.Version != DefaultVersion {
		t.Errorf("fallback: %+v %v", a, err)
	}
	a, err = New(env(map[string]string{"NIKA_ANTHROPIC_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2",
		"NIKA_ANTHROPIC_BASE_URL": "http://x/", "NIKA_ANTHROPIC_VERSION": "v9"}), http.DefaultClient)
	if err != nil || a.Key != "k1" || a.BaseURL != "http://x" || a.Version != "v9" || a.Client != http.DefaultClient {
		t.Errorf("override: %+v %v", a, err)
	}
}

func errBody(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		hdr       map[string]string
		body      string
		reason    string
		retry     any
		transient bool
	}{
		{"400", 400, nil, errBody("invalid_request_error", "messages: text content blocks must be non-empty"), provider.ReasonBadRequest, nil, false},
		{"400 credit", 400, nil, errBody("invalid_request_error", "Your credit balance is too low"), provider.ReasonQuotaExceeded, nil, false},
		{"401", 401, nil, errBody("authentication_error", "invalid x-api-key sk-ant-secret"), provider.ReasonAuthFailed, nil, false},
		{"403", 403, nil, errBody("permission_error", "no"), provider.ReasonAuthFailed, nil, false},
		{"404", 404, nil, errBody("not_found_error", "model: claude-x"), provider.ReasonModelNotFound, nil, false},
		{"413 not json", 413, nil, `<html>too large</html>`, provider.ReasonBadRequest, nil, false},
		{"429", 429, nil, errBody("rate_limit_error", "slow down"), provider.ReasonRateLimited, nil, true},
		{"429 retry-after seconds", 429, map[string]string{"Retry-After": "7"}, errBody("rate_limit_error", "slow down"), provider.ReasonRateLimited, int64(7000), true},
		{"429 retry-after float", 429, map[string]string{"Retry-After": "1.5"}, errBody("rate_limit_error", "x"), provider.ReasonRateLimited, int64(1500), true},
		{"429 retry-after-ms first", 429, map[string]string{"Retry-After-Ms": "250.2", "Retry-After": "7"}, errBody("rate_limit_error", "x"), provider.ReasonRateLimited, int64(251), true},
		{"429 retry-after date", 429, map[string]string{"Retry-After": "Fri, 23 Jan 2026 07:42:01 GMT"}, errBody("rate_limit_error", "x"), provider.ReasonRateLimited, int64(3000), true},
		{"429 spend cap", 429, nil, errBody("rate_limit_error", "You have reached your specified API usage limits"), provider.ReasonQuotaExceeded, nil, false},
		{"500", 500, nil, errBody("api_error", "Internal server error"), provider.ReasonServerError, nil, true},
		{"502 empty", 502, nil, ``, provider.ReasonServerError, nil, true},
		{"504", 504, nil, errBody("timeout_error", "t"), provider.ReasonTimeout, nil, true},
		{"529", 529, map[string]string{"retry-after": "2"}, errBody("overloaded_error", "Overloaded"), provider.ReasonServerError, int64(2000), true},
		{"200 error body", 200, nil, errBody("overloaded_error", "Overloaded"), provider.ReasonServerError, nil, true},
		{"200 malformed", 200, nil, `{"type":"message","content":[`, provider.ReasonServerError, nil, true},
		{"200 bad tool input", 200, nil, `{"type":"message","content":[{"type":"tool_use","id":"t","name":"x","input":[1]}],"stop_reason":"tool_use"}`, provider.ReasonServerError, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := serve(t, tc.status, tc.hdr, tc.body)
			a.now = func() time.Time { return time.Date(2026, 1, 23, 7, 41, 58, 0, time.UTC) }
			out := a.Exchange(context.Background(), provider.Request{Model: "anthropic/claude-x", Messages: []provider.Message{provider.UserText("x")}})
			if out.Response != nil || out.Err == nil {
				t.Fatalf("want a failure, got %+v", out.Response)
			}
			e := out.Err
			d := e.Details
			if e.Code != spec.CodeInferProvider || d["reason"] != tc.reason || d["status"] != tc.status ||
				d["retry_after_ms"] != tc.retry || e.Transient != tc.transient || d["provider"] != "anthropic" || d["model"] != "anthropic/claude-x" {
				t.Errorf("got %s %v transient=%v", e.Code, d, e.Transient)
			}
			if strings.Contains(e.Error(), "sk-ant-secret") {
				t.Errorf("key leaked: %v", e)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	req := provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("x")}}
	check := func(t *testing.T, out provider.Outcome, reason string, status any) {
		t.Helper()
		if out.Err == nil {
			t.Fatalf("want a failure")
		}
		if d := out.Err.Details; d["reason"] != reason || d["status"] != status {
			t.Errorf("details = %v", d)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		a := &Adapter{BaseURL: srv.URL, Key: "k", Client: srv.Client()}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		check(t, a.Exchange(ctx, req), provider.ReasonTimeout, nil)
		c := *srv.Client()
		c.Timeout = 50 * time.Millisecond
		a.Client = &c
		check(t, a.Exchange(context.Background(), req), provider.ReasonTimeout, nil)
	})
	t.Run("cancelled", func(t *testing.T) {
		a, _ := serve(t, 200, nil, textReply)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		check(t, a.Exchange(ctx, req), provider.ReasonCancelled, nil)
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		a := &Adapter{BaseURL: url, Key: "k"}
		check(t, a.Exchange(context.Background(), req), provider.ReasonNetwork, nil)
	})
	t.Run("closed mid-body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-length", "1000")
			w.WriteHeader(200)
			io.WriteString(w, `{"type":"message","content":[`)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		a := &Adapter{BaseURL: srv.URL, Key: "k", Client: srv.Client()}
		check(t, a.Exchange(context.Background(), req), provider.ReasonNetwork, 200)
	})
	t.Run("bad model", func(t *testing.T) {
		a := &Adapter{BaseURL: "http://127.0.0.1:1", Key: "k"}
		check(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/"}), provider.ReasonBadRequest, nil)
	})
}

func TestToolChoiceAndFormat(t *testing.T) {
	for _, tc := range []struct {
		name, system, choice, format string
		tools                        []provider.ToolDef
		wantChoice, wantSystem       string // compact JSON; "" → field absent
	}{
		{"default", "Be brief.", "", "", tools, "", `"Be brief."`},
		{"text", "", "", "text", tools, "", ""},
		{"auto", "", "auto", "", tools, `{"type":"auto"}`, ""},
		{"none", "", "none", "", tools, `{"type":"none"}`, ""},
		{"required", "", "required", "", tools, `{"type":"any"}`, ""},
		{"named", "", "tool:mcp:fs/read_text_file", "", tools, `{"type":"tool","name":"mcp_fs_read_text_file"}`, ""},
		{"none without tools", "", "none", "", nil, "", ""},
		{"json", "", "", "json", nil, "", `"` + JSONInstruction + `"`},
		{"json with system", "Be brief.", "", "json", nil, "", `"Be brief.\n\n` + JSONInstruction + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := serve(t, 200, nil, textReply)
			ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/claude-sonnet-4-5", System: tc.system,
				Messages: []provider.Message{provider.UserText("Hi")}, Tools: tc.tools, ToolChoice: tc.choice, Format: tc.format}))
			body, _, _ := rec.last()
			var f map[string]json.RawMessage
			if err := json.Unmarshal(body, &f); err != nil {
				t.Fatal(err)
			}
			if got := string(f["tool_choice"]); got != tc.wantChoice {
				t.Errorf("tool_choice = %s, want %s", got, tc.wantChoice)
			}
			if got := string(f["system"]); got != tc.wantSystem {
				t.Errorf("system = %s, want %s", got, tc.wantSystem)
			}
			if _, has := f["output_config"]; has {
				t.Errorf("unexpected output_config: %s", body)
			}
		})
	}
}

func TestSchemaWinsOverFormat(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/claude-sonnet-4-5",
		Messages: []provider.Message{provider.UserText("Hi")}, Schema: map[string]any{"type": "object"}, Format: "json"}))
	body, _, _ := rec.last()
	if strings.Contains(string(body), JSONInstruction) || !strings.Contains(string(body), `"output_config"`) {
		t.Errorf("body = %s", body)
	}
}

func TestToolChoiceBadRequest(t *testing.T) {
	for _, req := range []provider.Request{
		{ToolChoice: "sometimes", Tools: tools},
		{ToolChoice: "tool:nika:write", Tools: tools},
		{ToolChoice: "tool:nika:read"},
		{ToolChoice: "required"},
		{Format: "yaml"},
	} {
		a, rec := serve(t, 200, nil, textReply)
		req.Model = "anthropic/claude-sonnet-4-5"
		req.Messages = []provider.Message{provider.UserText("Hi")}
		out := a.Exchange(context.Background(), req)
		if out.Err == nil || out.Err.Details["reason"] != provider.ReasonBadRequest || out.Err.Details["status"] != nil {
			t.Errorf("%+v: got %v", req, out.Err)
		}
		if _, _, path := rec.last(); path != "" {
			t.Errorf("%+v: a request was sent", req)
		}
	}
}

// Native structured output and extended thinking are model capabilities on this wire.
func TestCapabilities(t *testing.T) {
	a := &Adapter{}
	for _, tt := range []struct {
		model          string
		schema, thinks bool
	}{
		{"anthropic/claude-sonnet-4-5", true, true},
		{"anthropic/claude-haiku-4-5-20251001", true, true},
		{"anthropic/claude-opus-4-6", true, true},
		{"anthropic/claude-opus-5", true, true},
		{"anthropic/claude-opus-4-1", false, true},
		{"anthropic/claude-sonnet-4-20250514", false, true},
		{"anthropic/claude-3-7-sonnet-20250219", false, true},
		{"anthropic/claude-3-5-haiku-latest", false, false},
		{"anthropic/claude-test", false, false},
	} {
		if got := a.SupportsSchema(tt.model); got != tt.schema {
			t.Errorf("%s: SupportsSchema = %v", tt.model, got)
		}
		if got := a.SupportsThinking(tt.model); got != tt.thinks {
			t.Errorf("%s: SupportsThinking = %v", tt.model, got)
		}
	}
}

// Thinking: the budget (raised to the wire's minimum) and a max_tokens above it; left out for a
// model without thinking.
func TestThinkingRequest(t *testing.T) {
	for _, tt := range []struct {
		model            string
		budget, maxTok   int
		wantThink, wantM string
	}{
		{"anthropic/claude-sonnet-4-5", 3000, 0, `{"type":"enabled","budget_tokens":3000}`, "7096"},
		{"anthropic/claude-sonnet-4-5", 100, 0, `{"type":"enabled","budget_tokens":1024}`, "5120"},
		{"anthropic/claude-sonnet-4-5", 3000, 9000, `{"type":"enabled","budget_tokens":3000}`, "9000"},
		{"anthropic/claude-3-5-haiku-latest", 3000, 0, ``, "4096"},
	} {
		a, rec := serve(t, 200, nil, textReply)
		ok(t, a.Exchange(context.Background(), provider.Request{Model: tt.model, MaxTokens: tt.maxTok,
			Thinking: &provider.Thinking{BudgetTokens: tt.budget}, Messages: []provider.Message{provider.UserText("x")}}))
		body, _, _ := rec.last()
		var f map[string]json.RawMessage
		if err := json.Unmarshal(body, &f); err != nil {
			t.Fatal(err)
		}
		if string(f["thinking"]) != tt.wantThink || string(f["max_tokens"]) != tt.wantM {
			t.Errorf("%s budget %d: thinking %s max_tokens %s", tt.model, tt.budget, f["thinking"], f["max_tokens"])
		}
	}
}

// Arguments that are not a JSON object go back as {} (tool_use.input must be an object), and a
// 404 with a base URL ending in /v1 hints at it; errors name the URL tried.
func TestReplayArgumentsAndWhere(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("go"),
		{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.ToolUseBlock("c1", "nika:read", json.RawMessage(`"{path: a"`))}},
		{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock("c1", "not JSON", true)}}}}))
	body, _, _ := rec.last()
	if !bytes.Contains(body, []byte(`"type":"tool_use","id":"c1","name":"nika_read","input":{}`)) {
		t.Errorf("body %s", body)
	}
	a, _ = serve(t, 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`)
	base := a.BaseURL
	a.BaseURL += "/v1"
	out := a.Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("x")}})
	want := "anthropic: POST " + base + "/v1/v1/messages: HTTP 404 not_found_error: Not Found — the base URL " + base +
		"/v1 ends in /v1, which nika adds itself: set NIKA_ANTHROPIC_BASE_URL to " + base
	if out.Err == nil || out.Err.Message != want {
		t.Errorf("message %q\nwant %q", out.Err.Message, want)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	out = (&Adapter{BaseURL: dead, Key: "sk-ant-long-key"}).Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{provider.UserText("x")}})
	if out.Err == nil || !strings.HasPrefix(out.Err.Message, "anthropic: POST "+dead+"/v1/messages: request failed (network): ") {
		t.Errorf("message %q", out.Err.Message)
	}
}

// Vision: an image block is a base64 image source, in block order.
func TestImageBlock(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	ok(t, a.Exchange(context.Background(), provider.Request{Model: "anthropic/m", Messages: []provider.Message{
		{Role: provider.RoleUser, Blocks: []provider.Block{provider.ImageBlock("image/gif", []byte("GIF89a")), provider.TextBlock("what?")}}}}))
	body, _, _ := rec.last()
	if !bytes.Contains(body, []byte(`"content":[{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}},{"type":"text","text":"what?"}]`)) {
		t.Errorf("body %s", body)
	}
}
