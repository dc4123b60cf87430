package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// inspecting is a verb whose job asks Job.Inspect for the view named by its
// prompt and returns the answer; "plain" jobs just answer their prompt.
type inspecting struct{}

func (inspecting) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	p := fmt.Sprint(job.Fields["prompt"])
	switch p {
	case "plain":
		return workflow.Outcome{Output: "plain"}
	case "secret":
		return workflow.Outcome{Output: map[string]any{"stat": "a stat"}}
	}
	v, err := job.Inspect(ctx, p)
	if err != nil {
		return workflow.Failed(nil)
	}
	return workflow.Outcome{Output: v}
}

// nika:inspect's views come from the planner that runs the job: records of
// terminal tasks only (secrets masked), the graph, and the running attempts
// (the asking job among them).
func TestInspectViews(t *testing.T) {
	w := compile(t, header+`model: mock/echo
tasks:
  - id: a
    infer: { prompt: "plain" }
  - id: records
    depends_on: [a]
    infer: { prompt: "records" }
  - id: dag
    depends_on: [a]
    infer: { prompt: "dag_info" }
  - id: cost
    depends_on: [a]
    infer: { prompt: "cost" }
  - id: threads
    for_each: [1, 2]
    depends_on: [a]
    infer: { prompt: "threads" }
`)
	res := Run(context.Background(), w, Inputs{}, Options{Verbs: map[string]Verb{"infer": inspecting{}}})
	if res.State != "success" {
		t.Fatalf("state %s: %+v", res.State, res.Error)
	}
	got := map[string]string{}
	for _, tr := range res.Tasks {
		b, err := canon.Marshal(tr.Output)
		if err != nil {
			t.Fatal(err)
		}
		got[tr.ID] = string(b)
	}
	if want := `{"edges":[["a","records"],["a","dag"],["a","cost"],["a","threads"]],"tasks":["a","records","dag","cost","threads"],"waves":[["a"],["records","dag","cost","threads"]],"workflow":"t"}`; got["dag"] != want {
		t.Errorf("dag_info = %s\nwant      %s", got["dag"], want)
	}
	if want := `{"tokens_in":0,"tokens_out":0,"usd":null}`; got["cost"] != want {
		t.Errorf("cost = %s, want %s", got["cost"], want)
	}
	var recs map[string]any
	if err := json.Unmarshal([]byte(got["records"]), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) < 1 || recs["a"] == nil || recs["records"] != nil {
		t.Errorf("records = %s: want a's record and never the asking task's own", got["records"])
	}
	// Each iteration sees itself running; the view is sorted by task id, then iteration.
	var threads []any
	if err := json.Unmarshal([]byte(got["threads"]), &threads); err != nil {
		t.Fatal(err)
	}
	for i, v := range threads {
		var seen []string
		for _, th := range v.([]any) {
			m := th.(map[string]any)
			if m["task_id"] == "threads" {
				seen = append(seen, fmt.Sprint(m["iteration"]))
			}
			if m["attempt"] != 1.0 || m["started_at"] == nil {
				t.Errorf("thread %v lacks attempt or started_at", m)
			}
		}
		if !contains(seen, fmt.Sprint(i)) {
			t.Errorf("iteration %d does not see itself running: %v", i, v)
		}
	}
}

// The records view masks the run's secrets in values and in the keys of user data only: a secret
// "stat" leaves each record's status (and started_at) alone, and masks the output's key and value.
func TestInspectRecordsKeepsRecordKeys(t *testing.T) {
	w := compile(t, header+`model: mock/echo
tasks:
  - id: a
    infer: { prompt: "secret" }
  - id: records
    depends_on: [a]
    infer: { prompt: "records" }
`)
	res := Run(context.Background(), w, Inputs{Secrets: map[string]any{"s": "stat"}},
		Options{Verbs: map[string]Verb{"infer": inspecting{}}})
	if res.State != "success" {
		t.Fatalf("state %s: %+v", res.State, res.Error)
	}
	rec, _ := res.Tasks[1].Output.(map[string]any)["a"].(map[string]any)
	if rec == nil || rec["status"] != "success" || rec["started_at"] == nil {
		t.Fatalf("records = %v: want a's record with its status and started_at keys", res.Tasks[1].Output)
	}
	out, _ := rec["output"].(map[string]any)
	if len(out) != 1 || out["••••••"] != "a ••••••" {
		t.Errorf("a's output in the records view = %v, want its key and value masked", rec["output"])
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
