package main

// `nika runs [--json]`: the runs of the run directory (the working directory), from their
// journals under .nika/runs, oldest first. A run whose last process wrote no end record (it was
// killed, or is still running) is "unfinished"; its duration is then unknown. A journal that
// cannot be read is listed with its error (--json: "error") and makes the exit code 1.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/nikahq/nika/journal"
)

func cmdRuns(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("runs")
	asJSON := fs.Bool("json", false, "print one JSON array of {run_id, state, workflow, file, started, ended?, duration_ms?, error?}")
	rest, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		fmt.Fprint(stderr, "nika runs: takes no arguments\n"+usageOf(fs))
		return exitUsage
	}
	dir, err := os.Getwd()
	if err == nil {
		var runs []journal.Summary
		if runs, err = journal.List(dir); err == nil {
			return printRuns(runs, *asJSON, stdout)
		}
	}
	fmt.Fprintf(stderr, "nika runs: %v\n", err)
	return exitEnv
}

func printRuns(runs []journal.Summary, asJSON bool, stdout io.Writer) int {
	code := exitOK
	if asJSON {
		out := make([]map[string]any, 0, len(runs))
		for _, r := range runs {
			m := map[string]any{"run_id": r.RunID, "state": r.State, "workflow": r.Workflow, "file": r.File, "started": stampOf(r.Started)}
			if !r.Ended.IsZero() {
				m["ended"], m["duration_ms"] = stampOf(r.Ended), r.Ended.Sub(r.Started).Milliseconds()
			}
			if r.Err != nil {
				m["error"], code = r.Err.Error(), exitFailure
			}
			out = append(out, m)
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(stdout, "%s\n", b)
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tWORKFLOW\tSTARTED\tDURATION")
	for _, r := range runs {
		dur := "-"
		if !r.Ended.IsZero() {
			dur = r.Ended.Sub(r.Started).Round(time.Millisecond).String()
		}
		state := r.State
		if r.Err != nil {
			state, code = "unreadable: "+r.Err.Error(), exitFailure
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, state, r.Workflow, stampOf(r.Started), dur)
	}
	tw.Flush()
	return code
}

func stampOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
