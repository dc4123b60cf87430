package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nikahq/nika/spec/canon"
)

// Deterministic returns the canonical event line with "ts", "run_id", "chain" and every "timing" object (at
// any depth of "fields", inside arrays too) removed: what the determinism contract compares (D17). The chain
// goes because it hashes the whole line, ts included. Nothing else is touched: a "timing" key whose value is
// not an object is data, and so are "ts", "run_id" or "chain" inside fields.
// The result is canonical JSON without a trailing newline; the input may end with one.
func Deterministic(line []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("event: deterministic: %w", err)
	}
	if obj == nil {
		return nil, errors.New("event: deterministic: line is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("event: deterministic: trailing data after the event object")
	}
	delete(obj, "ts")
	delete(obj, "run_id")
	delete(obj, ChainKey)
	if f, ok := obj["fields"]; ok {
		stripTiming(f)
	}
	return canon.Marshal(obj)
}

// stripTiming deletes, in place, every "timing" object below v.
func stripTiming(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[TimingKey].(map[string]any); ok {
			delete(x, TimingKey)
		}
		for _, e := range x {
			stripTiming(e)
		}
	case []any:
		for _, e := range x {
			stripTiming(e)
		}
	}
}
