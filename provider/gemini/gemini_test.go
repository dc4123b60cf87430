package gemini

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

const secret = "AIza-secret-key"

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
		rec.body, rec.header, rec.path = b, r.Header.Clone(), r.Method+" "+r.URL.EscapedPath()
		rec.mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("content-type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return &Adapter{BaseURL: srv.URL, Key: secret, Client: srv.Client()}, rec
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
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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

func blocksJSON(bs []provider.Block) string {
	b, _ := json.Marshal(bs)
	return string(b)
}

const textReply = `{
  "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello"}, {"text": " world"}]},
    "finishReason": "STOP", "index": 0,
    "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]}],
  "usageMetadata": {"promptTokenCount": 113, "candidatesTokenCount": 55, "thoughtsTokenCount": 24, "totalTokenCount": 192},
  "modelVersion": "gemini-2.5-flash", "responseId": "abc"
}`

func TestPlainText(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	temp := 0.2
	r := ok(t, a.Exchange(context.Background(), provider.Request{
		Model: "gemini/gemini-2.5-flash", System: "Answer briefly.", Temperature: &temp, MaxTokens: 1024,
		Messages: []provider.Message{provider.UserText("Hi")},
	}))
	if got := provider.Text(r.Message); got != "Hello world" || len(r.Message.Blocks) != 2 {
		t.Errorf("text = %q, blocks %d", got, len(r.Message.Blocks))
	}
	if r.Message.Role != provider.RoleAssistant || r.StopReason != provider.StopEndTurn {
		t.Errorf("role %q stop %q", r.Message.Role, r.StopReason)
	}
	if r.Usage != (provider.Usage{InputTokens: 113, OutputTokens: 79, Reported: true}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	body, hdr, path := rec.last()
	if path != "POST /v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path = %q", path)
	}
	if hdr.Get("x-goog-api-key") != secret || hdr.Get("content-type") != "application/json" {
		t.Errorf("headers = %v", hdr)
	}
	golden(t, "plain_text", body)
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        provider.Usage
		stop        string
	}{
		{"absent", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}]}`,
			provider.Usage{}, provider.StopMaxTokens},
		{"zero counts omitted", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"OTHER"}],
			"usageMetadata":{"promptTokenCount":7,"toolUsePromptTokenCount":2,"totalTokenCount":9}}`,
			provider.Usage{InputTokens: 9, Reported: true}, provider.StopUnknown},
		{"no finish reason", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]}}],"usageMetadata":{}}`,
			provider.Usage{Reported: true}, provider.StopUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := serve(t, 200, nil, tc.reply)
			r := ok(t, a.Exchange(context.Background(), provider.Request{Model: "gemini/m", Messages: []provider.Message{provider.UserText("Hi")}}))
			if r.Usage != tc.want || r.StopReason != tc.stop {
				t.Errorf("usage %+v stop %q", r.Usage, r.StopReason)
			}
		})
	}
}

var tools = []provider.ToolDef{
	{Name: "nika:read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
	{Name: "mcp:fs/read_text_file", Description: "Read text", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "9lives", Description: "", Parameters: nil},
}

func TestToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		want  string
	}{
		{"one", `{"candidates":[{"content":{"role":"model","parts":[
			{"functionCall":{"name":"nika_read","args":{"path":"a.txt"}},"thoughtSignature":"CiQBsig=="}]},
			"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}`,
			`[{"type":"tool_use","id":"gemini-call-1-0","name":"nika:read","input":{"path":"a.txt"},"provider_data":{"gemini":{"thoughtSignature":"CiQBsig==","localId":true}}}]`},
		{"several", `{"candidates":[{"content":{"role":"model","parts":[
			{"text":"Reading both."},
			{"functionCall":{"id":"fc1","name":"mcp_fs_read_text_file","args":{"z":1,"a":12345678901234567890}},"thoughtSignature":"sigA"},
			{"functionCall":{"id":"fc2","name":"nika_read","args":{"path":"b"}}},
			{"functionCall":{"name":"f9lives"}},
			{"functionCall":{"name":"unknown_tool","args":{}}}]},
			"finishReason":"STOP"}]}`,
			`[{"type":"text","text":"Reading both."},` +
				`{"type":"tool_use","id":"fc1","name":"mcp:fs/read_text_file","input":{"z":1,"a":12345678901234567890},"provider_data":{"gemini":{"thoughtSignature":"sigA"}}},` +
				`{"type":"tool_use","id":"fc2","name":"nika:read","input":{"path":"b"}},` +
				`{"type":"tool_use","id":"gemini-call-1-2","name":"9lives","input":{},"provider_data":{"gemini":{"localId":true}}},` +
				`{"type":"tool_use","id":"gemini-call-1-3","name":"unknown_tool","input":{},"provider_data":{"gemini":{"localId":true}}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := serve(t, 200, nil, tc.reply)
			r := ok(t, a.Exchange(context.Background(), provider.Request{
				Model: "gemini/gemini-2.5-flash", Messages: []provider.Message{provider.UserText("Read")}, Tools: tools,
			}))
			if r.StopReason != provider.StopToolUse {
				t.Errorf("stop = %q", r.StopReason)
			}
			if got := blocksJSON(r.Message.Blocks); got != tc.want {
				t.Errorf("blocks:\n got %s\nwant %s", got, tc.want)
			}
			if tc.name == "one" {
				body, _, _ := rec.last()
				golden(t, "tools", body)
			}
		})
	}
}

// TestRoundTrip replays a reply with minted ids and a thought signature, then sends results out of
// order across two neutral user messages: one wire user turn, responses in call order, ids only where
// Gemini gave them, signature unchanged on its part.
func TestRoundTrip(t *testing.T) {
	a, rec := serve(t, 200, nil, `{"candidates":[{"content":{"role":"model","parts":[
		{"text":"Let me look.","thoughtSignature":"textSig"},
		{"thought":true,"text":"secret reasoning"},
		{"functionCall":{"name":"nika_read","args":{"path":"a"}},"thoughtSignature":"CiQB/verbatim+=="},
		{"functionCall":{"id":"fc2","name":"mcp_fs_read_text_file","args":{"path":"b"}}},
		{"functionCall":{"name":"nika_read","args":{"path":"c"}}},
		{"text":"","thoughtSignature":"trailing"}]},"finishReason":"STOP"}]}`)
	req := provider.Request{Model: "gemini/gemini-3-pro", Tools: tools, System: "Be terse.",
		Messages: []provider.Message{provider.UserText("Read three files")}}
	r := ok(t, a.Exchange(context.Background(), req))
	if provider.Text(r.Message) != "Let me look." || len(r.Message.Blocks) != 5 {
		t.Fatalf("blocks = %s", blocksJSON(r.Message.Blocks))
	}
	ids := []string{r.Message.Blocks[1].ID, r.Message.Blocks[2].ID, r.Message.Blocks[3].ID}
	if ids[0] != "gemini-call-1-0" || ids[1] != "fc2" || ids[2] != "gemini-call-1-2" {
		t.Fatalf("ids = %v", ids)
	}
	// Round-trip through JSON, as a stored transcript would.
	var stored provider.Message
	raw, _ := json.Marshal(r.Message)
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, stored,
		provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{
			provider.ToolResultBlock(ids[2], "content of c", false),
			provider.TextBlock("note"),
			provider.ToolResultBlock(ids[0], "content of a", false),
		}},
		provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock(ids[1], "not found", true)}},
	)
	ok(t, a.Exchange(context.Background(), req))
	body, _, _ := rec.last()
	var wr struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             *string `json:"text"`
				ThoughtSignature string  `json:"thoughtSignature"`
				FunctionCall     *struct {
					ID   *string `json:"id"`
					Name string  `json:"name"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					ID       *string        `json:"id"`
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &wr); err != nil {
		t.Fatal(err)
	}
	if len(wr.Contents) != 3 || wr.Contents[1].Role != "model" || wr.Contents[2].Role != "user" {
		t.Fatalf("want user, model, user turns: %s", body)
	}
	model := wr.Contents[1].Parts
	if len(model) != 5 || model[0].ThoughtSignature != "textSig" || model[1].ThoughtSignature != "CiQB/verbatim+==" ||
		model[1].FunctionCall.ID != nil || *model[2].FunctionCall.ID != "fc2" || model[2].ThoughtSignature != "" ||
		model[3].FunctionCall.ID != nil || model[4].ThoughtSignature != "trailing" || *model[4].Text != "" {
		t.Errorf("model turn replayed wrong: %s", body)
	}
	if bytes.Contains(body, []byte("secret reasoning")) || bytes.Contains(body, []byte("gemini-call")) {
		t.Errorf("thought text or minted id sent: %s", body)
	}
	var order []string
	for _, p := range wr.Contents[2].Parts {
		switch {
		case p.FunctionResponse != nil:
			id := "-"
			if p.FunctionResponse.ID != nil {
				id = *p.FunctionResponse.ID
			}
			order = append(order, p.FunctionResponse.Name+":"+id)
		case p.Text != nil:
			order = append(order, "text:"+*p.Text)
		}
	}
	if got := strings.Join(order, ","); got != "nika_read:-,mcp_fs_read_text_file:fc2,nika_read:-,text:note" {
		t.Errorf("user turn = %s", got)
	}
	if resp := wr.Contents[2].Parts[1].FunctionResponse.Response; resp["error"] != "not found" || len(resp) != 1 {
		t.Errorf("error response = %v", resp)
	}
	golden(t, "tool_results", body)
}

func TestUnknownToolResult(t *testing.T) {
	a, _ := serve(t, 200, nil, textReply)
	out := a.Exchange(context.Background(), provider.Request{Model: "gemini/m", Messages: []provider.Message{
		{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock("nope", "x", false)}}}})
	if out.Err == nil || provider.ReasonOf(out.Err) != provider.ReasonBadRequest {
		t.Errorf("want bad_request, got %v", out.Err)
	}
}

func TestStructuredOutput(t *testing.T) {
	a, rec := serve(t, 200, nil, `{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"ok\": true}"}]},"finishReason":"STOP"}],
		"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7}}`)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
		"required": []any{"ok"}, "additionalProperties": false}
	r := ok(t, a.Exchange(context.Background(), provider.Request{
		Model: "gemini/gemini-2.5-flash", Messages: []provider.Message{provider.UserText("ok?")}, Schema: schema,
	}))
	if provider.Text(r.Message) != `{"ok": true}` || !a.SupportsSchema("gemini/x") {
		t.Errorf("text = %q", provider.Text(r.Message))
	}
	body, _, _ := rec.last()
	golden(t, "structured", body)
}

func TestContentFilter(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"prompt blocked", `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":5}}`},
		{"reply blocked", `{"candidates":[{"finishReason":"SAFETY","index":0}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := serve(t, 200, nil, tc.reply)
			out := a.Exchange(context.Background(), provider.Request{Model: "gemini/m", Messages: []provider.Message{provider.UserText("x")}})
			if out.Err == nil || provider.ReasonOf(out.Err) != provider.ReasonContentFilter || out.Err.Transient {
				t.Errorf("want content_filter, got %v", out.Err)
			}
		})
	}
	a, _ := serve(t, 200, nil, `{"candidates":[{"content":{"role":"model","parts":[{"text":"partial"}]},"finishReason":"RECITATION"}]}`)
	r := ok(t, a.Exchange(context.Background(), provider.Request{Model: "gemini/m", Messages: []provider.Message{provider.UserText("x")}}))
	if r.StopReason != provider.StopContentFilter {
		t.Errorf("stop = %q", r.StopReason)
	}
}

func TestNew(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	_, err := New(env(nil), nil)
	if err == nil {
		t.Fatal("missing key: no error")
	}
	for _, v := range []string{"NIKA_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GOOGLE_API_KEY": "k3"}, "k3"},
		{map[string]string{"GOOGLE_API_KEY": "k3", "GEMINI_API_KEY": "k2"}, "k2"},
		{map[string]string{"GOOGLE_API_KEY": "k3", "GEMINI_API_KEY": "k2", "NIKA_GEMINI_API_KEY": "k1"}, "k1"},
		{map[string]string{"GOOGLE_API_KEY": "k3", "NIKA_GEMINI_API_KEY": " "}, "k3"},
	} {
		a, err := New(env(tc.env), nil)
		if err != nil || a.Key != tc.want || a.BaseURL != DefaultBaseURL {
			t.Errorf("%v: %+v %v", tc.env, a, err)
		}
	}
	a, err := New(env(map[string]string{"GEMINI_API_KEY": "k", "NIKA_GEMINI_BASE_URL": "http://x/"}), http.DefaultClient)
	if err != nil || a.BaseURL != "http://x" || a.Client != http.DefaultClient {
		t.Errorf("override: %+v %v", a, err)
	}
}

func gErr(code int, status, msg, details string) string {
	if details == "" {
		details = "[]"
	}
	return `{"error":{"code":` + jsonInt(code) + `,"message":` + jsonStr(msg) + `,"status":"` + status + `","details":` + details + `}}`
}

func jsonInt(n int) string    { b, _ := json.Marshal(n); return string(b) }
func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestErrors(t *testing.T) {
	const keyInvalid = `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]`
	const retryInfo = `[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
		{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"22s"}]`
	const daily = `[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3.957525076s"}]`
	for _, tc := range []struct {
		name      string
		status    int
		hdr       map[string]string
		body      string
		reason    string
		retry     any
		transient bool
	}{
		{"400 bad request", 400, nil, gErr(400, "INVALID_ARGUMENT", `Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[3].parameters': Cannot find field.`, ""), provider.ReasonBadRequest, nil, false},
		{"400 invalid key", 400, nil, gErr(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", keyInvalid), provider.ReasonAuthFailed, nil, false},
		{"400 invalid key array body", 400, nil, "[" + gErr(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key "+secret+".", "") + "]", provider.ReasonAuthFailed, nil, false},
		{"400 failed precondition", 400, nil, gErr(400, "FAILED_PRECONDITION", "User location is not supported for the API use.", ""), provider.ReasonBadRequest, nil, false},
		{"403", 403, nil, gErr(403, "PERMISSION_DENIED", "You do not have permission to access tuned model tunedModels/x.", ""), provider.ReasonAuthFailed, nil, false},
		{"404", 404, nil, gErr(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.", ""), provider.ReasonModelNotFound, nil, false},
		{"429 no delay", 429, nil, gErr(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", ""), provider.ReasonRateLimited, nil, true},
		{"429 retry info", 429, nil, gErr(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details. Please retry in 22.231358113s.", retryInfo), provider.ReasonRateLimited, int64(22000), true},
		{"429 message only", 429, nil, gErr(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota. Please retry in 1.5s.", ""), provider.ReasonRateLimited, int64(1500), true},
		{"429 header first", 429, map[string]string{"Retry-After": "7"}, gErr(429, "RESOURCE_EXHAUSTED", "x", retryInfo), provider.ReasonRateLimited, int64(7000), true},
		{"429 header date", 429, map[string]string{"Retry-After": "Fri, 23 Jan 2026 07:42:01 GMT"}, gErr(429, "RESOURCE_EXHAUSTED", "x", ""), provider.ReasonRateLimited, int64(3000), true},
		{"429 daily quota", 429, nil, gErr(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", daily), provider.ReasonQuotaExceeded, int64(3958), false},
		{"500", 500, nil, gErr(500, "INTERNAL", "An internal error has occurred.", ""), provider.ReasonServerError, nil, true},
		{"503", 503, nil, gErr(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ""), provider.ReasonServerError, nil, true},
		{"504", 504, nil, gErr(504, "DEADLINE_EXCEEDED", "Deadline exceeded", ""), provider.ReasonTimeout, nil, true},
		{"502 html", 502, nil, `<html><body>Bad Gateway</body></html>`, provider.ReasonServerError, nil, true},
		{"200 error body", 200, nil, gErr(503, "UNAVAILABLE", "overloaded", ""), provider.ReasonServerError, nil, true},
		{"200 malformed", 200, nil, `{"candidates":[{"content":`, provider.ReasonServerError, nil, true},
		{"200 no candidates", 200, nil, `{"usageMetadata":{"promptTokenCount":1}}`, provider.ReasonServerError, nil, true},
		{"200 bad args", 200, nil, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":[1]}}]},"finishReason":"STOP"}]}`, provider.ReasonServerError, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := serve(t, tc.status, tc.hdr, tc.body)
			a.now = func() time.Time { return time.Date(2026, 1, 23, 7, 41, 58, 0, time.UTC) }
			out := a.Exchange(context.Background(), provider.Request{Model: "gemini/gemini-x", Messages: []provider.Message{provider.UserText("x")}})
			if out.Response != nil || out.Err == nil {
				t.Fatalf("want a failure, got %+v", out.Response)
			}
			e := out.Err
			d := e.Details
			if e.Code != spec.CodeInferProvider || d["reason"] != tc.reason || d["status"] != tc.status ||
				d["retry_after_ms"] != tc.retry || e.Transient != tc.transient || d["provider"] != "gemini" || d["model"] != "gemini/gemini-x" {
				t.Errorf("got %s %v transient=%v", e.Code, d, e.Transient)
			}
			if strings.Contains(e.Error(), secret) {
				t.Errorf("key leaked: %v", e)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	req := provider.Request{Model: "gemini/m", Messages: []provider.Message{provider.UserText("x")}}
	check := func(t *testing.T, out provider.Outcome, reason string, status any) {
		t.Helper()
		if out.Err == nil {
			t.Fatalf("want a failure")
		}
		if d := out.Err.Details; d["reason"] != reason || d["status"] != status {
			t.Errorf("details = %v", d)
		}
		if strings.Contains(out.Err.Error(), secret) {
			t.Errorf("key leaked: %v", out.Err)
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
		a := &Adapter{BaseURL: srv.URL, Key: secret, Client: srv.Client()}
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
		a := &Adapter{BaseURL: url, Key: secret}
		check(t, a.Exchange(context.Background(), req), provider.ReasonNetwork, nil)
	})
	t.Run("closed mid-body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-length", "1000")
			w.WriteHeader(200)
			io.WriteString(w, `{"candidates":[{"content":`)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		a := &Adapter{BaseURL: srv.URL, Key: secret, Client: srv.Client()}
		check(t, a.Exchange(context.Background(), req), provider.ReasonNetwork, 200)
	})
	t.Run("bad model", func(t *testing.T) {
		a := &Adapter{BaseURL: "http://127.0.0.1:1", Key: secret}
		check(t, a.Exchange(context.Background(), provider.Request{Model: "gemini/"}), provider.ReasonBadRequest, nil)
	})
}

func TestToolChoiceAndFormat(t *testing.T) {
	for _, tc := range []struct {
		name, choice, format string
		tools                []provider.ToolDef
		wantToolConfig       string // compact JSON; "" → field absent
		wantGenConfig        string
	}{
		{"default", "", "", tools, "", ""},
		{"text", "", "text", tools, "", ""},
		{"auto", "auto", "", tools, `{"functionCallingConfig":{"mode":"AUTO"}}`, ""},
		{"none", "none", "", tools, `{"functionCallingConfig":{"mode":"NONE"}}`, ""},
		{"required", "required", "", tools, `{"functionCallingConfig":{"mode":"ANY"}}`, ""},
		{"named", "tool:mcp:fs/read_text_file", "", tools, `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["mcp_fs_read_text_file"]}}`, ""},
		{"named D45", "tool:9lives", "", tools, `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f9lives"]}}`, ""},
		{"auto without tools", "auto", "", nil, "", ""},
		{"json", "", "json", nil, "", `{"responseMimeType":"application/json"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := serve(t, 200, nil, textReply)
			ok(t, a.Exchange(context.Background(), provider.Request{Model: "gemini/gemini-2.5-flash",
				Messages: []provider.Message{provider.UserText("Hi")}, Tools: tc.tools, ToolChoice: tc.choice, Format: tc.format}))
			body, _, _ := rec.last()
			var f map[string]json.RawMessage
			if err := json.Unmarshal(body, &f); err != nil {
				t.Fatal(err)
			}
			if got := string(f["toolConfig"]); got != tc.wantToolConfig {
				t.Errorf("toolConfig = %s, want %s", got, tc.wantToolConfig)
			}
			if got := string(f["generationConfig"]); got != tc.wantGenConfig {
				t.Errorf("generationConfig = %s, want %s", got, tc.wantGenConfig)
			}
		})
	}
}

func TestSchemaWinsOverFormat(t *testing.T) {
	a, rec := serve(t, 200, nil, textReply)
	ok(t, a.Exchange(context.Background(), provider.Request{Model: "gemini/gemini-2.5-flash",
		Messages: []provider.Message{provider.UserText("Hi")}, Schema: map[string]any{"type": "object"}, Format: "json"}))
	body, _, _ := rec.last()
	if !strings.Contains(string(body), `"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}`) {
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
		req.Model = "gemini/gemini-2.5-flash"
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

// Thinking goes as generationConfig.thinkingConfig for Gemini 2.5 and later, and nowhere for
// older models; non-object arguments are replayed as {}; image blocks are inlineData.
func TestThinkingImagesAndArguments(t *testing.T) {
	for _, tt := range []struct {
		model  string
		thinks bool
	}{{"gemini/gemini-2.5-flash", true}, {"gemini/gemini-3-pro-preview", true}, {"gemini/gemini-2.0-flash", false}, {"gemini/gemini-1.5-pro", false}} {
		a, rec := serve(t, 200, nil, textReply)
		if got := a.SupportsThinking(tt.model); got != tt.thinks {
			t.Errorf("%s: SupportsThinking = %v", tt.model, got)
		}
		ok(t, a.Exchange(context.Background(), provider.Request{Model: tt.model, Thinking: &provider.Thinking{BudgetTokens: 777},
			Messages: []provider.Message{
				{Role: provider.RoleUser, Blocks: []provider.Block{provider.ImageBlock("image/png", []byte("PNG")), provider.TextBlock("go")}},
				{Role: provider.RoleAssistant, Blocks: []provider.Block{provider.ToolUseBlock("c1", "nika:read", json.RawMessage(`"{path: a"`))}},
				{Role: provider.RoleUser, Blocks: []provider.Block{provider.ToolResultBlock("c1", "not JSON", true)}}}}))
		body, _, _ := rec.last()
		if has := bytes.Contains(body, []byte(`"thinkingConfig":{"thinkingBudget":777}`)); has != tt.thinks {
			t.Errorf("%s: thinkingConfig sent %v: %s", tt.model, has, body)
		}
		for _, want := range []string{`{"inlineData":{"mimeType":"image/png","data":"UE5H"}},{"text":"go"}`, `"args":{}`} {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("%s: body lacks %s: %s", tt.model, want, body)
			}
		}
	}
}

// Errors name the URL tried; a 404 with a base URL ending in a version segment hints at it.
func TestErrorsNameURL(t *testing.T) {
	a, _ := serve(t, 404, nil, `{"error":{"code":404,"message":"not here","status":"NOT_FOUND"}}`)
	base := a.BaseURL
	a.BaseURL += "/v1beta"
	out := a.Exchange(context.Background(), provider.Request{Model: "gemini/g", Messages: []provider.Message{provider.UserText("x")}})
	want := "gemini: POST " + base + "/v1beta/v1beta/models/g:generateContent: HTTP 404 NOT_FOUND: not here — the base URL " + base +
		"/v1beta ends in a version segment, which nika adds itself (/v1beta): set NIKA_GEMINI_BASE_URL to " + base
	if out.Err == nil || out.Err.Message != want {
		t.Errorf("message %q\nwant %q", out.Err.Message, want)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	out = (&Adapter{BaseURL: dead, Key: "gm-long-key"}).Exchange(context.Background(), provider.Request{Model: "gemini/g", Messages: []provider.Message{provider.UserText("x")}})
	if out.Err == nil || !strings.HasPrefix(out.Err.Message, "gemini: POST "+dead+"/v1beta/models/g:generateContent: request failed (network): ") {
		t.Errorf("message %q", out.Err.Message)
	}
}
