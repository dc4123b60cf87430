package journal

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/nikahq/nika/internal/fuzzbudget"
	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/workflow"
)

// journalFuzzSeeds are a real journal, damaged in the ways a crash or a hand can damage it.
func journalFuzzSeeds(t testing.TB) [][]byte {
	dir := t.TempDir()
	r, err := Create(dir, Header{RunID: "r-f", Workflow: "f", Vars: map[string]string{"a": "b"}, Time: time.Unix(0, 0)}, testWorkflow(t, twoTasks))
	if err != nil {
		t.Fatal(err)
	}
	r.Job(attempt("a", -1, 1), job("a", map[string]any{"t": 1}), nil).Settled(&planner.Report{Outcome: workflow.Outcome{Output: "x"}})
	r.End(planner.StatusSuccess, nil, time.Unix(1, 0))
	r.Close()
	raw, err := readFileBytes(Path(dir, "r-f"))
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{
		raw,
		raw[:len(raw)-7],
		flip(raw, 40),
		append(bytes.Clone(raw), raw...),
		[]byte("{}\n"),
		[]byte(`{"h":"","r":{}}` + "\n"),
		[]byte("\n\n"),
	}
}

func TestFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzRead", journalFuzzSeeds(t), fuzzbudget.Budget{Count: 16, Largest: 2 << 10, Total: 8 << 10})
}

// The reader never panics and, whatever the bytes, either reads a journal whose every record
// chains or says which line is damaged.
func FuzzRead(f *testing.F) {
	for _, s := range journalFuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Read(bytes.NewReader(data))
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Line < 1 || ce.Reason == "" {
				t.Fatalf("an error that names no line: %v", err)
			}
			return
		}
		if len(l.Records) == 0 || l.Records[0].Kind != KindRun {
			t.Fatalf("read a journal without a header: %+v", l.Records)
		}
		if l.size > int64(len(data)) {
			t.Fatalf("whole lines of %d bytes in %d bytes", l.size, len(data))
		}
	})
}
