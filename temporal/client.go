package temporal

// The client side of a run on Temporal, for whoever submits and answers runs (`nika answer`,
// `nika serve --temporal`): starting or re-attaching to a run's workflow, following its
// canonical lines, its open questions and the answers to them. The workflow id is the run id.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/workflow"
)

// ErrNoRun is the error of a run id the Temporal namespace has no workflow of.
var ErrNoRun = errors.New("no such run")

// AnswerError is an answer a run cannot take: it waits for no question of that name (NotWaiting),
// or the text is no answer to its question. Open are the questions it waits on.
type AnswerError struct {
	Name       string
	NotWaiting bool
	Reason     string
	Open       []Question
}

func (e *AnswerError) Error() string {
	if e.NotWaiting {
		return fmt.Sprintf("%s: the run waits for no answer from %s%s", e.Name, e.Name, openList(e.Open))
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Reason)
}

func openList(qs []Question) string {
	if len(qs) == 0 {
		return " (it waits for none)"
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.name()
	}
	return " (it waits for " + strings.Join(names, ", ") + ")"
}

// Name is the question's name in an answer: TASK, or TASK[i] for one for_each iteration.
func (q Question) Name() string { return q.name() }

// notFound maps the service's NotFound to ErrNoRun.
func notFound(runID string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w %s: %v", ErrNoRun, runID, err)
	}
	return err
}

// Start starts the run's workflow under its run id (in.RunID), or, when a workflow of that id
// runs or ran already (a submitter that restarted), returns that one to follow.
func Start(ctx context.Context, c client.Client, queue string, in Input) (client.WorkflowRun, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: in.RunID, TaskQueue: queue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true}, WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return c.GetWorkflow(ctx, in.RunID, ""), nil
	}
	return run, err
}

// Questions are the questions the run waits on (QueryQuestions), in the order they were asked.
func Questions(ctx context.Context, c client.Client, runID string) ([]Question, error) {
	v, err := c.QueryWorkflow(ctx, runID, "", QueryQuestions)
	if err != nil {
		return nil, notFound(runID, err)
	}
	var qs []Question
	if err := v.Get(&qs); err != nil {
		return nil, err
	}
	return qs, nil
}

// Events are the run's canonical lines from index from on, one page of them (QueryEvents).
func Events(ctx context.Context, c client.Client, runID string, from int) ([]string, error) {
	v, err := c.QueryWorkflow(ctx, runID, "", QueryEvents, from)
	if err != nil {
		return nil, notFound(runID, err)
	}
	var lines []string
	err = v.Get(&lines)
	return lines, err
}

// CheckAnswers checks answers (TASK or TASK[i] to the text, as `--answer TASK=VALUE` gives
// them) against the open questions qs as the workflow will take them: a name answers every open
// question of that task (TASK) or that one iteration's (TASK[i]), and its text must be an
// answer to each (tools.ParseAnswer). The first error, by name, is an *AnswerError.
func CheckAnswers(qs []Question, texts map[string]string) error {
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		matched := false
		for _, q := range qs {
			if n != q.name() && n != q.Task {
				continue
			}
			matched = true
			if _, err := tools.ParseAnswer(q.Mode, q.Choices, texts[n]); err != nil {
				return &AnswerError{Name: n, Reason: err.Error(), Open: qs}
			}
		}
		if !matched {
			return &AnswerError{Name: n, NotWaiting: true, Open: qs}
		}
	}
	return nil
}

// SendAnswers checks the answers against the run's open questions (CheckAnswers) and signals
// each to the run (SignalAnswer), in name order. An answer is taken when the workflow reads it:
// one to a question withdrawn in between (a cancellation, a timeout) is dropped there.
func SendAnswers(ctx context.Context, c client.Client, runID string, texts map[string]string) error {
	qs, err := Questions(ctx, c, runID)
	if err != nil {
		return err
	}
	if err := CheckAnswers(qs, texts); err != nil {
		return err
	}
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := c.SignalWorkflow(ctx, runID, "", SignalAnswer, Answer{Name: n, Text: texts[n]}); err != nil {
			return notFound(runID, err)
		}
	}
	return nil
}

// Status is the workflow's status, "running", "completed", "cancelled", … (the service's
// name, lower case).
func Status(ctx context.Context, c client.Client, runID string) (string, error) {
	d, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return "", notFound(runID, err)
	}
	s := d.GetWorkflowExecutionInfo().GetStatus().String()
	return strings.ToLower(strings.TrimPrefix(s, "WORKFLOW_EXECUTION_STATUS_")), nil
}

// Follow waits for the run's end, handing emit its canonical lines from index from on as they
// come (read every poll while it runs, then the rest from the result or, when they did not fit
// in it, page by page). ctx ending stops the following, not the run.
func Follow(ctx context.Context, c client.Client, run client.WorkflowRun, from int, poll time.Duration, emit func([]string)) (Output, error) {
	done := make(chan error, 1)
	var out Output
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { done <- run.Get(wctx, &out) }()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	seen := from
	for {
		select {
		case err := <-done:
			if err != nil {
				return out, fmt.Errorf("the run's workflow %s failed: %w", run.GetID(), err)
			}
			if out.Events != nil {
				if seen < len(out.Events) {
					emit(out.Events[seen:])
				}
				return out, nil
			}
			for seen < out.EventCount {
				lines, err := Events(ctx, c, run.GetID(), seen)
				if err != nil || len(lines) == 0 {
					return out, fmt.Errorf("the run's events from %d on could not be read: %v", seen, err)
				}
				emit(lines)
				seen += len(lines)
			}
			return out, nil
		case <-tick.C:
			if lines, err := Events(ctx, c, run.GetID(), seen); err == nil && len(lines) > 0 {
				emit(lines)
				seen += len(lines)
			}
		}
	}
}

// DecodeEvent reads one canonical line back into an event, for sinks that write it again
// (masked, and chained by a trace file) as a local run's do.
func DecodeEvent(line string) (event.Event, error) {
	var raw struct {
		Seq       int64           `json:"seq"`
		TS        string          `json:"ts"`
		RunID     string          `json:"run_id"`
		Kind      string          `json:"kind"`
		Task      string          `json:"task"`
		Attempt   int             `json:"attempt"`
		Iteration *int            `json:"iteration"`
		Fields    json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		return event.Event{}, err
	}
	ts, err := time.Parse(time.RFC3339Nano, raw.TS)
	if err != nil {
		return event.Event{}, err
	}
	e := event.Event{Seq: raw.Seq, TS: ts, RunID: raw.RunID, Kind: raw.Kind, Task: raw.Task, Attempt: raw.Attempt, Iteration: -1}
	if raw.Iteration != nil {
		e.Iteration = *raw.Iteration
	}
	if len(raw.Fields) > 0 {
		v, err := workflow.DecodeValue(string(raw.Fields))
		if err != nil {
			return event.Event{}, err
		}
		e.Fields, _ = v.(map[string]any)
	}
	if e.Fields == nil {
		return event.Event{}, errors.New("an event without fields")
	}
	return e, nil
}
