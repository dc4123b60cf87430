// Package temporalrun is the Temporal backend of nika serve (`nika serve --temporal`, issue 16):
// it hands each run the server admitted to Temporal as nika's run workflow (package temporal)
// under its run id, follows its canonical events (QueryEvents) and its end (the workflow's
// result), cancels it when a client does, and answers its nika:prompt gates by signal. A
// `nika worker --temporal` on the same task queue runs it.
package temporalrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/server"
	"github.com/nikahq/nika/temporal"
)

// DefaultPoll is how often a running run's new canonical events are asked for.
const DefaultPoll = 250 * time.Millisecond

// Backend implements server.Backend on a Temporal client.
type Backend struct {
	Client client.Client
	Queue  string        // the task queue of nika's workflows ("nika" for `nika worker`'s default)
	Poll   time.Duration // 0: DefaultPoll
	// Logf receives what the backend notices on the way (an event it cannot read); nil: nothing.
	Logf func(format string, args ...any)
}

var _ server.Backend = (*Backend)(nil)

// Execute implements server.Backend.
func (b *Backend) Execute(ctx context.Context, r server.BackendRun, cancel <-chan struct{}, events event.Sink) (server.BackendEnd, error) {
	p := r.Prepared
	in := temporal.Input{Name: r.Name, Source: string(r.Source), Model: r.Check.Model, MCPServers: r.Check.MCPServers,
		Ceiling: r.Ceiling, RunID: r.ID, RunDir: r.RunDir, MaxParallelTasks: r.MaxParallelTasks,
		Vars: temporal.Value{V: p.Inputs.Vars}, Env: temporal.Value{V: p.Inputs.Env}, Secrets: temporal.Value{V: p.Inputs.Secrets}}
	run, err := temporal.Start(ctx, b.Client, b.Queue, in)
	if err != nil {
		return server.BackendEnd{}, fmt.Errorf("cannot start the run on Temporal: %w", err)
	}
	followed := make(chan struct{})
	defer close(followed)
	go func() {
		select {
		case <-cancel:
			if err := b.Client.CancelWorkflow(context.Background(), run.GetID(), ""); err != nil {
				b.logf("run %s: cannot cancel it on Temporal: %v", r.ID, err)
			}
		case <-followed:
		}
	}()
	poll := b.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	out, err := temporal.Follow(ctx, b.Client, run, 0, poll, func(lines []string) {
		for _, l := range lines {
			e, err := temporal.DecodeEvent(l)
			if err != nil {
				b.logf("run %s: a canonical event cannot be read: %v", r.ID, err)
				continue
			}
			events.Emit(e)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return server.BackendEnd{}, ctx.Err()
		}
		return server.BackendEnd{}, err
	}
	return server.BackendEnd{State: out.State, Report: out.Report}, nil
}

// Questions implements server.Backend.
func (b *Backend) Questions(ctx context.Context, id string) ([]server.Question, error) {
	qs, err := temporal.Questions(ctx, b.Client, id)
	if err != nil {
		return nil, err
	}
	out := make([]server.Question, len(qs))
	for i, q := range qs {
		out[i] = server.Question{Task: q.Task, Iteration: q.Iteration, Mode: q.Mode, Message: q.Message, Choices: q.Choices}
	}
	return out, nil
}

// Answer implements server.Backend.
func (b *Backend) Answer(ctx context.Context, id string, answers map[string]string) error {
	err := temporal.SendAnswers(ctx, b.Client, id, answers)
	var ae *temporal.AnswerError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w: %v", server.ErrBadAnswer, ae)
	}
	return err
}

func (b *Backend) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}
