package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maskWorkflow has three env secrets: "task" and "stat", inside the engine's own keys tasks and status, and
// DOUBLE (q"z\k9), which a task output holds JSON-encoded twice. A user key and a value hold the short
// ones; the doubly encoded one reaches the report (an output), the trace (nika:emit and nika:log), stdout
// (an output) and stderr (nika:log's line).
const maskWorkflow = `nika: v1
workflow: masked
secrets:
  TOK: { source: env, key: MASK_TOK }
  STA: { source: env, key: MASK_STA }
  DOUBLE: { source: env, key: MASK_DOUBLE }
tasks:
  - id: user
    invoke:
      tool: nika:jq
      args:
        expression: "{(.k): .v, status_of: .v}"
        input: { k: "${{ secrets.TOK }}-key", v: "${{ secrets.STA }}" }
  - id: nested
    invoke:
      tool: nika:jq
      args:
        expression: "tojson | tojson"
        input: { pw: "${{ secrets.DOUBLE }}" }
  - id: emit
    depends_on: [user]
    invoke:
      tool: nika:emit
      args:
        event_type: masked
        payload: ${{ tasks.user.output }}
  - id: log
    depends_on: [user, nested]
    invoke:
      tool: nika:log
      args:
        message: "doubled ${{ tasks.nested.output }}"
        data: ${{ tasks.user.output }}
  - id: emit_double
    depends_on: [nested]
    invoke:
      tool: nika:emit
      args:
        event_type: doubled
        payload: { doubled: "${{ tasks.nested.output }}" }
outputs:
  user: ${{ tasks.user.output }}
  doubled: ${{ tasks.nested.output }}
  stats: ${{ tasks.user.output.status_of }}
`

// LANGUAGE.md §2.3, D24: with secrets "task" and "stat", nika run masks values and user keys but never the
// engine's keys (before, the report's tasks became ••••••s and every status ••••••us, in the report and the
// trace); and a secret JSON-encoded twice in a task output is masked in the report, the trace, stdout and
// stderr (before, it leaked in all four).
func TestRunMaskingKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "masked.nika.yaml"), maskWorkflow)
	report, trace := filepath.Join(dir, "report.json"), filepath.Join(dir, "trace.ndjson")
	r := runBinaryEnv(t, dir, []string{"MASK_TOK=task", "MASK_STA=stat", `MASK_DOUBLE=q"z\k9`},
		"run", "masked.nika.yaml", "--report", report, "--trace", trace)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	const user = "••••••-key" // task-key, a user key
	const doubled = `"{\"pw\":\"••••••\"}"`

	// The report: D22's keys all there, every task's status read back; the user data masked.
	_, raw := readReport(t, report)
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "workflow", "workflow_state", "seed", "tasks", "outputs", "usage"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report: key %q missing: %s", k, raw)
		}
	}
	tasks, _ := rep["tasks"].(map[string]any)
	for _, id := range []string{"user", "nested", "emit", "log", "emit_double"} {
		entry, _ := tasks[id].(map[string]any)
		if entry["status"] != "success" {
			t.Errorf("report: tasks.%s.status = %v, want success: %s", id, entry["status"], raw)
		}
	}
	field := func(m map[string]any, keys ...string) any { // m[k1][k2]…, nil when absent
		var v any = m
		for _, k := range keys {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	out, _ := field(tasks, "user", "output").(map[string]any)
	if out[user] != "••••••" || out["••••••us_of"] != "••••••" || len(out) != 2 {
		t.Errorf("report: the user task's output = %v, want its keys and values masked", out)
	}
	if got := field(tasks, "nested", "output"); got != doubled {
		t.Errorf("report: the nested task's output = %v, want %s", got, doubled)
	}
	outputs, _ := rep["outputs"].(map[string]any)
	if outputs["doubled"] != doubled || outputs["••••••s"] != "••••••" {
		t.Errorf("report: outputs = %v", outputs)
	}

	// The trace: every envelope whole, every field name the engine's; the user data masked.
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[string]bool{}
	var traceText strings.Builder
	for sc.Scan() {
		line := sc.Text()
		traceText.WriteString(line + "\n")
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("trace line %q: %v", line, err)
		}
		for _, k := range []string{"seq", "ts", "run_id", "kind", "fields"} {
			if _, ok := e[k]; !ok {
				t.Errorf("trace: %q missing in %s", k, line)
			}
		}
		fields, _ := e["fields"].(map[string]any)
		kind, _ := e["kind"].(string)
		seen[kind] = true
		switch kind {
		case "workflow_started":
			if fields["tasks"] != 5.0 {
				t.Errorf("trace: workflow_started without its task count: %s", line)
			}
		case "task_completed":
			if fields["status"] != "success" {
				t.Errorf("trace: task_completed without its status: %s", line)
			}
		case "workflow_completed":
			if fields["state"] != "success" {
				t.Errorf("trace: workflow_completed without its state: %s", line)
			}
		case "user_event":
			p, _ := fields["payload"].(map[string]any)
			if fields["event_type"] == "masked" && (p[user] != "••••••" || p["••••••us_of"] != "••••••") {
				t.Errorf("trace: the user event's payload is not masked: %s", line)
			}
			if fields["event_type"] == "doubled" && p["doubled"] != doubled {
				t.Errorf("trace: the doubled payload = %v, want %s", p["doubled"], doubled)
			}
		case "log":
			if d, _ := fields["data"].(map[string]any); d[user] != "••••••" || fields["message"] != "doubled "+doubled {
				t.Errorf("trace: the log event is not masked: %s", line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workflow_started", "task_completed", "user_event", "log", "workflow_completed"} {
		if !seen[k] {
			t.Errorf("trace: no %s event:\n%s", k, traceText.String())
		}
	}

	// stdout: the outputs, masked as user data.
	var stdout map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &stdout); err != nil {
		t.Fatalf("stdout: %v\n%s", err, r.stdout)
	}
	if stdout["doubled"] != doubled || stdout["••••••s"] != "••••••" {
		t.Errorf("stdout = %s", r.stdout)
	}

	// No trace of the secrets anywhere: task-key is the user key, k9 the tail of DOUBLE in any form.
	for name, text := range map[string]string{"report": string(raw), "trace": traceText.String(), "stdout": r.stdout, "stderr": r.stderr} {
		for _, leak := range []string{"task-key", "k9", "status_of"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s: %q leaked:\n%s", name, leak, text)
			}
		}
	}
	if !strings.Contains(r.stderr, `doubled "{\"pw\":\"••••••\"}"`) {
		t.Errorf("stderr: no masked log line:\n%s", r.stderr)
	}
}
