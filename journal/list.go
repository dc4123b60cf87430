package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Summary is one run of a run directory, as its journal tells it.
type Summary struct {
	RunID    string
	Workflow string
	File     string
	State    string // the last process's end state; "unfinished" when it ended without one (killed, or still running)
	Started  time.Time
	Ended    time.Time // zero while unfinished
	Path     string
	Err      error // the journal could not be read (its other fields are what could be)
}

// StateUnfinished is a run whose last process wrote no end record.
const StateUnfinished = "unfinished"

// Summarize reads a journal's summary.
func Summarize(path string) Summary {
	s := Summary{Path: path, RunID: filepath.Base(filepath.Dir(path)), State: StateUnfinished}
	l, err := ReadFile(path)
	if err != nil {
		s.Err = err
		if h, herr := readHeader(path); herr == nil {
			s.fill(h)
		}
		return s
	}
	s.fill(&l.Records[0])
	if st, at := l.State(); st != "" {
		s.State, s.Ended = st, at
	}
	return s
}

func (s *Summary) fill(h *Record) {
	s.RunID, s.Workflow, s.File = h.RunID, h.Workflow, h.File
	s.Started, _ = time.Parse(time.RFC3339Nano, h.Time)
}

// State is how the journal's last process ended and when; "" when it has no end record after
// its last run or resume record.
func (l *Log) State() (string, time.Time) {
	for i := len(l.Records) - 1; i >= 0; i-- {
		switch r := &l.Records[i]; r.Kind {
		case KindEnd:
			at, _ := time.Parse(time.RFC3339Nano, r.Time)
			return r.State, at
		case KindRun, KindResume:
			return "", time.Time{}
		}
	}
	return "", time.Time{}
}

// Header is the journal's run record.
func (l *Log) Header() *Record { return &l.Records[0] }

// Inputs is the record of the inputs the journal's last process ran with: its last resume
// record, or the run record (vars, seed, model, file).
func (l *Log) Inputs() *Record {
	for i := len(l.Records) - 1; i > 0; i-- {
		if l.Records[i].Kind == KindResume {
			return &l.Records[i]
		}
	}
	return &l.Records[0]
}

// Questions are what the journal's run waits on, if its last process ended paused.
func (l *Log) Questions() []PausedRecord {
	if st, _ := l.State(); st != StatusPaused {
		return nil
	}
	for i := len(l.Records) - 1; i >= 0; i-- {
		if l.Records[i].Kind == KindEnd {
			return l.Records[i].Questions
		}
	}
	return nil
}

// List summarizes every run under a run directory's .nika/runs, oldest first (run ids are
// time-ordered).
func List(runDir string) ([]Summary, error) {
	root := filepath.Join(runDir, ".nika", "runs")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, e := range entries {
		p := filepath.Join(root, e.Name(), FileName)
		if _, err := os.Stat(p); err != nil || !e.IsDir() {
			continue
		}
		out = append(out, Summarize(p))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// Find resolves what --resume names to a journal file: "last" (the newest run of the workflow
// file under the run directory), a trace file or a journal file (its run), or a run id.
func Find(runDir, ref, workflowFile string) (string, error) {
	switch {
	case ref == "last":
		abs, _ := filepath.Abs(workflowFile)
		runs, err := List(runDir)
		if err != nil {
			return "", err
		}
		for i := len(runs) - 1; i >= 0; i-- {
			if runs[i].File == abs {
				return runs[i].Path, nil
			}
		}
		return "", fmt.Errorf("no run of %s in %s", workflowFile, filepath.Join(runDir, ".nika", "runs"))
	case strings.HasSuffix(ref, ".ndjson") || strings.ContainsRune(ref, os.PathSeparator):
		id, err := runIDOf(ref)
		if err != nil {
			return "", err
		}
		return Path(runDir, id), nil
	}
	if !validRunID(ref) {
		return "", fmt.Errorf("%q is not a run id (r-…), a trace or journal file, or `last`", ref)
	}
	p := Path(runDir, ref)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no journal for run %s: %w", ref, err)
	}
	return p, nil
}

// runIDOf reads the run id of a trace's or a journal's first line.
func runIDOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return "", fmt.Errorf("%s: no first line: %w", path, err)
	}
	var first struct {
		RunID string `json:"run_id"` // a trace's event
		R     *struct {
			RunID string `json:"run_id"`
		} `json:"r"` // a journal's header
	}
	if err := json.Unmarshal(line, &first); err != nil {
		return "", fmt.Errorf("%s: the first line is not a trace event or a journal record: %v", path, err)
	}
	id := first.RunID
	if first.R != nil && first.R.RunID != "" {
		id = first.R.RunID
	}
	if !validRunID(id) {
		return "", fmt.Errorf("%s: its first line names no run", path)
	}
	return id, nil
}

// validRunID keeps a run id to one path element.
func validRunID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`) && strings.HasPrefix(id, "r-")
}

// readHeader decodes the first record of a journal without verifying the rest.
func readHeader(path string) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var ls struct {
		R Record `json:"r"`
	}
	if err := json.Unmarshal(line, &ls); err != nil {
		return nil, err
	}
	return &ls.R, nil
}
