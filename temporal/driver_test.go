package temporal

import (
	"context"
	"strings"
	"testing"
)

const head = "nika: v1\nworkflow: t\npermits: { exec: true, tools: [\"nika:prompt\", \"nika:jq\"] }\n"

// count is an exec task that fails until its counter file reaches n (each run has its own
// directory, so each run counts from zero).
func count(n int) string {
	return `sh -c 'c=$(cat count 2>/dev/null || echo 0); c=$((c+1)); echo $c > count; test $c -ge ` + string(rune('0'+n)) + `'`
}

// Script cases of the planner (testdata/*.txt) that real verbs can express: each runs locally
// and on Temporal, and the two canonical traces are equal. TestPlannerScriptsEqualLocal
// (script_test.go) runs the script files themselves, with their scripted outcomes.
var scriptCases = []runCase{
	{name: "retry", src: head + `tasks:
  - id: flaky
    retry: { max_attempts: 3, backoff_ms: 10, backoff_strategy: fixed, on_codes: [NIKA-EXEC-001] }
    exec: { command: "` + strings.ReplaceAll(count(3), `"`, `\"`) + `" }
  - id: after
    depends_on: [flaky]
    exec: { command: "echo ${{ tasks.flaky.status }}" }
`},
	{name: "retry-exhausted", src: head + `tasks:
  - id: flaky
    retry: { max_attempts: 2, backoff_ms: 5, on_codes: [NIKA-EXEC-001] }
    exec: { command: "sh -c 'exit 3'" }
  - id: after
    depends_on: [flaky]
    exec: { command: "echo never" }
`},
	{name: "timeout", src: head + `tasks:
  - id: slow
    timeout: "50ms"
    exec: { command: "sleep 30" }
    on_finally:
      - exec: { command: "echo ${{ tasks.slow.status }} ${{ tasks.slow.error.code }}" }
`},
	{name: "on_error", src: head + `tasks:
  - id: cache
    exec: { command: "echo cached" }
  - id: recovered
    exec: { command: "sh -c 'exit 1'" }
    on_error: { recover: "${{ tasks.cache.output }}" }
  - id: skipped
    exec: { command: "sh -c 'exit 1'" }
    on_error: { skip: true }
  - id: bad
    exec: { command: "sh -c 'exit 1'" }
    on_error: { recover: "notjson" }
    output: { x: ".x" }
  - id: end
    depends_on: [recovered, skipped]
    exec: { command: "echo ${{ tasks.recovered.output }} ${{ tasks.skipped.status }}" }
outputs:
  r: ${{ tasks.recovered.output }}
`},
	{name: "for_each-fail-fast", src: head + `tasks:
  - id: fe
    for_each: ["zero", "one", "two", "three", "four"]
    max_parallel: 1
    exec: { command: "sh -c 'test ${{ item }} != two'" }
  - id: after
    depends_on: [fe]
    exec: { command: "echo never" }
`},
	{name: "for_each-all", src: head + `tasks:
  - id: fe
    for_each: ["a", "b", "c", "d"]
    fail_fast: false
    exec: { command: "sh -c 'test ${{ item }} != c && echo ${{ item }}${{ index }}'" }
    output: { v: "." }
outputs:
  all: ${{ tasks.fe.output }}
`},
	{name: "gates", src: head + `vars:
  go: { type: boolean, default: false }
tasks:
  - id: maybe
    when: ${{ vars.go }}
    exec: { command: "echo run" }
  - id: always
    when: true
    for_each: ${{ [1, 2] }}
    invoke: { tool: "nika:jq", args: { expression: ". * 2", input: "${{ item }}" } }
`},
	{name: "bindings-with", src: head + `tasks:
  - id: j
    with: { n: "${{ 20 + 1 }}" }
    exec: { command: "echo '{\"a\": ${{ with.n }}}'" }
    output: { a: ".stdout | fromjson | .a" }
  - id: k
    depends_on: [j]
    exec: { command: "echo ${{ tasks.j.a * 2 }}" }
outputs:
  k: ${{ tasks.k.output }}
`},
}

func TestScriptCasesEqualLocal(t *testing.T) {
	for _, rc := range scriptCases {
		t.Run(rc.name, func(t *testing.T) {
			want, res := rc.local(t, context.Background())
			out, _ := rc.onTemporal(t, nil)
			sameLines(t, want, out.Events)
			if out.State != string(res.State) {
				t.Errorf("state %s, local %s", out.State, res.State)
			}
		})
	}
}
