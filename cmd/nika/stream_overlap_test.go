package main

import (
	"bufio"
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

	"github.com/nikahq/nika/event"
)

// streamingOpenAI is an OpenAI-compatible server that answers a three-turn agent the same way
// whether it is asked for a stream or not: turn 1 asks for four tools (a failing jq and an
// unknown tool among them), turn 2 for two more, turn 3 answers in prose. Streamed, the text and
// every argument come in pieces of 3 bytes, call k+1 starting right after call k's arguments, and
// usage in the include_usage chunk. It records, per request, whether it streamed and what the
// model was given (messages and tools), the transcript the determinism test compares.
type streamingOpenAI struct {
	mu       sync.Mutex
	streamed []bool
	seen     []string
}

type wireCall struct{ id, name, args string }

func (s *streamingOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	turn := strings.Count(string(b), `"role":"assistant"`)
	seen, _ := json.Marshal(map[string]any{"messages": req.Messages, "tools": req.Tools})
	s.mu.Lock()
	s.streamed = append(s.streamed, req.Stream)
	s.seen = append(s.seen, string(seen))
	s.mu.Unlock()
	var text string
	var calls []wireCall
	switch turn {
	case 0:
		text = "Hashing four things."
		calls = []wireCall{
			{"call_a", "nika_hash", `{"content":"alpha"}`},
			{"call_b", "nika_jq", `{"expression":".[","input":1}`},
			{"call_c", "nika_hash", `{"content":"βeta — ünïcode","algo":"sha512"}`},
			{"call_d", "nika_nothing", `{}`},
		}
	case 1:
		calls = []wireCall{
			{"call_e", "nika_jq", `{"expression":". + 1","input":41}`},
			{"call_f", "nika_hash", `{"content":"gamma"}`},
		}
	default:
		text = "All done."
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d}`, 10+turn, 5+len(calls))
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if !req.Stream {
		var tc []string
		for _, c := range calls {
			a, _ := json.Marshal(c.args)
			tc = append(tc, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, c.id, c.name, a))
		}
		content, _ := json.Marshal(text)
		msg := fmt.Sprintf(`{"role":"assistant","content":%s`, content)
		if len(tc) > 0 {
			msg += `,"tool_calls":[` + strings.Join(tc, ",") + `]`
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":%s},"finish_reason":%q}],"usage":%s}`, msg, finish, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta string) {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
	}
	chunk(`{"role":"assistant"}`)
	io.WriteString(w, ": keep-alive\n\n")
	for _, p := range pieces(text, 3) {
		c, _ := json.Marshal(p)
		chunk(fmt.Sprintf(`{"content":%s}`, c))
	}
	for k, c := range calls {
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, k, c.id, c.name))
		for _, p := range pieces(c.args, 3) {
			a, _ := json.Marshal(p)
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, k, a))
		}
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", usage)
}

// pieces cuts s into pieces of n bytes, never inside a character ("" is no piece).
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		i := min(n, len(s))
		for i < len(s) && i > 0 && s[i]&0xC0 == 0x80 {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// Issue 17 acceptance: through the nika binary against a local SSE server, the canonical trace
// and the transcript the model is given are the same streamed (the default) and not
// (NIKA_OPENAI_STREAM=0), for --max-parallel-tools 1, 2 and 8; the agent admits every tool, so
// its streamed turns start their calls while the reply is still being written.
func TestRunStreamedAgentSameTraceAsPlain(t *testing.T) {
	const flow = `nika: v1
workflow: overlap
tasks:
  - id: a
    agent: { prompt: "Hash what you are asked to.", model: openai/gpt-test, tools: ["**"], max_turns: 5 }
`
	type run struct {
		trace, transcript string
	}
	do := func(t *testing.T, par, stream string) run {
		t.Helper()
		fake := &streamingOpenAI{}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "flow.nika.yaml"), []byte(flow), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"NIKA_OPENAI_BASE_URL=" + srv.URL + "/v1", "NIKA_OPENAI_API_KEY=sk-test", "NIKA_OPENAI_STREAM=" + stream}
		r := runBinaryEnv(t, dir, env, "run", "flow.nika.yaml", "--max-parallel-tools", par, "--trace", "trace.ndjson", "--no-progress")
		if r.code != 0 {
			t.Fatalf("P=%s stream=%s: exit %d\nstdout %s\nstderr %s", par, stream, r.code, r.stdout, r.stderr)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		for i, s := range fake.streamed {
			if s != (stream == "1") {
				t.Fatalf("P=%s stream=%s: request %d streamed %v", par, stream, i, s)
			}
		}
		f, err := os.Open(filepath.Join(dir, "trace.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			d, err := event.Deterministic(sc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(d))
		}
		return run{trace: strings.Join(lines, "\n"), transcript: strings.Join(fake.seen, "\n")}
	}
	for _, par := range []string{"1", "2", "8"} {
		t.Run("P="+par, func(t *testing.T) {
			plain, streamed := do(t, par, "0"), do(t, par, "1")
			if streamed.trace != plain.trace {
				t.Errorf("canonical traces differ:\n--- streamed ---\n%s\n--- plain ---\n%s", streamed.trace, plain.trace)
			}
			if streamed.transcript != plain.transcript {
				t.Errorf("transcripts differ:\n--- streamed ---\n%s\n--- plain ---\n%s", streamed.transcript, plain.transcript)
			}
			if strings.Count(plain.trace, `"kind":"tool_invoked"`) != 6 || !strings.Contains(plain.trace, `"code":"NIKA-INVOKE-001"`) {
				t.Errorf("the trace lacks the six tool calls:\n%s", plain.trace)
			}
		})
	}
}
