package event

import (
	"io"
	"testing"
)

func benchEvent() Event {
	return Event{Seq: 42, TS: ts0, RunID: "r-01JDX", Kind: TaskCompleted, Task: "summarize", Attempt: 1,
		Iteration: 3, Fields: map[string]any{"status": "success", "timing": map[string]any{"duration_ms": 12}}}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := benchEvent()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNDJSONEmit(b *testing.B) {
	s := NewNDJSON(io.Discard)
	e := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		s.Emit(e)
	}
}

func BenchmarkMemoryEmit(b *testing.B) {
	s := NewMemory()
	e := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		s.Emit(e)
	}
}
