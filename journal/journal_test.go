package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testWorkflow compiles a small workflow for the definition hashes.
func testWorkflow(t testing.TB, src string) *workflow.Workflow {
	t.Helper()
	an := spec.CheckSource("flow.nika.yaml", []byte(src), spec.CheckOptions{})
	if spec.HasErrors(an.Findings) {
		t.Fatalf("invalid test workflow: %+v", an.Findings)
	}
	w, err := workflow.Compile(an)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const twoTasks = `nika: v1
workflow: j
tasks:
  - id: a
    invoke: {tool: nika:log, args: {message: hi}}
  - id: b
    depends_on: [a]
    with: {x: "${{ tasks.a.output }}"}
    invoke: {tool: nika:log, args: {message: "${{ with.x }}"}}
`

func job(task string, fields map[string]any) *workflow.Job {
	return &workflow.Job{Verb: "invoke", Fields: fields, Iteration: -1, Attempt: 1}
}

func attempt(task string, iter, n int) planner.JobID {
	return planner.JobID{Task: task, Kind: planner.JobAttempt, Iteration: iter, Attempt: n, Finally: -1}
}

// A run's journal restores, in a resumed run, the jobs it journaled as succeeded with the same
// definition and inputs, and only those.
func TestResumeRestoresJournaledSuccesses(t *testing.T) {
	dir := t.TempDir()
	w := testWorkflow(t, twoTasks)
	r, err := Create(dir, Header{RunID: "r-1", Workflow: "j", Time: time.Unix(0, 0)}, w)
	if err != nil {
		t.Fatal(err)
	}
	fa := map[string]any{"tool": "nika:log"}
	ma := r.Job(attempt("a", -1, 1), job("a", fa), map[string]any{})
	if _, ok := ma.Restore(); ok {
		t.Fatal("a new run restored something")
	}
	ma.Settled(&planner.Report{Outcome: workflow.Outcome{Output: map[string]any{"n": 3, "s": "x"}}, Bindings: map[string]any{"k": 1.5}})
	mb := r.Job(attempt("b", -1, 1), job("b", map[string]any{"m": 1}), map[string]any{"x": 1})
	mb.Settled(&planner.Report{Outcome: workflow.Failed(spec.NewError(spec.CodeInvokeFailed, "boom", nil))})
	r.End(planner.StatusFailure, nil, time.Unix(1, 0))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertPrivate(t, filepath.Join(dir, ".nika", "runs"), Path(dir, "r-1"))

	l, err := ReadFile(Path(dir, "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := l.State(); st != "failure" {
		t.Fatalf("state %q", st)
	}
	r2, err := Resume(l, Header{Time: time.Unix(2, 0)}, nil, testWorkflow(t, twoTasks))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	got, ok := r2.Job(attempt("a", -1, 1), job("a", fa), map[string]any{}).Restore()
	if !ok || !got.Restored || got.Outcome.Output.(map[string]any)["n"] != 3 || got.Bindings["k"] != 1.5 {
		t.Fatalf("a not restored as journaled: %+v %v", got, ok)
	}
	if _, ok := r2.Job(attempt("a", -1, 1), job("a", map[string]any{"tool": "nika:other"}), map[string]any{}).Restore(); ok {
		t.Fatal("a job with other inputs was restored")
	}
	if _, ok := r2.Job(attempt("b", -1, 1), job("b", map[string]any{"m": 1}), map[string]any{"x": 1}).Restore(); ok {
		t.Fatal("a failed job was restored")
	}
	changed := testWorkflow(t, strings.Replace(twoTasks, "message: hi", "message: ho", 1))
	r3 := &Run{w: r2.w, defs: Definitions(changed), past: r2.past}
	if _, ok := r3.Job(attempt("a", -1, 1), job("a", fa), map[string]any{}).Restore(); ok {
		t.Fatal("a task whose definition changed was restored")
	}
}

func assertPrivate(t *testing.T, dir, file string) {
	t.Helper()
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Dir(file): 0o700, file: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), want)
		}
	}
}

// An agent's steps replay from the latest attempt that did not finish, and a resumed attempt
// that records them again leaves a journal a second resume replays whole.
func TestStepsReplayFromTheUnfinishedAttempt(t *testing.T) {
	dir := t.TempDir()
	w := testWorkflow(t, twoTasks)
	r, _ := Create(dir, Header{RunID: "r-2"}, w)
	f := map[string]any{"tool": "x"}
	m := r.Job(attempt("a", -1, 1), job("a", f), nil).(*jobMem)
	m.Record([]byte(`{"t":1}`))
	m.Record([]byte(`{"t":2}`))
	m.Settled(&planner.Report{Outcome: workflow.Failed(spec.NewError(spec.CodeInvokeFailed, "x", nil))})
	m2 := r.Job(attempt("a", -1, 2), job("a", f), nil).(*jobMem)
	m2.Record([]byte(`{"t":"a"}`))
	r.Close() // killed mid attempt 2

	l, err := ReadFile(Path(dir, "r-2"))
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := Resume(l, Header{}, nil, w)
	got := r2.Job(attempt("a", -1, 1), job("a", f), nil).Memo().Recorded()
	if len(got) != 1 || string(got[0]) != `{"t":"a"}` {
		t.Fatalf("replayed %q, want the unfinished attempt's one step", got)
	}
	m3 := r2.Job(attempt("a", -1, 1), job("a", f), nil).Memo()
	m3.Record(got[0])
	m3.Record([]byte(`{"t":"b"}`))
	r2.Close()
	l, _ = ReadFile(Path(dir, "r-2"))
	r3, _ := Resume(l, Header{}, nil, w)
	defer r3.Close()
	got = r3.Job(attempt("a", -1, 1), job("a", f), nil).Memo().Recorded()
	if len(got) != 2 || string(got[1]) != `{"t":"b"}` {
		t.Fatalf("second resume replays %q", got)
	}
}

// A paused job is answered by the resumed run (TASK[i] before TASK); without an answer it is not.
func TestPausedJobsTakeTheirAnswer(t *testing.T) {
	dir := t.TempDir()
	w := testWorkflow(t, twoTasks)
	r, _ := Create(dir, Header{RunID: "r-3"}, w)
	q := &workflow.Question{Mode: "input", Message: "name?"}
	for i := range 2 {
		r.Job(attempt("a", i, 1), job("a", nil), nil).Settled(&planner.Report{Outcome: workflow.Outcome{Pause: q}})
	}
	r.End(planner.StatusPaused, []planner.Paused{{Task: "a", Iteration: 0, Attempt: 1, Question: *q}, {Task: "a", Iteration: 1, Attempt: 1, Question: *q}}, time.Now())
	r.Close()
	l, _ := ReadFile(Path(dir, "r-3"))
	if qs := l.Questions(); len(qs) != 2 || qs[1].Iteration == nil || *qs[1].Iteration != 1 {
		t.Fatalf("questions %+v", qs)
	}
	r2, _ := Resume(l, Header{}, map[string]any{"a": "all", "a[1]": "one"}, w)
	defer r2.Close()
	for i, want := range []string{"all", "one"} {
		got, ok := r2.Job(attempt("a", i, 1), job("a", nil), nil).Restore()
		if !ok || got.Restored || got.Outcome.Output != want {
			t.Errorf("iteration %d: %+v %v, want the answer %q (not restored: its bindings run)", i, got, ok, want)
		}
	}
	r4, _ := Resume(mustRead(t, Path(dir, "r-3")), Header{}, nil, w)
	defer r4.Close()
	if _, ok := r4.Job(attempt("a", 0, 1), job("a", nil), nil).Restore(); ok {
		t.Error("a paused job without an answer was settled")
	}
}

func mustRead(t *testing.T, p string) *Log {
	t.Helper()
	l, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The reader accepts a torn last line (a process killed while writing), names the line of any
// other damage, and a resumed writer cuts the torn line before it appends.
func TestReadDamage(t *testing.T) {
	dir := t.TempDir()
	r, _ := Create(dir, Header{RunID: "r-4"}, testWorkflow(t, twoTasks))
	for i := range 3 {
		r.Job(attempt("a", i, 1), job("a", nil), nil).Settled(&planner.Report{Outcome: workflow.Outcome{Output: i}})
	}
	r.Close()
	path := Path(dir, "r-4")
	good, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(good, []byte("\n"))

	cases := []struct {
		name string
		data []byte
		line int // 0: reads
		torn bool
	}{
		{"intact", good, 0, false},
		{"torn last line", append(bytes.Clone(good), lines[1][:20]...), 0, true},
		{"flipped byte", flip(good, len(lines[0])+len(lines[1])+80), 3, false},
		{"line removed", join(lines[0], lines[2], lines[3]), 2, false},
		{"lines swapped", join(lines[0], lines[2], lines[1], lines[3]), 2, false},
		{"garbage line", join(lines[0], []byte("garbage\n"), lines[1]), 2, false},
		{"empty", nil, 1, false},
		{"no header", join(lines[1]), 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Read(bytes.NewReader(c.data))
			if c.line == 0 {
				if err != nil || l.Torn != c.torn {
					t.Fatalf("err %v, torn %v", err, l != nil && l.Torn)
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Line != c.line {
				t.Fatalf("err %v, want damage at line %d", err, c.line)
			}
		})
	}

	os.WriteFile(path, append(bytes.Clone(good), `{"h":"00`...), 0o600)
	l := mustRead(t, path)
	r2, err := Resume(l, Header{}, nil, testWorkflow(t, twoTasks))
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	l = mustRead(t, path)
	if l.Torn || l.Records[len(l.Records)-1].Kind != KindResume {
		t.Fatalf("the resumed journal did not cut its torn line: torn %v, last %s", l.Torn, l.Records[len(l.Records)-1].Kind)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func readFileBytes(p string) ([]byte, error) { return os.ReadFile(p) }

// A task's definition hash ignores comments, formatting and key order, and sees its values and
// its model.
func TestDefinitionsIgnoreFormatting(t *testing.T) {
	base := Definitions(testWorkflow(t, twoTasks))
	same := testWorkflow(t, `nika: v1
workflow: j
tasks:
  # a comment
  - invoke:   {args: {message: "hi"}, tool: "nika:log"}
    id: a
  - id: b
    depends_on: [a]
    with: {x: "${{ tasks.a.output }}"}
    invoke: {tool: nika:log, args: {message: "${{ with.x }}"}}
`)
	if got := Definitions(same); got["a"] != base["a"] || got["b"] != base["b"] {
		t.Fatalf("a reformatted task hashes differently: %v vs %v", got, base)
	}
	other := testWorkflow(t, strings.Replace(twoTasks, "depends_on: [a]", "depends_on: [a]\n    timeout: 5s", 1))
	if Definitions(other)["b"] == base["b"] {
		t.Fatal("a task given a timeout hashes the same")
	}
	w := testWorkflow(t, twoTasks)
	w.Tasks[0].Model = "mock/echo"
	if Definitions(w)["a"] == base["a"] {
		t.Fatal("a task on another model hashes the same")
	}
}
