package main

// `nika answer --temporal HOST:PORT [--namespace N] RUN [TASK=VALUE]... [--list] [--json]`: the
// answers to the nika:prompt gates a run on Temporal waits on (issue 16). Decisions where the
// issue is silent:
//   - Answers are written as `nika run --resume RUN --answer TASK=VALUE` writes them, as
//     arguments after the run id or as --answer flags (both may be mixed; the last of a name
//     wins). TASK answers every open question of the task, TASK[i] one for_each iteration's.
//   - Every answer is checked against the open questions before any is sent: one to a task
//     that does not wait, or a text that is no answer to its question (a confirm takes yes or
//     no, a choice one of its choices or its number), is exit 2 and sends nothing.
//   - No answers, or --list, prints the open questions on stdout (one a line, or a JSON array
//     with --json) and exits 0, also when there are none.
//   - A run id the namespace does not know is exit 3, as `--resume` of a journal that cannot
//     be found; so is a service that cannot be reached.
//   - It does not wait for the run: it exits 0 once the answers are signalled (the run takes
//     them as it reads them; `nika run --temporal` or `nika serve` show it going on).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nikahq/nika/temporal"
)

func cmdAnswer(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("answer")
	var tf temporalFlags
	fs.StringVar(&tf.hostPort, "temporal", "", "the Temporal frontend `HOST:PORT` the run is on")
	fs.StringVar(&tf.namespace, "namespace", "default", "the Temporal `NAMESPACE`")
	answers := varFlags{}
	fs.Var(answers, "answer", "answer a question: `TASK=VALUE` (TASK[i] for one for_each iteration; repeatable)")
	var list, asJSON bool
	fs.BoolVar(&list, "list", false, "print the questions the run waits on and send nothing")
	fs.BoolVar(&asJSON, "json", false, "print the questions as a JSON array")
	pos, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if tf.hostPort == "" || len(pos) == 0 {
		fmt.Fprint(stderr, "nika answer: give --temporal HOST:PORT and the run id (a local run is answered with nika run FILE --resume RUN --answer TASK=VALUE)\n"+usageOf(fs))
		return exitUsage
	}
	runID := pos[0]
	for _, a := range pos[1:] {
		if err := answers.Set(a); err != nil {
			fmt.Fprintf(stderr, "nika answer: %q: an answer is TASK=VALUE: %v\n", a, err)
			return exitUsage
		}
	}
	if list && len(answers) > 0 {
		fmt.Fprintln(stderr, "nika answer: --list sends nothing: give it without answers")
		return exitUsage
	}
	c, err := tf.dial(nil)
	if err != nil {
		fmt.Fprintf(stderr, "nika answer: cannot reach Temporal at %s: %v\n", tf.hostPort, err)
		return exitEnv
	}
	defer c.Close()
	ctx := context.Background()
	if len(answers) == 0 {
		qs, err := temporal.Questions(ctx, c, runID)
		if err != nil {
			return answerFailed(runID, err, stderr)
		}
		printQuestions(qs, runID, tf, asJSON, stdout)
		return exitOK
	}
	if err := temporal.SendAnswers(ctx, c, runID, map[string]string(answers)); err != nil {
		return answerFailed(runID, err, stderr)
	}
	for name := range answers {
		fmt.Fprintf(stderr, "nika answer: %s of run %s answered\n", name, runID)
	}
	return exitOK
}

// answerFailed reports why the answers were not sent and returns the exit code.
func answerFailed(runID string, err error, stderr io.Writer) int {
	var ae *temporal.AnswerError
	switch {
	case errors.Is(err, temporal.ErrNoRun):
		fmt.Fprintf(stderr, "nika answer: run %s is not on this Temporal namespace (check the run id, --temporal and --namespace)\n", runID)
		return exitEnv
	case errors.As(err, &ae):
		fmt.Fprintf(stderr, "nika answer: --answer %v; nothing was sent\n", ae)
		return exitUsage
	}
	fmt.Fprintf(stderr, "nika answer: run %s: %v\n", runID, err)
	return exitEnv
}

func printQuestions(qs []temporal.Question, runID string, tf temporalFlags, asJSON bool, stdout io.Writer) {
	if asJSON {
		out := make([]map[string]any, len(qs))
		for i, q := range qs {
			m := map[string]any{"task": q.Task, "name": q.Name(), "attempt": q.Attempt, "mode": q.Mode, "message": q.Message}
			if q.Iteration >= 0 {
				m["iteration"] = q.Iteration
			}
			if len(q.Choices) > 0 {
				m["choices"] = q.Choices
			}
			out[i] = m
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(stdout, "%s\n", b)
		return
	}
	if len(qs) == 0 {
		fmt.Fprintf(stdout, "run %s waits for no answer\n", runID)
		return
	}
	for _, q := range qs {
		what := q.Mode
		if len(q.Choices) > 0 {
			what += " " + strings.Join(quoted(q.Choices), ", ")
		}
		fmt.Fprintf(stdout, "%s asks %q (%s)\n  answer it: nika answer --temporal %s --namespace %s %s %s=VALUE\n",
			q.Name(), q.Message, what, tf.hostPort, tf.namespace, runID, q.Name())
	}
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
