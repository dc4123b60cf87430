package tools

import (
	"context"
	"time"

	"github.com/nikahq/nika/spec"
)

// Core builtins (LANGUAGE.md §7.2): log, emit, assert, wait.

const (
	codeAssert = spec.CodeBuiltinAssert
	codeWait   = spec.CodeBuiltinWait
)

// runLog emits one "log" event {level, message, data?}; the event sink masks it and writes the
// stderr record. Output: null.
func runLog(_ context.Context, in *invocation) (any, error) {
	msg, err := in.str("message", "")
	if err != nil {
		return nil, err
	}
	level, err := in.str("level", "info")
	if err != nil {
		return nil, err
	}
	fields := map[string]any{"level": level, "message": msg}
	if d, ok := in.args["data"]; ok {
		fields["data"] = d
	}
	in.emit("log", fields)
	return nil, nil
}

// runEmit emits one "user_event" {event_type, payload}. Output: the payload ({} by default).
func runEmit(_ context.Context, in *invocation) (any, error) {
	typ, err := in.str("event_type", "")
	if err != nil {
		return nil, err
	}
	payload, ok := in.args["payload"]
	if !ok {
		payload = map[string]any{}
	}
	in.emit("user_event", map[string]any{"event_type": typ, "payload": payload})
	return payload, nil
}

// runAssert fails with NIKA-BUILTIN-ASSERT-001 when condition is false. Output: true.
func runAssert(_ context.Context, in *invocation) (any, error) {
	cond, err := in.boolean("condition", false)
	if err != nil {
		return nil, err
	}
	msg, err := in.str("message", "assertion failed")
	if err != nil {
		return nil, err
	}
	if !cond {
		return nil, in.fail(codeAssert, "%s", msg)
	}
	return true, nil
}

// runWait sleeps for duration, or until an RFC 3339 time read against the engine clock, and
// returns {waited_ms}: the planned wait in whole milliseconds (0 for a past until), so the
// output does not depend on timer jitter. A wait longer than timeout fails at once with
// NIKA-BUILTIN-WAIT-001. A done ctx interrupts it with NIKA-CANCEL-001 (see Execute).
func runWait(ctx context.Context, in *invocation) (any, error) {
	var d time.Duration
	switch {
	case in.has("duration"):
		s, err := in.str("duration", "")
		if err != nil {
			return nil, err
		}
		if d, err = time.ParseDuration(s); err != nil || d <= 0 || d > 24*time.Hour {
			return nil, in.badValue("duration", s, "a Go duration greater than 0 and at most 24h")
		}
	case in.has("until"):
		s, err := in.str("until", "")
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, in.badValue("until", s, "an RFC 3339 time")
		}
		d = max(t.Sub(in.now()), 0)
	}
	if in.has("timeout") {
		s, err := in.str("timeout", "")
		if err != nil {
			return nil, err
		}
		limit, err := time.ParseDuration(s)
		if err != nil || limit <= 0 {
			return nil, in.badValue("timeout", s, "a Go duration greater than 0")
		}
		if d > limit {
			return nil, in.fail(codeWait, "the wait of %s would exceed the timeout of %s", d, limit)
		}
	}
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, cancelError(ctx)
		case <-timer.C:
		}
	}
	return map[string]any{"waited_ms": int(d / time.Millisecond)}, nil
}
