package temporal

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	tw "go.temporal.io/sdk/workflow"
)

var (
	update    = flag.Bool("update", false, "record the replay histories of testdata/histories again, on the server of -temporal")
	hostPort  = flag.String("temporal", "127.0.0.1:7233", "HOST:PORT of the Temporal server -update records on")
	namespace = flag.String("namespace", "default", "the namespace -update records in")
	only      = flag.String("case", "", "the one case -update records (\"\": every case)")
)

// replayCases are the representative runs whose recorded histories must replay: retries with
// their timers, a fail-fast for_each, an agent batch (its core in the workflow), a gate answered
// by a signal. testdata/histories also keeps histories of earlier workflow code that runs in
// flight may still have (agent-batch-whole: the agent as one activity, before agent-core).
func replayCases() map[string]runCase {
	byName := map[string]runCase{}
	for _, rc := range scriptCases {
		byName[rc.name] = rc
	}
	return map[string]runCase{
		"retry":              byName["retry"],
		"for_each-fail-fast": byName["for_each-fail-fast"],
		"on_error":           byName["on_error"],
		"timeout":            byName["timeout"],
		"agent-batch":        {name: "agent", src: agentSrc, verbs: agentVerbs(8)},
		"gate": {name: "gate", src: head + `tasks:
  - id: ask
    invoke: { tool: "nika:prompt", args: { mode: input, message: "Name?" } }
  - id: greet
    depends_on: [ask]
    exec: { command: "echo hello ${{ tasks.ask.output }}" }
`},
	}
}

// TestReplayHistories replays every history of testdata/histories through the current workflow
// code with Temporal's replayer: a change that would break the runs in flight (a command added,
// dropped or reordered) fails it. `go test ./temporal -run Replay -update [-temporal HOST:PORT] [-namespace N]`
// records them again (-case NAME: only that one) on a real server (the dev server of issue 16 item 4, or any Temporal).
func TestReplayHistories(t *testing.T) {
	if *update {
		for name, rc := range replayCases() {
			if *only != "" && name != *only {
				continue
			}
			record(t, name, rc)
		}
	}
	files, err := filepath.Glob("testdata/histories/*.json")
	if err != nil || len(files) < len(replayCases()) {
		t.Fatalf("%d histories for %d cases (%v): record them with -update", len(files), len(replayCases()), err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			hist, err := client.HistoryFromJSON(bytes.NewReader(b), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Run, tw.RegisterOptions{Name: WorkflowName})
			if err := r.ReplayWorkflowHistory(quiet(), hist); err != nil {
				t.Errorf("the history no longer replays: %v", err)
			}
		})
	}
}

// record runs one case on the server and writes its history.
func record(t *testing.T, name string, rc runCase) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: *hostPort, Namespace: *namespace, Logger: quiet()})
	if err != nil {
		t.Fatalf("-update needs a Temporal server at %s: %v", *hostPort, err)
	}
	defer c.Close()
	dir := t.TempDir()
	eng := rc.engine(t, dir)
	verbs, release := eng.ActivityVerbs()
	defer release()
	queue := "nika-replay-" + name
	w := worker.New(c, queue, worker.Options{})
	Register(w, &Activities{Verbs: verbs})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in := rc.input(t, eng, dir)
	in.RunID = "r-" + name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-" + name + "-" + time.Now().UTC().Format("20060102T150405"), TaskQueue: queue}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	if name == "gate" { // answer once it asks
		for {
			v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), QueryQuestions)
			var qs []Question
			if err == nil && v.Get(&qs) == nil && len(qs) > 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the gate never asked")
			}
			time.Sleep(50 * time.Millisecond) // polling a real server while recording, not a test of timing
		}
		if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), SignalAnswer, Answer{Name: "ask", Text: "world"}); err != nil {
			t.Fatal(err)
		}
	}
	var out Output
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata/histories", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata/histories", name+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s, %d events", name, out.State, len(hist.Events))
}

// quiet is an SDK logger that keeps only warnings and errors.
func quiet() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
