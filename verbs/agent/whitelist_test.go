package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

// AGENT.md §13.2: batch [allowed, denied] fails NIKA-SEC-002 and dispatches neither call.
func TestWhitelistViolationOnSecondCallDispatchesNone(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"),
		providertest.Call{ID: "b", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:read" {
		t.Fatalf("got %v", out.Err)
	}
	if execs.Load() != 0 {
		t.Fatalf("%d executor calls, want 0", execs.Load())
	}
	for _, l := range ev.lines {
		if strings.HasPrefix(l, "tool_invoked") {
			t.Fatalf("dispatched: %s", l)
		}
	}
}

// §13.2: control character, padding and a 257-byte name each fail NIKA-SEC-002 with zero dispatch
// (an allowed sibling before the offender included); details.tool is redacted. The reply comes
// whole (plainOnly): under tools "**" a streamed turn starts calls early, and an unclean name
// later in it halts and cancels them instead (TestOverlapUncleanNameHaltsEarlyBatch).
func TestUncleanNameFailsWithZeroDispatch(t *testing.T) {
	long := "nika:" + strings.Repeat("h", 252)
	for _, bad := range []string{"nika:ha\x07sh", " nika:hash", "nika:hash ", long} {
		p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "x", Name: bad, Input: `{}`}))
		v, job, ev := setup(t, plainOnly{p}, map[string]any{"prompt": "p", "tools": []any{"**"}}, 8)
		var execs atomic.Int32
		v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
			execs.Add(1)
			return "", nil, nil
		}
		out := v.Run(context.Background(), job)
		if out.Err == nil || out.Err.Code != CodeWhitelist {
			t.Fatalf("%q: %v", bad, out.Err)
		}
		tool, _ := out.Err.Details["tool"].(string)
		if len([]rune(tool)) > 64 || strings.ContainsFunc(tool, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("%q: details.tool %q", bad, tool)
		}
		if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
			t.Fatalf("%q: dispatched", bad)
		}
	}
}

// §13.7 / §1.2: a negated glob removes a tool from the offer and refuses a call to it.
func TestWhitelistNegationDeniesOfferAndCall(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "r", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, ev := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*", "!nika:read"}}, 8)
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:read" {
		t.Fatalf("got %v", out.Err)
	}
	for _, d := range p.Requests()[0].Tools {
		if d.Name == "nika:read" {
			t.Fatal("negated nika:read offered")
		}
	}
	if execs.Load() != 0 || countPrefix(ev.lines, "tool_invoked") != 0 {
		t.Fatal("a call was dispatched")
	}
}

// D29: permits.tools intersects the task's whitelist, for the offer and for calls.
func TestPermitsToolsIntersectsWhitelist(t *testing.T) {
	p := providertest.NewScripted(providertest.ToolCalls("", hashCall("a", "1"), providertest.Call{ID: "j", Name: "nika:jq", Input: `{}`}))
	v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:*"}}, 8)
	job.Permits = &spec.Permits{Tools: []string{"nika:hash", "nika:read"}, ToolsSet: true}
	var execs atomic.Int32
	v.exec = func(context.Context, dispatch.Call) (string, json.RawMessage, error) {
		execs.Add(1)
		return "", nil, nil
	}
	out := v.Run(context.Background(), job)
	if out.Err == nil || out.Err.Code != CodeWhitelist || out.Err.Details["tool"] != "nika:jq" || execs.Load() != 0 {
		t.Fatalf("got %v (execs %d)", out.Err, execs.Load())
	}
	var names []string
	for _, d := range p.Requests()[0].Tools {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"nika:hash", "nika:read"}) {
		t.Fatalf("offered %v", names)
	}
	// permits.tools admits it but the task's tools do not: also refused.
	p = providertest.NewScripted(providertest.ToolCalls("", providertest.Call{ID: "r", Name: "nika:read", Input: `{"path":"x"}`}))
	v, job, _ = setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
	job.Permits = &spec.Permits{Tools: []string{"nika:*"}, ToolsSet: true}
	if out := v.Run(context.Background(), job); out.Err == nil || out.Err.Code != CodeWhitelist {
		t.Fatalf("got %v", out.Err)
	}
}
