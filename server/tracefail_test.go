package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/internal/testfs"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/workflow"
)

// loud is a verb that logs 100 000 bytes: more than a 64 KiB disk holds.
type loud struct{}

func (loud) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	job.Emit("log", map[string]any{"level": "info", "message": strings.Repeat("a", 100000)})
	return workflow.Outcome{Output: "said it"}
}

// syncBuffer is a Logger the test reads while the server may still write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// traceError reads the trace_error of a finished run.
func traceError(t *testing.T, c *client, id string) (state, traceErr string) {
	t.Helper()
	c.events(id) // returns once the run has ended
	_, b := c.do("GET", "/v1/runs/"+id, "")
	var st struct {
		State      string  `json:"state"`
		TraceError *string `json:"trace_error"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("GET %s: %v in %s", id, err, b)
	}
	if st.TraceError == nil {
		t.Fatalf("GET %s has no trace_error: %s", id, b)
	}
	return st.State, *st.TraceError
}

// A trace that does not fit on its disk: the run itself succeeds, GET says
// the trace is incomplete and why, the log names the file, and the file holds
// whole lines only.
func TestTraceOnAFullDisk(t *testing.T) {
	disk := testfs.SmallFS(t, "64k")
	var log syncBuffer
	_, c := start(t, Options{TraceDir: disk, Logger: &log, Engine: engine.Options{Verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"infer": loud{}} }}})
	id := c.submit(oneGatedYAML, nil)
	state, traceErr := traceError(t, c, id)
	files, _ := filepath.Glob(filepath.Join(disk, "*-"+id+".ndjson"))
	if len(files) != 1 {
		t.Fatalf("trace files = %v, want one", files)
	}
	trace := files[0]
	if state != "success" || !strings.Contains(traceErr, "the trace "+filepath.Base(trace)+" is incomplete") || strings.Contains(traceErr, disk) || !strings.Contains(traceErr, "no space left on device") {
		t.Errorf("state %q, trace_error %q: want success and the trace's file and why", state, traceErr)
	}
	if !strings.Contains(log.String(), "run "+id+": error: the trace "+trace+" is incomplete") {
		t.Errorf("the server log does not name the trace:\n%s", log.String())
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the trace does not end with a whole line (%d bytes)", len(b))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		if decodeEvent(t, sc.Bytes()).Kind == "workflow_completed" {
			t.Error("the incomplete trace claims the workflow completed")
		}
		n++
	}
	if !strings.Contains(traceErr, "the first "+itoa(n)+" events") {
		t.Errorf("trace_error %q does not say the file holds %d events", traceErr, n)
	}
	// The stream the server keeps in memory is whole.
	if got := kinds(c.events(id)); got != "workflow_started task_started:only log:only task_completed:only workflow_completed" {
		t.Errorf("events = %s", got)
	}
}

// A trace file that cannot be created is said too.
func TestTraceThatCannotBeCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	var log syncBuffer
	_, c := start(t, Options{TraceDir: dir, Logger: &log})
	if err := os.Remove(dir); err != nil { // New made it
		t.Fatal(err)
	}
	id := c.submit(helloYAML, nil)
	_, traceErr := traceError(t, c, id)
	// The client sees the file named relative to --trace-dir (no server path in an API body); the
	// server log has the whole path.
	if !strings.Contains(traceErr, "no trace file") || !strings.Contains(traceErr, id+".ndjson") || strings.Contains(traceErr, dir) {
		t.Errorf("trace_error %q, want it to name the file relative to the trace directory", traceErr)
	}
	if !strings.Contains(log.String(), "run "+id+": error: no trace file") || !strings.Contains(log.String(), dir) {
		t.Errorf("the server log does not say it:\n%s", log.String())
	}
}

// A complete trace has no trace_error.
func TestCompleteTraceHasNoTraceError(t *testing.T) {
	_, c := start(t, Options{TraceDir: t.TempDir()})
	id := c.submit(helloYAML, nil)
	c.events(id)
	_, b := c.do("GET", "/v1/runs/"+id, "")
	if bytes.Contains(b, []byte("trace_error")) {
		t.Errorf("GET = %s", b)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
