package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/spec"
)

// fakeBackend stands for Temporal: a run waits on one confirm question until it is answered or
// cancelled, then ends with the answer as its output.
type fakeBackend struct {
	got     chan BackendRun
	answers chan string
}

func (f *fakeBackend) Execute(ctx context.Context, r BackendRun, cancel <-chan struct{}, events event.Sink) (BackendEnd, error) {
	f.got <- r
	events.Emit(event.Event{Seq: 1, TS: time.Unix(0, 0), RunID: r.ID, Kind: event.WorkflowStarted, Iteration: -1, Fields: map[string]any{"workflow": "w"}})
	select {
	case a := <-f.answers:
		rep := fmt.Sprintf(`{"run_id":%q,"workflow":"w","workflow_state":"success","outputs":{"a":%q},"tasks":{"ask":{"status":"success","output":%q,"error":null}}}`, r.ID, a, a)
		return BackendEnd{State: stateSuccess, Report: json.RawMessage(rep)}, nil
	case <-cancel:
		rep := fmt.Sprintf(`{"run_id":%q,"workflow":"w","workflow_state":"cancelled","outputs":{},"tasks":{"ask":{"status":"cancelled","output":null,"error":null}}}`, r.ID)
		return BackendEnd{State: stateCancelled, Report: json.RawMessage(rep)}, nil
	case <-ctx.Done():
		return BackendEnd{}, ctx.Err()
	}
}

func (f *fakeBackend) Questions(ctx context.Context, id string) ([]Question, error) {
	return []Question{{Task: "ask", Iteration: -1, Mode: "confirm", Message: "Go?"}}, nil
}

func (f *fakeBackend) Answer(ctx context.Context, id string, answers map[string]string) error {
	for name, text := range answers {
		if name != "ask" || text != "yes" {
			return fmt.Errorf("%w: %s=%s", ErrBadAnswer, name, text)
		}
		f.answers <- text
	}
	return nil
}

const gateYAML = "nika: v1\nworkflow: w\npermits: { tools: [\"nika:prompt\"] }\ntasks:\n  - id: ask\n    invoke: { tool: \"nika:prompt\", args: { mode: confirm, message: \"Go?\" } }\n"

// With Options.Backend the server checks and admits as ever, hands the run (its id, text and the
// ceiling) to the backend, shows its questions as a paused run's, passes answers on (400 for a
// bad one), cancels through it, and keeps the report and events it followed.
func TestBackendRunsTheRuns(t *testing.T) {
	f := &fakeBackend{got: make(chan BackendRun, 4), answers: make(chan string, 1)}
	_, c := start(t, Options{Backend: f, Permits: &spec.Permits{Tools: []string{"nika:prompt"}}})
	if code, b := c.do("POST", "/v1/runs", body("nika: v1\nworkflow: w\ntasks:\n  - id: sh\n    exec: { command: \"true\" }\n", nil)); code != http.StatusBadRequest {
		t.Fatalf("an exec under the {} ceiling: %d %s", code, b)
	}
	id := c.submit(gateYAML, nil)
	r := <-f.got
	if r.ID != id || string(r.Source) != gateYAML || r.Ceiling == nil || r.Prepared == nil {
		t.Fatalf("the backend got %+v", r)
	}
	code, b := c.do("GET", "/v1/runs/"+id, "")
	if code != 200 || !strings.Contains(string(b), `"state":"paused"`) || !strings.Contains(string(b), `"questions":[{"message":"Go?","mode":"confirm","task":"ask"}]`) {
		t.Fatalf("GET of a waiting run: %d %s", code, b)
	}
	if code, b := c.do("POST", "/v1/runs/"+id+"/answers", `{"answers":{"ask":"maybe"}}`); code != http.StatusBadRequest {
		t.Fatalf("a bad answer: %d %s", code, b)
	}
	if code, b := c.do("POST", "/v1/runs/"+id+"/answers", `{"answers":{"ask":"yes"}}`); code != http.StatusAccepted || !strings.Contains(string(b), `"state":"running"`) {
		t.Fatalf("an answer: %d %s", code, b)
	}
	if es := c.events(id); kinds(es) != "workflow_started" {
		t.Errorf("events %s", kinds(es))
	}
	if st := c.get(id); st.State != stateSuccess || st.Report == nil || st.Report.Outputs["a"] != "yes" {
		t.Errorf("the answered run: %+v", st)
	}
	if code, _ := c.do("POST", "/v1/runs/"+id+"/answers", `{"answers":{"ask":"yes"}}`); code != http.StatusConflict {
		t.Errorf("an answer to a finished run: %d", code)
	}

	id2 := c.submit(gateYAML, nil)
	<-f.got
	if code, b := c.do("DELETE", "/v1/runs/"+id2, ""); code != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	c.events(id2) // until it ends
	if st := c.get(id2); st.State != stateCancelled {
		t.Errorf("the cancelled run: %+v", st)
	}
}
