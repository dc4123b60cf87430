package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nikahq/nika/lsp"
	"github.com/nikahq/nika/spec"
)

// lspSynopsis is `nika lsp -h`'s usage line (the command's flags are
// printed below it).
const lspSynopsis = "nika lsp [--model M]"

// cmdLSP serves the language server on stdio: stdin and stdout carry the
// protocol and nothing else, stderr gets warnings (an unreadable MCP
// registry) and the problems the server survives. Exit 0 after the client's
// shutdown and exit, 1 when the session ended without a shutdown (as LSP
// asks) or the input could not be read, 2 for a usage error.
func cmdLSP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("lsp")
	model := fs.String("model", "", "default model `provider/name` for infer and agent tasks without one, as in nika check")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, lspUsage(fs))
			return exitOK
		}
		fmt.Fprintf(stderr, "nika lsp: %v\n%s", err, lspUsage(fs))
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "nika lsp: takes no arguments (the editor sends the documents)\n%s", lspUsage(fs))
		return exitUsage
	}
	if code, ok := checkModelFlag("lsp", *model, stderr); !ok {
		return code
	}
	err := lsp.Serve(stdin, stdout, lsp.Options{
		Check:    spec.CheckOptions{Model: *model, MCPServers: mcpServers(stderr)},
		Debounce: lsp.DefaultDebounce,
		Version:  version,
		Log:      stderr,
	})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, lsp.ErrNoShutdown):
		return 1
	default:
		fmt.Fprintf(stderr, "nika lsp: %v\n", err)
		return 1
	}
}

func lspUsage(fs *flag.FlagSet) string {
	usage := usageOf(fs) // "Usage: \n" and the flags: the synopsis is ours
	return "Usage: " + lspSynopsis + usage[len("Usage: "+synopses["lsp"]):]
}
