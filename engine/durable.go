package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nikahq/nika/journal"
	"github.com/nikahq/nika/tools"
)

// Durable runs (issue 15): a run keeps a journal (package journal) under its run directory,
// which a later process resumes. The caller opens it (CreateJournal, ResumeJournal), hands it to
// Execute (RunOptions.Journal), which records the run's end in it, and closes it.

// CreateJournal starts the journal of a prepared run in dir, or, for dir "", under the engine's
// run directory (.nika/runs/<run-id>).
func (e *Engine) CreateJournal(dir string, p *Prepared, h journal.Header) (*journal.Run, error) {
	h.RunID, h.Workflow = p.ID, p.Workflow.Name
	if h.Time.IsZero() {
		h.Time = e.opts.Clock()
	}
	if dir != "" {
		return journal.CreateAt(dir, h, p.Workflow)
	}
	return journal.Create(e.opts.RunDir, h, p.Workflow)
}

// ResumeJournal goes on with the journal l for the prepared run p (whose ID must be the
// journal's), with the answers ParseAnswers made.
func (e *Engine) ResumeJournal(p *Prepared, l *journal.Log, h journal.Header, answers map[string]any) (*journal.Run, error) {
	if id := l.Header().RunID; id != p.ID {
		return nil, fmt.Errorf("the journal %s is of run %s, not %s", l.Path, id, p.ID)
	}
	if h.Time.IsZero() {
		h.Time = e.opts.Clock()
	}
	return journal.Resume(l, h, answers, p.Workflow)
}

// ParseAnswers checks answers (`--answer TASK=VALUE`, TASK or TASK[i]) against the questions
// the journal's run waits on and turns each into its prompt's value (tools.ParseAnswer). An
// answer to no open question is an error that lists the open ones.
func ParseAnswers(l *journal.Log, texts map[string]string) (map[string]any, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	qs := l.Questions()
	names := make([]string, 0, len(texts))
	for name := range texts {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]any, len(texts))
	for _, name := range names {
		task, iter := splitAnswerName(name)
		var match *journal.PausedRecord
		for i := range qs {
			q := &qs[i]
			if q.Task == task && (iter < 0 || q.Iteration != nil && *q.Iteration == iter) {
				match = q
				break
			}
		}
		if match == nil {
			return nil, fmt.Errorf("--answer %s: the run waits for no answer from %s%s", name, name, openQuestions(qs))
		}
		v, err := tools.ParseAnswer(match.Question.Mode, match.Question.Choices, texts[name])
		if err != nil {
			return nil, fmt.Errorf("--answer %s: %v", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// splitAnswerName splits "task[3]" into ("task", 3), and "task" into ("task", -1).
func splitAnswerName(name string) (string, int) {
	if i := strings.LastIndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		if n, err := strconv.Atoi(name[i+1 : len(name)-1]); err == nil && n >= 0 {
			return name[:i], n
		}
	}
	return name, -1
}

func openQuestions(qs []journal.PausedRecord) string {
	if len(qs) == 0 {
		return " (it waits for none)"
	}
	var names []string
	for _, q := range qs {
		names = append(names, QuestionName(q))
	}
	return " (it waits for " + strings.Join(names, ", ") + ")"
}

// QuestionName is how --answer names a question: TASK, or TASK[i] in a for_each.
func QuestionName(q journal.PausedRecord) string {
	if q.Iteration != nil {
		return fmt.Sprintf("%s[%d]", q.Task, *q.Iteration)
	}
	return q.Task
}
