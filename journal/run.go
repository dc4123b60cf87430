package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nikahq/nika/planner"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/workflow"
)

// FileName is the journal's name in its run's directory.
const FileName = "journal.ndjson"

// Dir is the directory of a run's journal under a run directory: .nika/runs/<run-id>.
func Dir(runDir, runID string) string { return filepath.Join(runDir, ".nika", "runs", runID) }

// Path is the journal file of a run under a run directory.
func Path(runDir, runID string) string { return filepath.Join(Dir(runDir, runID), FileName) }

// Header says which run a journal is of (its first record).
type Header struct {
	RunID    string
	Workflow string
	File     string // absolute; "" for a workflow submitted as text
	Source   []byte // the workflow's bytes (only their hash is kept)
	Vars     map[string]string
	Seed     uint64
	Model    string
	Version  string
	Time     time.Time
}

// Run is one run's journal: it records what the run settles and, for a resumed run, remembers
// what earlier processes of it journaled. It implements planner.Memory.
type Run struct {
	w       *Writer
	defs    map[string]string
	past    *past
	answers map[string]any
}

// Create starts the journal of a new run at Path(runDir, h.RunID): the directories are private
// (0700) and the file is the owner's alone (0600), since outputs may hold secret values.
func Create(runDir string, h Header, w *workflow.Workflow) (*Run, error) {
	dir := Dir(runDir, h.RunID)
	if err := os.MkdirAll(filepath.Join(runDir, ".nika"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Dir(dir), 0o700); err != nil { // .nika/runs
		return nil, err
	}
	return CreateAt(dir, h, w)
}

// CreateAt starts the journal of a new run in the directory dir (made 0700 if it does not
// exist), as FileName.
func CreateAt(dir string, h Header, w *workflow.Workflow) (*Run, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	wr, err := createWriter(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	rec := &Record{Kind: KindRun, RunID: h.RunID, Workflow: h.Workflow, File: h.File, Source: sum(h.Source), Vars: h.Vars,
		Seed: h.Seed, Model: h.Model, Version: h.Version, Time: stamp(h.Time)}
	b, err := encode(rec)
	if err != nil {
		wr.Close()
		return nil, err
	}
	wr.AppendWritten(b) // the header is on file before the run starts: a killed run is always found
	if err := wr.Err(); err != nil {
		wr.Close()
		return nil, fmt.Errorf("the journal %s: %w", wr.Path(), err)
	}
	return &Run{w: wr, defs: Definitions(w)}, nil
}

// Resume goes on with the run of a journal read back: what it journaled is remembered (Job),
// answers (by TASK or TASK[i]) answer the questions it paused on, and a resume record (with the
// inputs of h this process runs with: file, source, vars, seed, model) is appended after the
// journal's last whole line.
func Resume(l *Log, h Header, answers map[string]any, w *workflow.Workflow) (*Run, error) {
	wr, err := appendWriter(l.Path, l.size, l.prev)
	if err != nil {
		return nil, fmt.Errorf("the journal %s: %w", l.Path, err)
	}
	rec := &Record{Kind: KindResume, File: h.File, Source: sum(h.Source), Vars: h.Vars, Seed: h.Seed, Model: h.Model,
		Version: h.Version, Time: stamp(h.Time), Answers: answers}
	if err := appendRecord(wr, rec); err != nil {
		wr.Close()
		return nil, err
	}
	return &Run{w: wr, defs: Definitions(w), past: index(l), answers: answers}, nil
}

// End records how this process's run ended; paused lists the questions of a paused run.
func (r *Run) End(state planner.Status, paused []planner.Paused, at time.Time) {
	rec := &Record{Kind: KindEnd, State: string(state), Time: stamp(at)}
	for _, p := range paused {
		pr := PausedRecord{Task: p.Task, Attempt: p.Attempt, Question: p.Question}
		if p.Iteration >= 0 {
			pr.Iteration = intp(p.Iteration)
		}
		rec.Questions = append(rec.Questions, pr)
	}
	appendRecord(r.w, rec) // an encoding failure is impossible here: strings and ints
}

// Close writes and syncs what is left and closes the file; a failure to write any of it is
// reported, naming the file.
func (r *Run) Close() error { return r.w.Close() }

// Path is the journal's file.
func (r *Run) Path() string { return r.w.Path() }

// Stats are the writer's counts.
func (r *Run) Stats() Stats { return r.w.Stats() }

func appendRecord(w *Writer, rec *Record) error {
	b, err := encode(rec)
	if err != nil {
		return fmt.Errorf("the journal %s: encoding a %s record: %w", w.Path(), rec.Kind, err)
	}
	w.Append(b)
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// key names a job across processes of one run: a resumed run's attempt 1 is the same job as
// the attempt of the process before it that succeeded, if its definition and inputs are.
type key struct {
	task               string
	iteration, finally int
	def                string
	in                 [sha256.Size]byte
}

// Job implements planner.Memory: attempts and on_finally steps are journaled.
func (r *Run) Job(id planner.JobID, job *workflow.Job, with map[string]any) planner.JobMemory {
	if id.Kind != planner.JobAttempt && id.Kind != planner.JobFinally {
		return nil
	}
	in, ok := inputs(job, with)
	if !ok {
		return nil
	}
	return &jobMem{run: r, id: id, k: key{task: id.Task, iteration: id.Iteration, finally: id.Finally, def: r.defs[id.Task], in: in}}
}

// jobMem is one job's journal; it is also the job's workflow.Memo.
type jobMem struct {
	run *Run
	id  planner.JobID
	k   key
	mu  sync.Mutex
	n   int // steps recorded
}

func (m *jobMem) Restore() (planner.Recall, bool) {
	p := m.run.past
	if p == nil {
		return planner.Recall{}, false
	}
	if rec := p.success[m.k]; rec != nil {
		out, err := workflow.DecodeValue(string(rec.Output))
		if err != nil {
			return planner.Recall{}, false
		}
		var bindings map[string]any
		if len(rec.Bindings) > 0 {
			v, err := workflow.DecodeValue(string(rec.Bindings))
			b, isMap := v.(map[string]any)
			if err != nil || !isMap {
				return planner.Recall{}, false
			}
			bindings = b
		}
		return planner.Recall{Outcome: workflow.Outcome{Output: out}, Bindings: bindings, Restored: true}, true
	}
	if p.paused[m.k] != nil && m.id.Kind == planner.JobAttempt {
		if v, ok := m.run.answer(m.k.task, m.k.iteration); ok {
			return planner.Recall{Outcome: workflow.Outcome{Output: v}}, true
		}
	}
	return planner.Recall{}, false
}

// answer is the answer given for a task's question: TASK[i] first, then TASK.
func (r *Run) answer(task string, iteration int) (any, bool) {
	if iteration >= 0 {
		if v, ok := r.answers[task+"["+strconv.Itoa(iteration)+"]"]; ok {
			return v, true
		}
	}
	v, ok := r.answers[task]
	return v, ok
}

func (m *jobMem) Memo() workflow.Memo { return m }

// Recorded is what the latest unfinished attempt of this job journaled of its own steps.
func (m *jobMem) Recorded() []json.RawMessage {
	if m.run.past == nil {
		return nil
	}
	return m.run.past.steps[m.k]
}

func (m *jobMem) Record(step json.RawMessage) {
	m.mu.Lock()
	n := m.n
	m.n++
	m.mu.Unlock()
	b := m.head(make([]byte, 0, 256+len(step)), KindStep)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"data":`...)
	b = append(b, step...)
	m.run.w.AppendWritten(append(b, '}')) // on file before the verb's next request goes out
}

// head writes the fields a job's records share, as encode would: the record's opening, its
// kind, the job's task, iteration, attempt, step, definition and inputs hashes. A job record
// is encoded by hand: one is written per job, on its goroutine.
func (m *jobMem) head(b []byte, kind string) []byte {
	b = append(b, `{"kind":"`...)
	b = append(b, kind...)
	b = append(b, `","task":`...)
	b, _ = canon.Append(b, m.id.Task)
	if m.id.Iteration >= 0 {
		b = append(b, `,"iteration":`...)
		b = strconv.AppendInt(b, int64(m.id.Iteration), 10)
	}
	if m.id.Attempt > 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(m.id.Attempt), 10)
	}
	if m.id.Kind == planner.JobFinally {
		b = append(b, `,"on_finally":`...)
		b = strconv.AppendInt(b, int64(m.id.Finally), 10)
	}
	b = append(b, `,"def":"`...)
	b = append(b, m.k.def...)
	b = append(b, `","in":"`...)
	b = hex.AppendEncode(b, m.k.in[:])
	return append(b, '"')
}

// Settled journals the job's outcome. A success whose output has no JSON encoding is not
// journaled: the job runs again on a resume.
func (m *jobMem) Settled(rep *planner.Report) {
	out := rep.Outcome
	b := m.head(make([]byte, 0, 256), KindJob)
	var err error
	switch {
	case out.Pause != nil:
		b = append(b, `,"status":"paused","question":`...)
		q, _ := json.Marshal(out.Pause) // strings only
		b = append(b, q...)
	case out.Err != nil:
		status := StatusFailure
		if out.Err.Code == spec.CodeCancel {
			status = StatusCancelled
		}
		b = append(b, `,"status":"`+status+`","error":`...)
		e, jerr := json.Marshal(errorRecord(out.Err))
		if jerr != nil { // details with no JSON encoding: the error without them
			er := errorRecord(out.Err)
			er.Details = nil
			e, _ = json.Marshal(er)
		}
		b = append(b, e...)
	default:
		b = append(b, `,"status":"success","output":`...)
		if b, err = canon.Append(b, out.Output); err != nil {
			return
		}
		if rep.Bindings != nil {
			b = append(b, `,"bindings":`...)
			if b, err = canon.Append(b, rep.Bindings); err != nil {
				return
			}
		}
	}
	m.run.w.Append(append(b, '}'))
}
