package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeWire is a local server speaking one provider wire; it records the
// request bodies and headers it got.
type fakeWire struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (f *fakeWire) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	f.mu.Lock()
	f.bodies = append(f.bodies, m)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
}

func runCloud(t *testing.T, model string, env ...string) (result, string) {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "cloud.nika.yaml"), filepath.Join(dir, "cloud.nika.yaml"))
	cmd := exec.Command(nikaBin, "run", "cloud.nika.yaml", "--no-trace", "--model", model, "--report", "report.json")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	rep, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	return result{code: code, stdout: out.String(), stderr: errb.String()}, string(rep)
}

// `nika run` on an openai/<name> model talks to a local OpenAI-compatible
// server through OPENAI_BASE_URL; the key goes in the header and nowhere
// else.
func TestRunOpenAICompatible(t *testing.T) {
	f := &fakeWire{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, nika!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":4}}`)
	}))
	defer srv.Close()
	r, rep := runCloud(t, "openai/gpt-test", "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-test-secret-123")
	if r.code != 0 || r.stdout != `{"answer":"Hello, nika!"}`+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if len(f.bodies) != 1 || f.bodies[0]["model"] != "gpt-test" || f.headers[0].Get("Authorization") != "Bearer sk-test-secret-123" {
		t.Errorf("request = %v %v", f.bodies, f.headers)
	}
	msgs, _ := f.bodies[0]["messages"].([]any)
	if len(msgs) != 1 || !strings.Contains(string(mustJSON(msgs[0])), "Say hello to nika.") {
		t.Errorf("messages = %v", msgs)
	}
	if !strings.Contains(rep, `"openai/gpt-test":{"input_tokens":12,"output_tokens":4,"requests":1,"unreported":0}`) {
		t.Errorf("report usage: %s", rep)
	}
	if strings.Contains(rep+r.stderr, "sk-test-secret-123") {
		t.Error("the key leaked into the report or stderr")
	}
}

// The same for anthropic/<name> through NIKA_ANTHROPIC_BASE_URL.
func TestRunAnthropic(t *testing.T) {
	f := &fakeWire{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hi nika"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3}}`)
	}))
	defer srv.Close()
	r, _ := runCloud(t, "anthropic/claude-test", "NIKA_ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=ak-test-secret")
	if r.code != 0 || r.stdout != `{"answer":"Hi nika"}`+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if len(f.headers) != 1 || f.headers[0].Get("x-api-key") != "ak-test-secret" || f.headers[0].Get("anthropic-version") != "2023-06-01" {
		t.Errorf("headers = %v", f.headers)
	}
}

// A missing key refuses the run with exit 3 before any request, naming
// the variable.
func TestRunMissingKey(t *testing.T) {
	f := &fakeWire{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.record(r) }))
	defer srv.Close()
	r, _ := runCloud(t, "openai/gpt-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "OPENAI_API_KEY") {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if len(f.bodies) != 0 {
		t.Error("a request was sent without a key")
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
