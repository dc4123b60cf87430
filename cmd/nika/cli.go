package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/nikahq/nika/dag"
	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/spec"
)

// Exit codes of the run contract (LANGUAGE.md §10).
const (
	exitOK    = 0
	exitUsage = 2 // findings in the file, or a usage error
	exitEnv   = 3
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usageText = `nika — a workflow engine for AI work.

Usage:
  nika run FILE [--var k=v]... [--model M] [--report FILE] [--trace FILE | --no-trace] [--seed N]
           [--max-parallel-tasks N] [--max-parallel-tools N] [--max-processes N] [--max-exec-output BYTES]
           [--no-progress] [--quiet] [--yes] [--metrics-addr ADDR [--metrics-linger DUR]] [--pushgateway URL]
           [--metrics-task-label] [--resume RUN [--answer TASK=VALUE]...]
                                            run a workflow; its outputs go to stdout as JSON
  nika run --temporal HOST:PORT FILE [--namespace N] [--task-queue Q] [--var k=v]... [--model M]
           [--trace FILE | --no-trace] [--seed N] [--max-parallel-tasks N] [--quiet] [--heartbeat-timeout DUR]
                                            run a workflow on Temporal; the same outputs, trace and exit code
  nika worker --temporal HOST:PORT [--namespace N] [--task-queue Q] [--max-parallel-tools N]
              [--max-processes N] [--max-exec-output BYTES] [--metrics-addr ADDR]
                                            run nika's workflows and jobs for Temporal
  nika answer --temporal HOST:PORT [--namespace N] RUN [TASK=VALUE]... [--answer TASK=VALUE]... [--list] [--json]
                                            answer the prompts a run on Temporal waits on (none: list them)
  nika check FILE... [--model M] [--json]   check workflows statically; run nothing
  nika graph FILE [--format mermaid|dot|json] [--model M]
                                            print the task graph
  nika trace verify FILE                    check that a trace is whole and its hash chain intact
  nika trace show FILE                      print the run a trace records, readably
  nika runs [--json]                        list the runs of this directory from their journals
  nika explain NIKA-XXX-NNN                 explain an error code and how to fix it
  nika schema                               print the JSON Schema of the workflow format
  nika mcp                                  serve nika_check, nika_explain, nika_schema and nika_graph
                                            over MCP on stdio (read-only; runs nothing)
  nika lsp [--model M]                      serve the Language Server Protocol on stdio for editors
  nika serve [--addr ADDR] [--auth-token T] [--permits FILE] [--secret-env NAME]... [--workflows DIR]
             [--max-runs N] [--queue N] [--max-body BYTES] [--keep-runs N] [--shutdown-timeout DUR]
             [--trace-dir DIR] [--state-dir DIR] [--model M] [--max-parallel-tasks N] [--max-parallel-tools N]
             [--max-processes N] [--max-exec-output BYTES] [--metrics-task-label]
             [--temporal HOST:PORT [--namespace N] [--task-queue Q]]
                                            serve an HTTP API that runs submitted workflows (on Temporal with --temporal)
  nika version                              print the version
  nika help [COMMAND]                       print this help

Flags may come before or after the file arguments. Run 'nika COMMAND -h' for a command's flags.
`

// Main runs the CLI with the given arguments (without the program name) and
// returns the exit code. Tests call it in-process.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		if hasTemporal(rest) {
			return cmdRunTemporal(rest, stdout, stderr)
		}
		return cmdRun(rest, stdout, stderr)
	case "worker":
		return cmdWorker(rest, stdout, stderr)
	case "answer":
		return cmdAnswer(rest, stdout, stderr)
	case "serve":
		return cmdServe(rest, stdout, stderr)
	case "check":
		return cmdCheck(rest, stdout, stderr)
	case "graph":
		return cmdGraph(rest, stdout, stderr)
	case "explain":
		return cmdExplain(rest, stdout, stderr)
	case "schema":
		return cmdSchema(rest, stdout, stderr)
	case "mcp":
		return cmdMCP(rest, stdin, stdout, stderr)
	case "lsp":
		return cmdLSP(rest, stdin, stdout, stderr)
	case "runs":
		return cmdRuns(rest, stdout, stderr)
	case "trace":
		return cmdTrace(rest, stdout, stderr)
	case "version", "--version", "-version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "nika version: takes no arguments\n")
			return exitUsage
		}
		fmt.Fprintf(stdout, "nika %s%s\n", version, buildSuffix())
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" {
			return Main([]string{rest[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "nika: unknown command %q\n\n%s", cmd, usageText)
	return exitUsage
}

func buildSuffix() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return " (" + bi.GoVersion + ")"
	}
	return ""
}

// parseInterspersed parses flags that may come before or after positional
// arguments (D20); `--` ends the flags. Help goes to stdout and exits 0;
// a bad flag is reported on stderr and exits 2. It returns the
// positionals, or ok=false with the exit code to use.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usageOf(fs))
				return nil, exitOK, false
			}
			fmt.Fprintf(stderr, "nika %s: %v\n%s", fs.Name(), err, usageOf(fs))
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// synopses are the usage lines of the subcommands.
var synopses = map[string]string{
	"run": "nika run FILE [--var k=v]... [--model M] [--report FILE] [--trace FILE | --no-trace] [--seed N] [--max-parallel-tasks N] " +
		"[--max-parallel-tools N] [--max-processes N] [--max-exec-output BYTES] [--no-progress] [--quiet] [--yes] [--metrics-addr ADDR [--metrics-linger DUR]] [--pushgateway URL] [--metrics-task-label] [--resume RUN [--answer TASK=VALUE]...]",
	"run --temporal": "nika run --temporal HOST:PORT FILE [--namespace N] [--task-queue Q] [--var k=v]... [--model M] " +
		"[--trace FILE | --no-trace] [--seed N] [--max-parallel-tasks N] [--quiet] [--heartbeat-timeout DUR]",
	"check":   "nika check FILE... [--model M] [--json]",
	"runs":    "nika runs [--json]",
	"graph":   "nika graph FILE [--format mermaid|dot|json] [--model M]",
	"explain": "nika explain NIKA-XXX-NNN",
	"schema":  "nika schema",
	"mcp":     "nika mcp",
	"lsp":     "nika lsp [--model M]",
	"worker":  "nika worker --temporal HOST:PORT [--namespace N] [--task-queue Q] [--max-parallel-tools N] [--max-processes N] [--max-exec-output BYTES] [--metrics-addr ADDR]",
	"answer":  "nika answer --temporal HOST:PORT [--namespace N] RUN [TASK=VALUE]... [--answer TASK=VALUE]... [--list] [--json]",
	"serve": "nika serve [--addr ADDR] [--auth-token TOKEN] [--permits FILE] [--secret-env NAME]... [--workflows DIR] [--max-runs N] [--queue N] " +
		"[--max-body BYTES] [--keep-runs N] [--shutdown-timeout DUR] [--trace-dir DIR] [--state-dir DIR] [--model M] [--max-parallel-tasks N] [--max-parallel-tools N] [--max-processes N] [--max-exec-output BYTES] [--metrics-task-label] [--temporal HOST:PORT [--namespace N] [--task-queue Q]]",
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are printed by parseInterspersed
	fs.Usage = func() {}
	return fs
}

// usageOf renders a subcommand's usage with GNU-style double-dash flags.
func usageOf(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", synopses[fs.Name()])
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(&b, "  --%s%s\n      %s", f.Name, arg, usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		b.WriteString("\n")
	})
	return b.String()
}

// checkFiles reads and checks each file, returning one result per file.
func checkFiles(names []string, model string, stderr io.Writer) ([]spec.FileResult, []*spec.Analysis) {
	opts := spec.CheckOptions{Model: model, MCPServers: mcpServers(stderr)}
	results := make([]spec.FileResult, 0, len(names))
	analyses := make([]*spec.Analysis, 0, len(names))
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			results = append(results, spec.FileResult{Name: name, Findings: []spec.Finding{spec.UnreadableFile(name, err)}})
			analyses = append(analyses, nil)
			continue
		}
		r, a := checkText(name, src, opts)
		results = append(results, r)
		analyses = append(analyses, a)
	}
	return results, analyses
}

// checkText checks one workflow text; `nika check`, `nika graph` and the
// `nika mcp` tools all go through it so they report the same findings.
func checkText(name string, src []byte, opts spec.CheckOptions) (spec.FileResult, *spec.Analysis) {
	a := spec.CheckSource(name, src, opts)
	return spec.FileResult{Name: name, File: a.File, Findings: a.Findings}, a
}

// checkModelFlag refuses a malformed --model as a usage error (exit 2).
func checkModelFlag(cmd, model string, stderr io.Writer) (int, bool) {
	if model == "" {
		return 0, true
	}
	if msg, detail := spec.ModelProblem(model); msg != "" {
		fmt.Fprintf(stderr, "nika %s: --model: %s — %s\n", cmd, msg, detail)
		return exitUsage, false
	}
	return 0, true
}

// mcpServers reads the names of the engine's MCP registry,
// .nika/mcp_servers.json in the run directory or the file NIKA_MCP_CONFIG names
// (D7, D25). Without the file, the registry is not visible and unregistered
// servers are found at run time; a file that cannot be parsed is ignored with
// a warning, and so is a NIKA_MCP_CONFIG file that cannot be read.
func mcpServers(stderr io.Writer) []string {
	m := engine.LoadMCP("", os.LookupEnv)
	if m.Err != nil {
		fmt.Fprintf(stderr, "nika: warning: ignoring %s: %v\n", m.Path, m.Err)
	}
	return m.Names()
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	model := fs.String("model", "", "default model `provider/name` for infer and agent tasks without one")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout instead of text on stderr")
	files, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, "nika check: no file given\n"+usageOf(fs))
		return exitUsage
	}
	if code, ok := checkModelFlag("check", *model, stderr); !ok {
		return code
	}
	results, _ := checkFiles(files, *model, stderr)
	if *asJSON {
		if err := spec.WriteJSON(stdout, results); err != nil {
			return exitEnv
		}
	} else {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true})
	}
	for _, r := range results {
		if !r.Valid() {
			return exitUsage
		}
	}
	return exitOK
}

func cmdGraph(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("graph")
	format := fs.String("format", "mermaid", "output format: mermaid, dot or json")
	model := fs.String("model", "", "default model `provider/name` for infer and agent tasks without one")
	files, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(files) != 1 {
		fmt.Fprint(stderr, "nika graph: give exactly one file\n"+usageOf(fs))
		return exitUsage
	}
	if *format != "mermaid" && *format != "dot" && *format != "json" {
		fmt.Fprintf(stderr, "nika graph: unknown format %q (use mermaid, dot or json)\n", *format)
		return exitUsage
	}
	if code, ok := checkModelFlag("graph", *model, stderr); !ok {
		return code
	}
	results, analyses := checkFiles(files, *model, stderr)
	if !results[0].Valid() {
		spec.WriteText(stderr, results, spec.TextOptions{Snippet: true})
		return exitUsage
	}
	spec.WriteText(stderr, results, spec.TextOptions{Snippet: true}) // warnings, if any
	out, err := renderGraph(analyses[0].Graph, *format)
	if err != nil {
		fmt.Fprintf(stderr, "nika graph: %v\n", err)
		return exitEnv
	}
	stdout.Write(out)
	return exitOK
}

// renderGraph renders a checked workflow's task graph in one of the formats
// of `nika graph` (mermaid, dot, json); `nika mcp` shares it.
func renderGraph(g *dag.Graph, format string) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	switch format {
	case "mermaid":
		err = g.WriteMermaid(&buf)
	case "dot":
		err = g.WriteDOT(&buf)
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		err = enc.Encode(g.JSON())
	default:
		err = fmt.Errorf("unknown format %q (use mermaid, dot or json)", format)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain")
	codes, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(codes) != 1 {
		fmt.Fprintln(stderr, "nika explain: give exactly one code, e.g. nika explain NIKA-PARSE-005")
		return exitUsage
	}
	text, err := explainCode(codes[0])
	if err != nil {
		fmt.Fprintf(stderr, "nika explain: %v\n", err)
		return exitUsage
	}
	fmt.Fprint(stdout, text)
	return exitOK
}

// explainCode returns the `nika explain` text of a code given as the user
// typed it (any case, NIKA- prefix optional), ending in one newline; an
// unallocated code is an error naming the closest allocated one. `nika mcp`
// shares it.
func explainCode(arg string) (string, error) {
	id := strings.ToUpper(strings.TrimSpace(arg))
	if !strings.HasPrefix(id, "NIKA-") {
		id = "NIKA-" + id
	}
	text, found := spec.Explain(id)
	if !found {
		hint := ""
		if s := spec.SuggestCode(id); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return "", fmt.Errorf("%q is not an allocated code%s", arg, hint)
	}
	return strings.TrimRight(text, "\n") + "\n", nil
}

func cmdSchema(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema")
	rest, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		fmt.Fprintln(stderr, "nika schema: takes no arguments")
		return exitUsage
	}
	stdout.Write(spec.WorkflowSchema())
	return exitOK
}
