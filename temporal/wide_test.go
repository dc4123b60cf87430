package temporal

import (
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/planner"
)

// A wide for_each runs on Temporal without a coroutine per job: 1,000 iterations finish (no
// deadlock detection, no quadratic dispatch), each verb called once.
func TestWideForEach(t *testing.T) {
	const n = 1000
	v := &countingVerb{}
	items := "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]"
	rc := runCase{name: "wide", src: head + "vars:\n  items: { type: array }\ntasks:\n  - id: fe\n    for_each: ${{ vars.items }}\n    exec: { command: \"x ${{ index }}\" }\n",
		heartbeat: time.Hour, // on a loaded machine the test environment may not start every job within a short one
		vars:      map[string]string{"items": items}, verbs: func() map[string]planner.Verb { return map[string]planner.Verb{"exec": v} }}
	out, _ := rc.onTemporal(t, nil)
	if out.State != "success" || v.calls.Load() != n {
		t.Errorf("state %s after %d calls, want success after %d", out.State, v.calls.Load(), n)
	}
}
