package main

// `nika mcp` (issue 6 item 3, DECISIONS.md D42): a read-only MCP server on
// stdio, so editors and agents can check workflows without a shell. It only
// wires the official SDK to the code paths of `nika check --json`, `nika
// explain`, `nika schema` and `nika graph`; it never runs a workflow, reads
// no file and opens no connection.
//
// Decisions where the documents are silent:
//   - The workflow text is checked under the name mcpWorkflowName
//     ("workflow.nika.yaml"): it is the "file" of the D21 JSON and of every
//     finding, and it has the canonical extension so the text gets no
//     file-extension warning. No MCP registry is read (the server reads no
//     file), so mcp: tools name servers the checker cannot see: exactly what
//     `nika check --json` prints for the same text in a directory without
//     .nika/mcp_servers.json, and with no --model.
//   - nika_check succeeds (isError false) whatever the findings: its result is
//     the D21 object, whose "valid" says whether the workflow has errors.
//   - nika_graph of a workflow with errors is a tool error whose text is the
//     D21 text findings `nika graph` prints on stderr; for a valid workflow
//     the result is exactly the `nika graph` stdout (warnings are left to
//     nika_check). format is required, as D42 lists it without a default.
//   - nika_explain of an unallocated code is a tool error with the CLI's
//     message, without the "nika explain: " prefix.
//   - Every result is one text content block holding the bytes the CLI
//     prints on stdout, trailing newline included; no structuredContent.
//   - Stdin closing ends the server with exit 0; SIGINT or SIGTERM ends it
//     with 130 (D23's convention for signals).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
)

// mcpWorkflowName is the file name nika_check and nika_graph give the text.
const mcpWorkflowName = "workflow.nika.yaml"

// exitSignal is the exit code of a process ended by a signal (D23).
const exitSignal = 130

// The input schemas of D42, written out rather than inferred from Go types so
// that what clients see (descriptions, the format enum, additionalProperties)
// is stated here once; the SDK validates every call against them.
var (
	mcpWorkflowYAMLProp = `"workflow_yaml": {"type": "string", "description": "The full text of a nika workflow file (YAML, as in a .nika.yaml file)."}`

	mcpCheckSchema = json.RawMessage(`{"type": "object", "properties": {` + mcpWorkflowYAMLProp + `},
		"required": ["workflow_yaml"], "additionalProperties": false}`)
	mcpExplainSchema = json.RawMessage(`{"type": "object", "properties": {
		"code": {"type": "string", "description": "An error code such as NIKA-PARSE-005; case does not matter and the NIKA- prefix may be left out."}},
		"required": ["code"], "additionalProperties": false}`)
	mcpSchemaSchema = json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`)
	mcpGraphSchema  = json.RawMessage(`{"type": "object", "properties": {` + mcpWorkflowYAMLProp + `,
		"format": {"type": "string", "enum": ["mermaid", "dot", "json"], "description": "Output format: a Mermaid flowchart, a Graphviz DOT digraph, or the graph as JSON."}},
		"required": ["workflow_yaml", "format"], "additionalProperties": false}`)
)

type mcpCheckArgs struct {
	WorkflowYAML string `json:"workflow_yaml"`
}

type mcpExplainArgs struct {
	Code string `json:"code"`
}

type mcpGraphArgs struct {
	WorkflowYAML string `json:"workflow_yaml"`
	Format       string `json:"format"`
}

// newMCPServer builds the server with its four tools. Each call returns a
// fresh server: there is no shared state between sessions or tests.
func newMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "nika", Title: "nika workflow checker", Version: version},
		&mcp.ServerOptions{
			Instructions: "Read-only tools for nika workflows (.nika.yaml): check a workflow's text, explain an " +
				"error code, get the JSON Schema of the format, or draw a workflow's task graph. Nothing is run.",
			// The tool list never changes and the server sends no log messages.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	readOnly := func(title string) *mcp.ToolAnnotations {
		closed := false
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed}
	}
	mcp.AddTool(s, &mcp.Tool{
		Name: "nika_check",
		Description: "Check a nika workflow statically, as `nika check --json` does, without running it. " +
			`Returns one JSON object {"valid": bool, "files": [{"file", "valid", "errors": [...], "warnings": [...]}]}; ` +
			"the workflow is named " + mcpWorkflowName + " in it. Each finding has a code (see nika_explain), " +
			"a position, a path, a message and how to fix it.",
		InputSchema: mcpCheckSchema,
		Annotations: readOnly("Check a nika workflow"),
	}, mcpCheck)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "nika_explain",
		Description: "Explain a nika error code (NIKA-XXX-NNN), as `nika explain` does: what it means and how to fix it.",
		InputSchema: mcpExplainSchema,
		Annotations: readOnly("Explain a nika error code"),
	}, mcpExplain)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "nika_schema",
		Description: "Return the JSON Schema of the nika workflow format, as `nika schema` does.",
		InputSchema: mcpSchemaSchema,
		Annotations: readOnly("nika workflow JSON Schema"),
	}, mcpSchema)
	mcp.AddTool(s, &mcp.Tool{
		Name: "nika_graph",
		Description: "Draw the task graph of a nika workflow, as `nika graph --format FORMAT` does. " +
			"A workflow with errors gets its findings instead (check it with nika_check).",
		InputSchema: mcpGraphSchema,
		Annotations: readOnly("Draw a nika workflow's task graph"),
	}, mcpGraph)
	return s
}

func mcpText(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// mcpCheckOptions are the options of `nika check` with no --model and no
// visible MCP registry: the server reads no file.
func mcpCheckOptions() spec.CheckOptions { return spec.CheckOptions{} }

func mcpCheck(_ context.Context, _ *mcp.CallToolRequest, in mcpCheckArgs) (*mcp.CallToolResult, any, error) {
	r, _ := checkText(mcpWorkflowName, []byte(in.WorkflowYAML), mcpCheckOptions())
	var b strings.Builder
	if err := spec.WriteJSON(&b, []spec.FileResult{r}); err != nil {
		return nil, nil, fmt.Errorf("encoding the check result: %w", err)
	}
	return mcpText(b.String()), nil, nil
}

func mcpExplain(_ context.Context, _ *mcp.CallToolRequest, in mcpExplainArgs) (*mcp.CallToolResult, any, error) {
	text, err := explainCode(in.Code)
	if err != nil {
		return nil, nil, err // the SDK turns it into an isError result with this text
	}
	return mcpText(text), nil, nil
}

func mcpSchema(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	return mcpText(string(spec.WorkflowSchema())), nil, nil
}

func mcpGraph(_ context.Context, _ *mcp.CallToolRequest, in mcpGraphArgs) (*mcp.CallToolResult, any, error) {
	r, a := checkText(mcpWorkflowName, []byte(in.WorkflowYAML), mcpCheckOptions())
	if !r.Valid() {
		var b strings.Builder
		spec.WriteText(&b, []spec.FileResult{r}, spec.TextOptions{Snippet: true})
		res := mcpText(b.String())
		res.IsError = true
		return res, nil, nil
	}
	out, err := renderGraph(a.Graph, in.Format)
	if err != nil {
		return nil, nil, fmt.Errorf("nika graph: %w", err)
	}
	return mcpText(string(out)), nil, nil
}

// serveMCP serves one session on t until the client disconnects (nil) or ctx
// ends (ctx's error).
func serveMCP(ctx context.Context, t mcp.Transport) error {
	return newMCPServer().Run(ctx, t)
}

// nopWriteCloser lets the transport "close" stdout without closing it: the
// process owns its standard streams.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp")
	rest, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		fmt.Fprintln(stderr, "nika mcp: takes no arguments; it serves MCP on stdin and stdout")
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err := serveMCP(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exitSignal
	}
	fmt.Fprintf(stderr, "nika mcp: %v\n", err)
	return exitEnv
}
