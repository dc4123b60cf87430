package main

// Issue 16's acceptance item "an agent killed mid-loop: only the remaining model requests are
// sent", against the dev server (NIKA_TEMPORAL_DEVSERVER, see temporal_devserver_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/nikahq/nika/temporal"
)

// agentFailoverYAML: an agent that may fetch from the test's loopback tool server (an exact
// permits.net.http entry lets it past the SSRF floor).
const agentFailoverYAML = `nika: v1
workflow: agent-failover
model: openai/gpt-test
permits:
  net: { http: ["127.0.0.1"] }
  tools: ["nika:fetch"]
tasks:
  - id: work
    agent:
      prompt: "Fetch the page, then say what you did."
      tools: ["nika:fetch"]
      max_turns: 4
outputs:
  answer: ${{ tasks.work.output }}
`

// failoverModel is an OpenAI-compatible model (plain replies, NIKA_OPENAI_STREAM=0): turn 1
// (no tool result in the transcript yet) asks for one nika:fetch of url, turn 2 answers. It
// counts the requests of each turn and keeps turn 2's body.
type failoverModel struct {
	url   string
	mu    sync.Mutex
	turns map[int]int
	last  string // the body of the latest turn-2 request
}

func (m *failoverModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	turn := 1 + strings.Count(string(b), `"role":"tool"`)
	m.mu.Lock()
	m.turns[turn]++
	if turn == 2 {
		m.last = string(b)
	}
	m.mu.Unlock()
	if turn == 1 {
		args, _ := json.Marshal(fmt.Sprintf(`{"url":%q}`, m.url))
		fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"fetching","tool_calls":[
 {"id":"call_1","type":"function","function":{"name":"nika_fetch","arguments":%s}}]}}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`, args)
		return
	}
	io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"fetched"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}`)
}

// The agent's worker is SIGKILLed while its one tool call (nika:fetch, an activity of its own)
// is in flight, the turn-1 model request (another activity) recorded: the tool call is
// dispatched again to the other worker, so the model gets exactly one turn-1 request and one
// turn-2 request (only the remaining ones), the in-flight tool call is made again (at least
// once), and the run ends as a local one would.
func TestDevserverAgentWorkerKilledMidLoop(t *testing.T) {
	devserverBinary(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.nika.yaml"), agentFailoverYAML)

	// The tool server: the first request signals its arrival and is never answered (it waits for
	// its client, the killed worker, to go away); the next ones get the page.
	arrived := make(chan struct{})
	var toolMu sync.Mutex
	toolCalls := 0
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolMu.Lock()
		toolCalls++
		n := toolCalls
		toolMu.Unlock()
		if n == 1 {
			close(arrived)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "the page on its second asking")
	}))
	defer tool.Close()
	model := &failoverModel{url: tool.URL + "/page", turns: map[int]int{}}
	ms := httptest.NewServer(model)
	defer ms.Close()
	env := []string{"OPENAI_BASE_URL=" + ms.URL + "/v1", "OPENAI_API_KEY=sk-test", "NIKA_OPENAI_STREAM=0"}

	addr := startDevServer(t, dir)
	a, logsA := startWorker(t, dir, addr, "nika", env...) // alone: the agent's job runs on it
	run := exec.Command(nikaBin, "run", "--temporal", addr, "--heartbeat-timeout", "2s", "a.nika.yaml", "--quiet", "--no-trace")
	run.Dir, run.Env = dir, append(append([]string{}, testEnv...), env...)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	var runErr error
	go func() { runErr = run.Wait(); close(ended) }()
	defer func() { // a test that fails early stops the run
		select {
		case <-ended:
		default:
			run.Process.Kill()
			<-ended
		}
	}()
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("the tool call never arrived\nworker A:\n%s", logsA)
	}

	// The agent core runs in the workflow: the turn-1 model request was an activity of its own,
	// already recorded, and the one in flight is the tool call's.
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietTemporalLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitPendingActivity(ctx, c, temporal.AgentCallActivity); err != nil {
		t.Fatalf("%v\nworker A:\n%s", err, logsA)
	}

	_, logsB := startWorker(t, dir, addr, "nika", env...)
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end\nworker A:\n%s\nworker B:\n%s", logsA, logsB)
	}
	if err := runErr; err != nil || stdout.String() != `{"answer":"fetched"}`+"\n" {
		t.Fatalf("the run: %v, stdout %q, stderr %s\nworker A:\n%s\nworker B:\n%s", err, stdout.String(), stderr.String(), logsA, logsB)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.turns[1] != 1 || model.turns[2] != 1 || len(model.turns) != 2 {
		t.Errorf("model requests by turn %v, want one of turn 1 and one of turn 2 (only the remaining requests sent again)", model.turns)
	}
	if !strings.Contains(model.last, "the page on its second asking") {
		t.Errorf("turn 2 was not given the tool's answer: %s", model.last)
	}
	toolMu.Lock()
	defer toolMu.Unlock()
	if toolCalls != 2 {
		t.Errorf("the tool was called %d times, want twice (the call in flight on the killed worker, again on the other)", toolCalls)
	}
}

// waitPendingActivity polls the one open run until the activity it waits on is of type name.
func waitPendingActivity(ctx context.Context, c client.Client, name string) error {
	var last []string
	for {
		list, err := c.ListOpenWorkflow(ctx, &workflowservice.ListOpenWorkflowExecutionsRequest{Namespace: "default", MaximumPageSize: 10})
		if err == nil && len(list.Executions) == 1 {
			ex := list.Executions[0].Execution
			d, err := c.DescribeWorkflowExecution(ctx, ex.WorkflowId, ex.RunId)
			if err == nil {
				last = last[:0]
				for _, pa := range d.PendingActivities {
					if pa.ActivityType.GetName() == name {
						return nil
					}
					last = append(last, pa.ActivityType.GetName())
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the run never waited on a %s activity (last seen: %v, list error %v)", name, last, err)
		case <-time.After(50 * time.Millisecond): // the poll's pace, not a synchronisation
		}
	}
}
