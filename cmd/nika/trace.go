package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/event/tracefmt"
)

// traceSynopsis follows a usage error; traceUsage is `nika trace -h`. The subcommands have no flags, so
// there is one text for all three.
const (
	traceSynopsis = `Usage: nika trace verify FILE
       nika trace show FILE
`
	traceUsage = traceSynopsis + `
  verify FILE   check that every line of a trace is whole, is a JSON event, and carries the hash chain
                intact, with seq counting from 1: exit 0 and a summary on stderr when it does, exit 1
                naming the first bad line (FILE:LINE: why) when it does not
  show FILE     print the run a trace records, readably, on stdout: the run, then each task with its
                status, attempts, retries, duration and error, a for_each's iterations, an agent's
                turns and their tool batches (what the trace holds, masked values masked)

Exit codes: 0 ok, 1 a bad trace (verify) or a file with no event (show), 2 usage, 3 unreadable file.
`
)

// cmdTrace is `nika trace verify|show FILE`.
func cmdTrace(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "nika trace: give a subcommand, verify or show\n"+traceSynopsis)
		return exitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, traceUsage)
		return exitOK
	case "verify", "show":
	default:
		fmt.Fprintf(stderr, "nika trace: unknown subcommand %q (use verify or show)\n%s", sub, traceSynopsis)
		return exitUsage
	}
	file, code, ok := traceFile(sub, rest, stdout, stderr)
	if !ok {
		return code
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "nika trace %s: cannot read %s: %v\n", sub, file, err)
		return exitEnv
	}
	defer f.Close()
	if sub == "verify" {
		return traceVerify(file, f, stderr)
	}
	return traceShow(file, f, stdout, stderr)
}

// traceFile parses a subcommand's arguments: no flags but -h (flags may come anywhere, D20), exactly
// one file.
func traceFile(sub string, args []string, stdout, stderr io.Writer) (file string, code int, ok bool) {
	fs := flag.NewFlagSet("trace "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, traceUsage)
				return "", exitOK, false
			}
			fmt.Fprintf(stderr, "nika trace %s: %v\n%s", sub, err, traceSynopsis)
			return "", exitUsage, false
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "nika trace %s: give exactly one trace file\n%s", sub, traceSynopsis)
		return "", exitUsage, false
	}
	return files[0], 0, true
}

func traceVerify(file string, r io.Reader, stderr io.Writer) int {
	n, err := event.VerifyChain(r)
	if ce, ok := errors.AsType[*event.ChainError](err); ok {
		fmt.Fprintf(stderr, "%s:%d: %s: %s\n", file, ce.Line, ce.Problem, ce.Detail)
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(stderr, "nika trace verify: %s: %v\n", file, err)
		return exitEnv
	}
	fmt.Fprintf(stderr, "%s: %s, chain intact\n", file, tracePlural(n, "event"))
	return exitOK
}

func traceShow(file string, r io.Reader, stdout, stderr io.Writer) int {
	t, err := tracefmt.Read(r)
	if err != nil {
		fmt.Fprintf(stderr, "nika trace show: %s: %v\n", file, err)
		return exitEnv
	}
	for _, s := range t.Skipped {
		fmt.Fprintf(stderr, "%s:%d: skipped: %s\n", file, s.Line, s.Why)
	}
	if t.Events == 0 {
		fmt.Fprintf(stderr, "nika trace show: %s holds no event\n", file)
		return exitFailure
	}
	if err := t.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "nika trace show: writing: %v\n", err)
		return exitEnv
	}
	return exitOK
}

func tracePlural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
