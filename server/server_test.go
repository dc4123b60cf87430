package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/mcp"
	"github.com/nikahq/nika/verbs/infer"
	"github.com/nikahq/nika/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// helloYAML runs on the real infer verb and the mock provider.
const helloYAML = `nika: v1
workflow: hello
model: mock/echo
vars:
  name: "world"
tasks:
  - id: greet
    infer: { prompt: "Hello ${{ vars.name }}" }
outputs:
  greeting: ${{ tasks.greet.output }}
`

// gatedYAML has two tasks in a row; under a gate verb each blocks until the
// test hands it a token.
const gatedYAML = `nika: v1
workflow: gated
model: mock/echo
tasks:
  - id: first
    infer: { prompt: "one" }
  - id: second
    depends_on: [first]
    infer: { prompt: "two" }
`

const oneGatedYAML = `nika: v1
workflow: one
model: mock/echo
tasks:
  - id: only
    infer: { prompt: "one" }
`

// gate is a verb that reports each job it starts on entered and then waits
// for one token on release (or its cancellation): the tests' rendezvous.
type gate struct {
	entered chan string // workflow/task of each job that started
	release chan struct{}
	// named, when it has the job's workflow, also releases that workflow's jobs.
	named map[string]chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan string, 512), release: make(chan struct{}, 512)}
}

func (g *gate) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	g.entered <- job.Workflow + "/" + job.Task.ID
	select {
	case <-g.release:
		return workflow.Outcome{Output: "released " + job.Task.ID}
	case <-g.named[job.Workflow]: // a nil channel when absent: never
		return workflow.Outcome{Output: "released " + job.Task.ID}
	case <-ctx.Done():
		return workflow.Failed(spec.NewError("NIKA-CANCEL-001", "cancelled", nil))
	}
}

func (g *gate) verbs() map[string]planner.Verb { return map[string]planner.Verb{"infer": g} }

// start serves s on an httptest server; cleanup closes the runs first (so
// event streams end), then the HTTP server and its client's connections.
func start(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	return s, &client{t: t, ts: ts}
}

type client struct {
	t     *testing.T
	ts    *httptest.Server
	token string
}

// do sends one request and returns the status and the body.
func (c *client) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.ts.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// submit posts a workflow and returns its run id; it fails the test on any
// status but 202.
func (c *client) submit(yaml string, vars map[string]any) string {
	c.t.Helper()
	code, b := c.do("POST", "/v1/runs", body(yaml, vars))
	if code != http.StatusAccepted {
		c.t.Fatalf("submit: %d %s", code, b)
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("submit: %v in %s", err, b)
	}
	return out.RunID
}

func body(yaml string, vars map[string]any) string {
	m := map[string]any{"workflow": yaml}
	if vars != nil {
		m["vars"] = vars
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// status is the body of GET /v1/runs/{id}.
type status struct {
	RunID  string `json:"run_id"`
	State  string `json:"state"`
	Report *struct {
		RunID         string         `json:"run_id"`
		Workflow      string         `json:"workflow"`
		WorkflowState string         `json:"workflow_state"`
		Outputs       map[string]any `json:"outputs"`
		Tasks         map[string]struct {
			Status string      `json:"status"`
			Output any         `json:"output"`
			Error  *spec.Error `json:"error"`
		} `json:"tasks"`
	} `json:"report"`
}

func (c *client) get(id string) status {
	c.t.Helper()
	code, b := c.do("GET", "/v1/runs/"+id, "")
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", id, code, b)
	}
	var st status
	if err := json.Unmarshal(b, &st); err != nil {
		c.t.Fatalf("GET %s: %v in %s", id, err, b)
	}
	return st
}

// stream opens the event stream of a run.
func (c *client) stream(id string) (*bufio.Scanner, func()) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.ts.URL+"/v1/runs/"+id+"/events", nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.ts.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		c.t.Fatalf("events %s: %d %s", id, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return sc, func() { resp.Body.Close() }
}

// events reads a run's whole stream: it returns once the run has ended.
func (c *client) events(id string) []wireEvent {
	c.t.Helper()
	sc, done := c.stream(id)
	defer done()
	var out []wireEvent
	for sc.Scan() {
		out = append(out, decodeEvent(c.t, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// wireEvent is an event line as a client reads it (D17).
type wireEvent struct {
	Seq    int64          `json:"seq"`
	RunID  string         `json:"run_id"`
	Kind   string         `json:"kind"`
	Task   string         `json:"task"`
	Fields map[string]any `json:"fields"`
}

func decodeEvent(t *testing.T, line []byte) wireEvent {
	t.Helper()
	var e wireEvent
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatalf("event line %q: %v", line, err)
	}
	return e
}

func kinds(es []wireEvent) string {
	var ks []string
	for _, e := range es {
		k := e.Kind
		if e.Task != "" {
			k += ":" + e.Task
		}
		ks = append(ks, k)
	}
	return strings.Join(ks, " ")
}

func TestSubmitRunsAndReports(t *testing.T) {
	var live atomic.Int64
	_, c := start(t, Options{Live: event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveTaskStarted {
			live.Add(1)
		}
	})})
	id := c.submit(helloYAML, map[string]any{"name": "nika"})
	if !strings.HasPrefix(id, "r-") {
		t.Fatalf("run id %q does not start with r-", id)
	}
	if u, err := uuid.Parse(strings.TrimPrefix(id, "r-")); err != nil || u.Version() != 7 {
		t.Errorf("run id %q is not r-<uuid v7> (%v)", id, err)
	}
	es := c.events(id)
	if got, want := kinds(es), "workflow_started task_started:greet infer_completed:greet task_completed:greet workflow_completed"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	for i, e := range es {
		if e.RunID != id || e.Seq != int64(i+1) {
			t.Errorf("event %d: run_id %q seq %d, want %q %d", i, e.RunID, e.Seq, id, i+1)
		}
	}
	st := c.get(id)
	if st.RunID != id || st.State != "success" || st.Report == nil {
		t.Fatalf("status = %+v", st)
	}
	rep := st.Report
	if rep.RunID != id || rep.Workflow != "hello" || rep.WorkflowState != "success" || rep.Tasks["greet"].Status != "success" {
		t.Errorf("report = %+v", rep)
	}
	if g, _ := rep.Outputs["greeting"].(string); !strings.Contains(g, "Hello nika") {
		t.Errorf("outputs = %v, want the mock's echo of the var", rep.Outputs)
	}
	if live.Load() != 1 {
		t.Errorf("the live sink saw %d task starts, want 1", live.Load())
	}
}

func TestSubmitRefusals(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.nika.yaml"), []byte(helloYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-outside.nika.yaml")
	if err := os.WriteFile(outside, []byte(helloYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outside) })
	if err := os.Symlink(outside, filepath.Join(root, "link.nika.yaml")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ALLOWED_TOKEN": "allowed-secret", "OTHER_TOKEN": "other-secret"}
	_, c := start(t, Options{
		Workflows:    root,
		MaxBodyBytes: 4096,
		SecretEnv:    []string{"ALLOWED_TOKEN"},
		Engine: engine.Options{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			Providers: &engine.Providers{Registry: mockRegistry(), Unavailable: map[string]string{"openai": "provider openai: no API key: set NIKA_OPENAI_API_KEY or OPENAI_API_KEY"}}},
	})
	secretYAML := func(src string) string {
		return "nika: v1\nworkflow: s\nmodel: mock/echo\nsecrets:\n  T: " + src + "\ntasks:\n  - id: a\n    infer: { prompt: \"x\" }\n"
	}
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		want                     string // in the body
	}{
		{"not JSON", "POST", "/v1/runs", "{", 400, "must be one JSON object"},
		{"unknown field", "POST", "/v1/runs", `{"workflow":"x","nope":1}`, 400, "unknown field"},
		{"two objects", "POST", "/v1/runs", `{"workflow":"x"}{}`, 400, "exactly one JSON object"},
		{"neither workflow nor path", "POST", "/v1/runs", `{}`, 400, "exactly one of"},
		{"both workflow and path", "POST", "/v1/runs", `{"workflow":"x","path":"hello.nika.yaml"}`, 400, "exactly one of"},
		{"invalid workflow", "POST", "/v1/runs", body("nika: v1\nworkflow: w\ntasks:\n  - id: a\n    infer: { prompt: x }\n    retrys: 3\n", nil), 400, `"valid":false`},
		{"missing required var", "POST", "/v1/runs", body(strings.Replace(helloYAML, `name: "world"`, `name: { type: string, required: true }`, 1), nil), 400, "NIKA-VAR-001"},
		{"undeclared var", "POST", "/v1/runs", body(helloYAML, map[string]any{"nope": 1}), 400, "NIKA-VAR-001"},
		{"var of the wrong type", "POST", "/v1/runs", body(strings.Replace(helloYAML, `name: "world"`, `name: { type: integer }`, 1), map[string]any{"name": []int{1}}), 400, "NIKA-VAR-006"},
		{"env secret not allowed", "POST", "/v1/runs", body(secretYAML("{ source: env, key: OTHER_TOKEN }"), nil), 400, "--secret-env OTHER_TOKEN"},
		{"file secret", "POST", "/v1/runs", body(secretYAML("{ source: file, path: /etc/hostname }"), nil), 400, "NIKA-SEC-004"},
		{"provider without a key", "POST", "/v1/runs", body(strings.Replace(oneGatedYAML, "mock/echo", "openai/gpt-4o", 1), nil), 400, "set NIKA_OPENAI_API_KEY"},
		{"path escaping the root", "POST", "/v1/runs", `{"path":"../` + filepath.Base(outside) + `"}`, 400, "must stay inside"},
		{"symlink escaping the root", "POST", "/v1/runs", `{"path":"link.nika.yaml"}`, 400, "must stay inside"},
		{"path not found", "POST", "/v1/runs", `{"path":"nope.nika.yaml"}`, 400, "no workflow"},
		{"body too large", "POST", "/v1/runs", body(helloYAML+"#"+strings.Repeat("x", 5000)+"\n", nil), 413, "over 4096 bytes"},
		{"unknown run", "GET", "/v1/runs/r-nope", "", 404, "no run"},
		{"unknown run events", "GET", "/v1/runs/r-nope/events", "", 404, "no run"},
		{"unknown run cancel", "DELETE", "/v1/runs/r-nope", "", 404, "no run"},
		{"method on runs", "GET", "/v1/runs", "", 405, ""},
		{"method on a run", "PUT", "/v1/runs/r-x", "", 405, ""},
		{"method on metrics", "POST", "/metrics", "", 405, ""},
		{"no metrics handler", "GET", "/metrics", "", 404, "no metrics handler"},
		{"allowed env secret", "POST", "/v1/runs", body(secretYAML("{ source: env, key: ALLOWED_TOKEN }"), nil), 202, "run_id"},
		{"path under the root", "POST", "/v1/runs", `{"path":"hello.nika.yaml","vars":{"name":"x"}}`, 202, "run_id"},
		{"health", "GET", "/healthz", "", 200, "ok"},
		{"ready", "GET", "/readyz", "", 200, "ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := c.do(tc.method, tc.path, tc.body)
			if code != tc.code || !strings.Contains(string(b), tc.want) {
				t.Errorf("%s %s = %d %s, want %d with %q", tc.method, tc.path, code, b, tc.code, tc.want)
			}
		})
	}
	// The 400 of an invalid workflow is the D21 report of `nika check --json`.
	_, b := c.do("POST", "/v1/runs", body("nika: v1\nworkflow: w\ntasks:\n  - id: a\n    infer: { prompt: x }\n    retrys: 3\n", nil))
	var rep struct {
		Valid bool `json:"valid"`
		Files []struct {
			File   string `json:"file"`
			Valid  bool   `json:"valid"`
			Errors []struct {
				Code string `json:"code"`
				Line int    `json:"line"`
			} `json:"errors"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Valid || len(rep.Files) != 1 || rep.Files[0].File != submittedName ||
		len(rep.Files[0].Errors) == 0 || !strings.HasPrefix(rep.Files[0].Errors[0].Code, "NIKA-PARSE-") || rep.Files[0].Errors[len(rep.Files[0].Errors)-1].Code != "NIKA-PARSE-005" || rep.Files[0].Errors[len(rep.Files[0].Errors)-1].Line != 6 {
		t.Errorf("check report = %s (%v)", b, err)
	}
}

func TestAuth(t *testing.T) {
	_, c := start(t, Options{AuthToken: "s3cret-token", Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics\n") })})
	for _, tc := range []struct {
		token, method, path string
		code                int
	}{
		{"", "POST", "/v1/runs", 401},
		{"wrong", "POST", "/v1/runs", 401},
		{"s3cret-token-longer", "GET", "/v1/runs/r-x", 401},
		{"", "GET", "/metrics", 401},
		{"", "GET", "/v1/runs/r-x/events", 401},
		{"", "GET", "/healthz", 200},
		{"", "GET", "/readyz", 200},
		{"s3cret-token", "GET", "/metrics", 200},
		{"s3cret-token", "GET", "/v1/runs/r-x", 404},
	} {
		c.token = tc.token
		code, b := c.do(tc.method, tc.path, "")
		if code != tc.code {
			t.Errorf("%s %s with token %q = %d %s, want %d", tc.method, tc.path, tc.token, code, b, tc.code)
		}
	}
	c.token = "s3cret-token"
	id := c.submit(helloYAML, nil)
	if st := c.get(id); st.RunID != id {
		t.Errorf("GET with the token = %+v", st)
	}
	c.events(id)
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true, "127.3.2.1:9": true, "LOCALHOST:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestParsePermits(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want *spec.Permits
		err  string
	}{
		{"", &spec.Permits{}, ""},
		{"{}", &spec.Permits{}, ""},
		{"exec: true\n", &spec.Permits{Exec: true}, ""},
		{"exec: [echo, sh]\ntools: ['nika:*']\nfs: { read: [data/**] }\nnet: { http: [api.example.com] }\n",
			&spec.Permits{ExecList: []string{"echo", "sh"}, Tools: []string{"nika:*"}, ToolsSet: true, FSRead: []string{"data/**"}, FSWrite: []string{}, NetHTTP: []string{"api.example.com"}}, ""},
		{"exec: 3\n", nil, "exec must be"},
		{"exec: [1]\n", nil, "non-empty string"},
		{"execs: true\n", nil, "mapping of fs, net, exec and tools"},
		{"exec: true\nexec: false\n", nil, "mapping of fs, net, exec and tools"},
	} {
		got, err := ParsePermits([]byte(tc.src))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePermits(%q) error = %v, want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("ParsePermits(%q) = %#v, %v; want %#v", tc.src, got, err, tc.want)
		}
	}
}

// D35: a workflow that runs exec is refused with NIKA-SEC-004 under the
// default ceiling, with or without its own permits: at submission (400, the
// checker runs under the ceiling) when the program is literal, at run time
// when it is an expression; a ceiling that allows exec lets it run (the
// refusal comes from the ceiling, not from exec).
func TestExecUnderTheCeiling(t *testing.T) {
	const noPermits = "nika: v1\nworkflow: ex\ntasks:\n  - id: run\n    exec: { command: [\"echo\", \"hi\"] }\n"
	const ownPermits = "nika: v1\nworkflow: ex\npermits: { exec: [\"echo\"] }\ntasks:\n  - id: run\n    exec: { command: [\"echo\", \"hi\"] }\n"
	const dynamic = "nika: v1\nworkflow: ex\nvars:\n  prog: { type: string, default: echo }\npermits: { exec: [\"echo\"] }\ntasks:\n  - id: run\n    exec: { command: [\"${{ vars.prog }}\", \"hi\"] }\n"
	for _, tc := range []struct {
		name    string
		ceiling *spec.Permits
		yaml    string
		state   string // "refused": a 400 at submission
		code    string
	}{
		{"default ceiling, no permits", nil, noPermits, "refused", "NIKA-SEC-004"},
		{"default ceiling, own permits", nil, ownPermits, "refused", "NIKA-SEC-004"},
		{"ceiling allows sh only", &spec.Permits{ExecList: []string{"sh"}}, ownPermits, "refused", "NIKA-SEC-004"},
		{"ceiling allows sh only, program from an expression", &spec.Permits{ExecList: []string{"sh"}}, dynamic, "failure", "NIKA-SEC-004"},
		{"ceiling allows exec, no permits", &spec.Permits{Exec: true}, noPermits, "success", ""},
		{"ceiling allows echo, own permits", &spec.Permits{ExecList: []string{"echo"}}, ownPermits, "success", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := start(t, Options{Permits: tc.ceiling})
			if tc.state == "refused" {
				code, b := c.do("POST", "/v1/runs", body(tc.yaml, nil))
				if code != http.StatusBadRequest || !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
					t.Errorf("POST = %d %s; want 400 with %s", code, b, tc.code)
				}
				return
			}
			id := c.submit(tc.yaml, nil)
			c.events(id)
			st := c.get(id)
			task := st.Report.Tasks["run"]
			code := ""
			if task.Error != nil {
				code = task.Error.Code
			}
			if st.State != tc.state || code != tc.code {
				t.Errorf("state %s, task error %q; want %s, %q (%+v)", st.State, code, tc.state, tc.code, task)
			}
		})
	}
}

// The stream follows a live run: events arrive while the run is blocked,
// and the stream ends when the run does.
func TestEventsFollowALiveRun(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}})
	id := c.submit(gatedYAML, nil)
	sc, done := c.stream(id)
	defer done()
	next := func() wireEvent {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the stream ended early: %v", sc.Err())
		}
		return decodeEvent(t, sc.Bytes())
	}
	expect := func(kind, task string) {
		t.Helper()
		if e := next(); e.Kind != kind || e.Task != task {
			t.Fatalf("event %s:%s, want %s:%s", e.Kind, e.Task, kind, task)
		}
	}
	if w := <-g.entered; w != "gated/first" {
		t.Fatalf("entered %s", w)
	}
	// first is held by the gate: what arrives now was streamed live (a
	// task's own events are released when it settles).
	expect("workflow_started", "")
	if st := c.get(id); st.State != "running" || st.Report != nil {
		t.Errorf("while blocked: %+v, want running without a report", st)
	}
	if _, b := c.do("GET", "/v1/runs/"+id, ""); !strings.Contains(string(b), `"report":null`) {
		t.Errorf("while blocked: %s, want the report member present as null", b)
	}
	g.release <- struct{}{}
	expect("task_started", "first")
	expect("task_completed", "first")
	// second is held now: first's events reached us before the run could end.
	if w := <-g.entered; w != "gated/second" {
		t.Fatalf("entered %s", w)
	}
	g.release <- struct{}{}
	expect("task_started", "second")
	expect("task_completed", "second")
	expect("workflow_completed", "")
	if sc.Scan() {
		t.Errorf("an event after the end: %s", sc.Bytes())
	}
	if st := c.get(id); st.State != "success" {
		t.Errorf("state %s, want success", st.State)
	}
	// A late reader gets the whole stream, and it ends.
	if got := kinds(c.events(id)); got != "workflow_started task_started:first task_completed:first task_started:second task_completed:second workflow_completed" {
		t.Errorf("replayed stream = %s", got)
	}
}

func TestCancelARunningRun(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}})
	id := c.submit(gatedYAML, nil)
	<-g.entered
	code, b := c.do("DELETE", "/v1/runs/"+id, "")
	if code != http.StatusAccepted || !strings.Contains(string(b), `"state":"running"`) {
		t.Fatalf("DELETE = %d %s, want 202 running", code, b)
	}
	es := c.events(id) // ends because the run ended
	if got, want := kinds(es), "workflow_started task_started:first task_cancelled:first task_cancelled:second workflow_cancelled"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	st := c.get(id)
	first, second := st.Report.Tasks["first"], st.Report.Tasks["second"]
	if st.State != "cancelled" || first.Status != "cancelled" || first.Error == nil || first.Error.Code != "NIKA-CANCEL-001" ||
		second.Status != "cancelled" || second.Error != nil {
		t.Errorf("status = %+v", st)
	}
	if code, b := c.do("DELETE", "/v1/runs/"+id, ""); code != http.StatusConflict {
		t.Errorf("DELETE of a finished run = %d %s, want 409", code, b)
	}
}

// A full queue is 429: one run held by the gate, one queued, the next
// refused; cancelling the queued one frees its place.
func TestQueueFullIs429(t *testing.T) {
	g := newGate()
	var liveMu sync.Mutex
	var finished []string // workflow_finished statuses on the live stream
	live := event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveWorkflowFinished {
			liveMu.Lock()
			finished = append(finished, l.Status)
			liveMu.Unlock()
		}
	})
	s, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}, MaxRuns: 1, QueueSize: 1, Live: live})
	a := c.submit(oneGatedYAML, nil)
	<-g.entered
	b := c.submit(oneGatedYAML, nil)
	if st := c.get(b); st.State != "queued" {
		t.Fatalf("second run is %s, want queued", st.State)
	}
	code, body := c.do("POST", "/v1/runs", body(oneGatedYAML, nil))
	if code != http.StatusTooManyRequests || !strings.Contains(string(body), "1 running, 1 queued") {
		t.Fatalf("third run = %d %s, want 429", code, body)
	}
	code, body = c.do("DELETE", "/v1/runs/"+b, "")
	if code != http.StatusOK || !strings.Contains(string(body), `"state":"cancelled"`) {
		t.Fatalf("DELETE queued = %d %s, want 200 cancelled", code, body)
	}
	st := c.get(b)
	if st.State != "cancelled" || st.Report == nil || st.Report.WorkflowState != "cancelled" ||
		st.Report.Tasks["only"].Status != "cancelled" || st.Report.Tasks["only"].Error != nil {
		t.Errorf("cancelled while queued: %+v", st)
	}
	if es := c.events(b); len(es) != 0 {
		t.Errorf("a run that never started has events: %s", kinds(es))
	}
	liveMu.Lock()
	if !slices.Equal(finished, []string{"cancelled"}) { // the metrics count it
		t.Errorf("live workflow_finished statuses %v, want [cancelled]", finished)
	}
	liveMu.Unlock()
	d := c.submit(oneGatedYAML, nil) // the queue has room again
	if running, queued := s.Active(); running != 1 || queued != 1 {
		t.Errorf("active = %d running, %d queued; want 1, 1", running, queued)
	}
	g.release <- struct{}{}
	<-g.entered // d started once a finished
	g.release <- struct{}{}
	for _, id := range []string{a, d} {
		c.events(id)
		if st := c.get(id); st.State != "success" {
			t.Errorf("%s: %s, want success", id, st.State)
		}
	}
}

// Shutdown: not ready, no new runs, queued runs cancelled, running runs
// drain until the deadline and are cancelled after it.
func TestShutdownDrainsThenCancels(t *testing.T) {
	g := newGate()
	g.named = map[string]chan struct{}{"drained": make(chan struct{}, 1)}
	s, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}, MaxRuns: 2, QueueSize: 1})
	a := c.submit(strings.Replace(oneGatedYAML, "workflow: one", "workflow: drained", 1), nil)
	b := c.submit(oneGatedYAML, nil)
	<-g.entered
	<-g.entered
	q := c.submit(oneGatedYAML, nil)
	ctx, deadline := context.WithCancel(context.Background())
	shut := make(chan error)
	go func() { shut <- s.Shutdown(ctx) }()
	c.events(q) // ends once Shutdown cancelled the queued run
	if code, _ := c.do("GET", "/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining = %d, want 503", code)
	}
	if code, _ := c.do("POST", "/v1/runs", body(oneGatedYAML, nil)); code != http.StatusServiceUnavailable {
		t.Errorf("POST while draining = %d, want 503", code)
	}
	g.named["drained"] <- struct{}{} // a drains during the shutdown
	c.events(a)
	if st := c.get(b); st.State != "running" {
		t.Errorf("b before the deadline: %s, want running", st.State)
	}
	deadline() // b is cancelled
	if err := <-shut; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 runs cancelled") {
		t.Errorf("Shutdown = %v, want 1 run cancelled at the deadline", err)
	}
	for id, want := range map[string]string{a: "success", b: "cancelled", q: "cancelled"} {
		if st := c.get(id); st.State != want {
			t.Errorf("%s: %s, want %s", id, st.State, want)
		}
	}
}

func TestFinishedRunsAreBounded(t *testing.T) {
	_, c := start(t, Options{KeepRuns: 2})
	var ids []string
	for range 3 {
		id := c.submit(helloYAML, nil)
		c.events(id)
		ids = append(ids, id)
	}
	if code, _ := c.do("GET", "/v1/runs/"+ids[0], ""); code != http.StatusNotFound {
		t.Errorf("the oldest finished run = %d, want 404 (forgotten)", code)
	}
	for _, id := range ids[1:] {
		if st := c.get(id); st.State != "success" {
			t.Errorf("%s = %s", id, st.State)
		}
	}
}

// highWater wraps a verb and measures how many jobs run at once. Until the
// bound has been reached once, each job waits for it (a rendezvous: the
// high-water mark is then exactly the bound if the bound holds, and the
// test cannot pass by never filling the slots).
type highWater struct {
	inner       planner.Verb
	bound       int
	mu          sync.Mutex
	now, max    int
	reached     chan struct{}
	reachedOnce sync.Once
}

func (h *highWater) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	h.mu.Lock()
	h.now++
	h.max = max(h.max, h.now)
	if h.now >= h.bound {
		h.reachedOnce.Do(func() { close(h.reached) })
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.now--
		h.mu.Unlock()
	}()
	select {
	case <-h.reached:
	case <-ctx.Done():
	}
	return h.inner.Run(ctx, job)
}

// The load test: 200 runs submitted at once on the mock provider, every
// one completes and keeps its report, at most MaxRuns run at a time, and
// no goroutine outlives the server.
func TestLoad200ConcurrentRuns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const runs, bound = 200, 8
	reg := provider.NewRegistry()
	reg.Register("mock", provider.NewMock())
	hw := &highWater{inner: &infer.Verb{Providers: reg}, bound: bound, reached: make(chan struct{})}
	s, err := New(Options{MaxRuns: bound, QueueSize: runs,
		Engine: engine.Options{Providers: &engine.Providers{Registry: reg}, Verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"infer": hw} }}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	c := &client{t: t, ts: ts}
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"workflow": helloYAML, "vars": map[string]any{"name": fmt.Sprint("n", i)}})
			resp, err := ts.Client().Post(ts.URL+"/v1/runs", "application/json", strings.NewReader(string(b)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var out struct {
				RunID string `json:"run_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
				t.Errorf("submit %d: %d %v", i, resp.StatusCode, err)
			}
			ids[i] = out.RunID
		})
	}
	wg.Wait()
	if t.Failed() {
		s.Close()
		ts.Close()
		return
	}
	for i, id := range ids {
		if es := c.events(id); len(es) == 0 || es[len(es)-1].Kind != "workflow_completed" {
			t.Fatalf("run %d: events %s", i, kinds(es))
		}
		st := c.get(id)
		if st.State != "success" || st.Report == nil || st.Report.Outputs["greeting"] == nil ||
			!strings.Contains(fmt.Sprint(st.Report.Outputs["greeting"]), fmt.Sprint("Hello n", i)) {
			t.Fatalf("run %d: %+v", i, st)
		}
	}
	if hw.max != bound {
		t.Errorf("high-water mark = %d runs at once, want exactly the bound %d", hw.max, bound)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after the load = %v", err)
	}
	ts.Close()
}

// exec children get a minimal environment: PATH and the like, never the
// server's keys (they would otherwise be one `env` away from a submitter).
func TestExecChildrenGetAMinimalEnvironment(t *testing.T) {
	env := map[string]string{"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-must-not-leak"}
	_, c := start(t, Options{Permits: &spec.Permits{Exec: true}, Engine: engine.Options{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}})
	id := c.submit("nika: v1\nworkflow: env\ntasks:\n  - id: run\n    exec: { command: [\"sh\", \"-c\", \"echo key=${OPENAI_API_KEY:-unset} path=$PATH\"] }\n", nil)
	c.events(id)
	st := c.get(id)
	if out := fmt.Sprint(st.Report.Tasks["run"].Output); st.State != "success" || out != "key=unset path=/usr/bin:/bin" {
		t.Errorf("state %s, output %q; want the key unset and PATH passed", st.State, out)
	}
}

// Each run gets an MCP client over Options.MCP: a registered server that
// cannot start is NIKA-MCP-001 (without a client the call would be
// NIKA-INVOKE-001, "no registry").
func TestRunsGetTheMCPRegistry(t *testing.T) {
	reg, err := mcp.Parse("mcp_servers.json", []byte(`{"servers":{"ghost":{"command":"/nonexistent/ghost-mcp-server"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// The tool is checked at submission under the ceiling; the default ceiling's refusal is
	// a 400 (TestLiteralSubjectsRefusedAtSubmission), so this test runs under ceilings that
	// admit the tool.
	const yaml = "nika: v1\nworkflow: m\ntasks:\n  - id: call\n    invoke: { tool: \"mcp:ghost/echo\", args: {} }\n"
	for _, tc := range []struct {
		name    string
		reg     *mcp.Registry
		ceiling *spec.Permits
		code    string
	}{
		{"ceiling admits mcp", reg, &spec.Permits{Tools: []string{"mcp:**"}, ToolsSet: true}, "NIKA-MCP-001"},
		{"no registry", nil, &spec.Permits{Tools: []string{"mcp:**"}, ToolsSet: true}, "NIKA-INVOKE-001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := start(t, Options{Engine: engine.Options{MCP: engine.MCP{Registry: tc.reg}}, Permits: tc.ceiling, Check: spec.CheckOptions{MCPServers: []string{"ghost"}}})
			id := c.submit(yaml, nil)
			c.events(id)
			st := c.get(id)
			if e := st.Report.Tasks["call"].Error; st.State != "failure" || e == nil || e.Code != tc.code {
				t.Errorf("state %s, error %+v; want failure with %s", st.State, e, tc.code)
			}
		})
	}
}

// A follower that goes away ends its handler at once, while the run it
// followed is still held.
func TestEventsEndWhenTheClientGoes(t *testing.T) {
	g := newGate()
	s, err := New(Options{Engine: engine.Options{Verbs: g.verbs}})
	if err != nil {
		t.Fatal(err)
	}
	inner := s.Handler()
	ended := make(chan string, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/events") {
			ended <- r.URL.Path
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	c := &client{t: t, ts: ts}
	id := c.submit(oneGatedYAML, nil)
	<-g.entered
	sc, done := c.stream(id)
	if !sc.Scan() || decodeEvent(t, sc.Bytes()).Kind != "workflow_started" {
		t.Fatalf("first event: %q %v", sc.Bytes(), sc.Err())
	}
	done()
	<-ended // the handler returned although the run is held by the gate
	if st := c.get(id); st.State != "running" {
		t.Errorf("state %s, want running", st.State)
	}
	g.release <- struct{}{}
	c.events(id)
	<-ended
}

func TestNewRefusesBadOptions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"negative runs", Options{MaxRuns: -1}, "must not be negative"},
		{"negative body", Options{MaxBodyBytes: -1}, "must not be negative"},
		{"negative keep bytes", Options{KeepBytes: -1}, "must not be negative"},
		{"missing workflows root", Options{Workflows: filepath.Join(t.TempDir(), "nope")}, "not a readable directory"},
		{"workflows root is a file", Options{Workflows: file}, "not a readable directory"},
		{"trace dir under a file", Options{TraceDir: filepath.Join(file, "traces")}, "trace directory"},
	} {
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// mockRegistry is a registry with the mock provider only.
func mockRegistry() *provider.Registry {
	r := provider.NewRegistry()
	r.Register("mock", provider.NewMock())
	return r
}
