package temporal

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"
)

// A run whose canonical lines do not fit in the result returns none of them, and QueryEvents
// pages through them all after the run ended: the same lines as a local run's.
func TestEventsPageThroughTheQuery(t *testing.T) {
	defer func(r, q int) { resultEventBytes, maxQueryBytes = r, q }(resultEventBytes, maxQueryBytes)
	resultEventBytes, maxQueryBytes = 100, 300
	rc := scriptCases[0]
	want, _ := rc.local(t, t.Context())
	var env *testsuite.TestWorkflowEnvironment
	out, env := rc.onTemporal(t, nil)
	if out.Events != nil || out.EventCount != len(want) {
		t.Fatalf("the result carries %d lines and counts %d; want none and %d", len(out.Events), out.EventCount, len(want))
	}
	var got []string
	pages := 0
	for len(got) < out.EventCount {
		v, err := env.QueryWorkflow(QueryEvents, len(got))
		var lines []string
		if err == nil {
			err = v.Get(&lines)
		}
		if err != nil || len(lines) == 0 {
			t.Fatalf("page from %d: %d lines, %v", len(got), len(lines), err)
		}
		if size(lines) > maxQueryBytes && len(lines) > 1 {
			t.Errorf("a page of %d bytes", size(lines))
		}
		got = append(got, lines...)
		pages++
	}
	if pages < 2 {
		t.Errorf("%d pages", pages)
	}
	sameLines(t, want, got)
}

func TestPage(t *testing.T) {
	defer func(q int) { maxQueryBytes = q }(maxQueryBytes)
	maxQueryBytes = 5
	lines := []string{"aa", "bb", "cccccccc", "d"}
	for from, want := range map[int]string{-1: "aa,bb", 0: "aa,bb", 1: "bb", 2: "cccccccc", 3: "d", 4: "", 9: ""} {
		if got := strings.Join(page(lines, from), ","); got != want {
			t.Errorf("page from %d = %q, want %q", from, got, want)
		}
	}
}
