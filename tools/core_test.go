package tools

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

type event struct {
	kind   string
	fields map[string]any
}

// recorder collects emitted events.
func recorder() (*[]event, func(string, map[string]any)) {
	var evs []event
	return &evs, func(kind string, fields map[string]any) { evs = append(evs, event{kind, fields}) }
}

func TestLogAndEmit(t *testing.T) {
	cases := []struct {
		name  string
		call  Call
		out   any
		event event
	}{
		{"log default level", Call{Name: "nika:log", Args: map[string]any{"message": "hello"}},
			nil, event{"log", map[string]any{"level": "info", "message": "hello"}}},
		{"log with data", Call{Name: "nika:log", Args: map[string]any{"message": "m", "level": "warn", "data": map[string]any{"n": 1}}},
			nil, event{"log", map[string]any{"level": "warn", "message": "m", "data": map[string]any{"n": 1}}}},
		{"log null data kept", Call{Name: "nika:log", Args: map[string]any{"message": "m", "level": "debug", "data": nil}},
			nil, event{"log", map[string]any{"level": "debug", "message": "m", "data": nil}}},
		{"emit default payload", Call{Name: "nika:emit", Args: map[string]any{"event_type": "report.ready"}},
			map[string]any{}, event{"user_event", map[string]any{"event_type": "report.ready", "payload": map[string]any{}}}},
		{"emit payload", Call{Name: "nika:emit", Args: map[string]any{"event_type": "a_b.c1", "payload": []any{1, "x"}}},
			[]any{1, "x"}, event{"user_event", map[string]any{"event_type": "a_b.c1", "payload": []any{1, "x"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, emit := recorder()
			c.call.Emit = emit
			out, err := exec(t, c.call)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
			if len(*evs) != 1 || !reflect.DeepEqual((*evs)[0], c.event) {
				t.Errorf("events = %#v, want [%#v]", *evs, c.event)
			}
			// A nil Emit is a no-op.
			c.call.Emit = nil
			if _, err := exec(t, c.call); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAssert(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
		msg  string
	}{
		{"true", map[string]any{"condition": true}, true, "", ""},
		{"false default message", map[string]any{"condition": false}, nil, "NIKA-BUILTIN-ASSERT-001", "NIKA-BUILTIN-ASSERT-001: assertion failed"},
		{"false message", map[string]any{"condition": false, "message": "rows must be > 0"}, nil, "NIKA-BUILTIN-ASSERT-001", "NIKA-BUILTIN-ASSERT-001: rows must be > 0"},
		{"non-boolean", map[string]any{"condition": "true"}, nil, "NIKA-INVOKE-002", ""},
		{"null", map[string]any{"condition": nil}, nil, "NIKA-INVOKE-002", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:assert", Args: c.args})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if c.msg != "" && err.Error() != c.msg {
				t.Errorf("error = %q, want %q", err, c.msg)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %v", out)
			}
		})
	}
	_, err := exec(t, Call{Name: "nika:assert", Args: map[string]any{"condition": false}})
	if se := asSpec(err); se.Category != "validation_error" || se.Transient {
		t.Errorf("ASSERT-001 is %s transient=%v", se.Category, se.Transient)
	}
}

func TestWait(t *testing.T) {
	base := time.Date(2026, 6, 13, 9, 30, 0, 0, time.UTC)
	fake := func() time.Time { return base }
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		{"duration", map[string]any{"duration": "1ms"}, map[string]any{"waited_ms": 1}, ""},
		{"past until returns at once", map[string]any{"until": "2026-06-13T09:00:00Z"}, map[string]any{"waited_ms": 0}, ""},
		{"until now", map[string]any{"until": "2026-06-13T11:30:00+02:00"}, map[string]any{"waited_ms": 0}, ""},
		{"until within timeout", map[string]any{"until": "2026-06-13T09:30:00.002Z", "timeout": "1s"}, map[string]any{"waited_ms": 2}, ""},
		{"until beyond timeout", map[string]any{"until": "2026-06-13T10:30:00Z", "timeout": "59m"}, nil, "NIKA-BUILTIN-WAIT-001"},
		{"duration beyond timeout", map[string]any{"duration": "2h", "timeout": "1h"}, nil, "NIKA-BUILTIN-WAIT-001"},
		{"neither", map[string]any{}, nil, "NIKA-INVOKE-002"},
		{"both", map[string]any{"duration": "1s", "until": "2026-06-13T09:00:00Z"}, nil, "NIKA-INVOKE-002"},
		{"zero duration", map[string]any{"duration": "0s"}, nil, "NIKA-INVOKE-002"},
		{"over 24h", map[string]any{"duration": "25h"}, nil, "NIKA-INVOKE-002"},
		{"bad duration", map[string]any{"duration": "soon"}, nil, "NIKA-INVOKE-002"},
		{"bad until", map[string]any{"until": "tomorrow"}, nil, "NIKA-INVOKE-002"},
		{"bad timeout", map[string]any{"duration": "1ms", "timeout": "-1s"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:wait", Args: c.args, Now: fake})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

func TestWaitInterrupted(t *testing.T) {
	base := time.Date(2026, 6, 13, 9, 30, 0, 0, time.UTC)
	cause := errors.New("task deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	// Called directly: Execute would refuse the done context before the wait starts.
	in := &invocation{call: Call{Name: "nika:wait", Now: func() time.Time { return base }},
		args: map[string]any{"until": "2026-06-14T09:30:00Z"}}
	out, err := runWait(ctx, in)
	if out != nil || codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Fatalf("out, err = %v, %v", out, err)
	}
	if !errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
		t.Errorf("the error does not wrap the cause: %v", err)
	}
	// A past until does not look at ctx at all.
	in.args = map[string]any{"until": "2026-06-13T09:00:00Z"}
	if out, err := runWait(ctx, in); err != nil || !reflect.DeepEqual(out, map[string]any{"waited_ms": 0}) {
		t.Errorf("past until under a done ctx: %v, %v", out, err)
	}
}
