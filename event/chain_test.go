package event

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

// unchain checks that text is an intact chained trace and returns it with every chain member removed:
// what the tests written before traces were chained compare.
func unchain(t *testing.T, text string) string {
	t.Helper()
	if _, err := VerifyChain(strings.NewReader(text)); err != nil {
		t.Fatalf("the trace does not verify: %v\n%s", err, text)
	}
	var b strings.Builder
	for line := range strings.Lines(text) {
		at := chainOffset([]byte(line))
		b.WriteString(line[:at] + line[at+chainMemberLen:])
	}
	return b.String()
}

// The chain member sits right after "attempt" when there is one, else first, and its value is the
// SHA-256 of the previous value's hex and the line without the member (computed here with crypto/sha256
// directly, from the bytes AppendJSON writes).
func TestChainRecipe(t *testing.T) {
	e1 := ev(1, TaskStarted, map[string]any{"verb": "exec"})
	e1.Task, e1.Attempt = "a", 2
	e2 := ev(2, Log, map[string]any{"message": "m"})
	var out bytes.Buffer
	s := NewNDJSON(&out)
	s.Emit(e1)
	s.Emit(e2)
	plain1, _ := e1.AppendJSON(nil)
	plain2, _ := e2.AppendJSON(nil)
	sum1 := sha256.Sum256(plain1)
	c1 := hex.EncodeToString(sum1[:])
	sum2 := sha256.Sum256(append([]byte(c1), plain2...))
	c2 := hex.EncodeToString(sum2[:])
	want := `{"attempt":2,"chain":"` + c1 + `",` + string(plain1[len(`{"attempt":2,`):]) + "\n" +
		`{"chain":"` + c2 + `",` + string(plain2[1:]) + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// Every kind of line a sink writes chains: with and without attempt and iteration, an encode_error line,
// and lines longer than the buffer a sink keeps (and than VerifyChain's read buffer).
func TestNDJSONChainVerifies(t *testing.T) {
	var out bytes.Buffer
	s := NewNDJSON(&out)
	events := []Event{
		ev(1, WorkflowStarted, map[string]any{"workflow": "w"}),
		{Seq: 2, TS: ts0, RunID: "r", Kind: TaskStarted, Task: "t", Attempt: 1, Iteration: 0, Fields: map[string]any{"verb": "exec"}},
		{Seq: 3, TS: ts0, RunID: "r", Kind: TaskRetrying, Task: "t", Attempt: 10, Iteration: NoIteration, Fields: map[string]any{"code": "X"}},
		ev(4, Log, map[string]any{"bad": math.NaN()}),
		ev(5, Log, map[string]any{"message": strings.Repeat("x", 3*maxRetainedBuf)}),
		ev(6, Log, map[string]any{"message": "after the big one"}),
	}
	for _, e := range events {
		s.Emit(e)
	}
	n, err := VerifyChain(bytes.NewReader(out.Bytes()))
	if err != nil || n != len(events) {
		t.Fatalf("VerifyChain = %d, %v; want %d, nil", n, err, len(events))
	}
	if !strings.Contains(out.String(), `{"attempt":10,"chain":"`) {
		t.Errorf("no chain after a two-digit attempt:\n%s", out.String())
	}
}

// A trace cut back after a failed write is a valid prefix of the chain.
func TestNDJSONChainOfACutTrace(t *testing.T) {
	w := &failingWriter{ok: 2}
	s := NewNDJSON(w)
	for i := int64(1); i <= 4; i++ {
		s.Emit(ev(i, Log, map[string]any{"message": "m"}))
	}
	n, err := VerifyChain(strings.NewReader(strings.Join(w.lines, "")))
	if err != nil || n != 2 {
		t.Errorf("VerifyChain = %d, %v; want 2, nil", n, err)
	}
}

// One sink, one chain: two sinks fed the same stream write the same bytes.
func TestChainIsPerSink(t *testing.T) {
	var a, b bytes.Buffer
	f := Fanout{NewNDJSON(&a), NewNDJSON(&b)}
	f.Emit(ev(1, Log, nil))
	f.Emit(ev(2, Log, nil))
	if a.String() != b.String() {
		t.Errorf("two sinks, two traces:\n%s\n%s", a.String(), b.String())
	}
}
