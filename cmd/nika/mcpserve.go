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
//   - Stdin closing ends the server with exit 0, once every request read
//     before the end of input has been answered; SIGINT or SIGTERM ends it
//     with 130 (D23's convention for signals).
//   - Bad input does not end the server (issue 11 item 6, as the MCP
//     reference servers do): a line that is not JSON is answered with a
//     JSON-RPC parse error (-32700, id null), a JSON line that is not a
//     JSON-RPC message with an invalid request error (-32600, id null), and
//     the server goes on with the next line. Blank lines are skipped. As the
//     MCP stdio transport says, a message is one line: a message spread over
//     several lines is several parse errors. A line longer than
//     mcp.DefaultMaxLineLength ends the server (exit 3), as the SDK's limit
//     did.
//
// The transport (mcpStdio) is the SDK's IOTransport, which keeps the framing,
// the decoding and the batches, with two repairs around it, because the SDK
// drops answers and dies on bad input:
//   - The SDK's jsonrpc2 connection refuses every write once its Read has
//     returned io.EOF, and cancels the requests still in flight: requests
//     piped in (`nika mcp < requests.jsonl`) lost their answers. mcpConn.Read
//     therefore holds the end of input back until every request it returned
//     has had its response written (or the connection is closed).
//   - The SDK's reader is a json.Decoder, which cannot go past a syntax
//     error: it returned the error and the session ended. A filter in front
//     of it reads stdin line by line, answers a line that is not JSON itself
//     and passes only JSON lines on. A JSON line that is not a message makes
//     the SDK's Read return an error but keeps its reader going, so
//     mcpConn.Read answers it and reads on.
//
// mcpConn cannot pass the SDK's (unexported) session hook on to the
// IOTransport's connection, as the SDK's own LoggingTransport cannot either,
// so a JSON-RPC batch is served whatever protocol version was negotiated
// rather than refused from 2025-06-18 on.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// mcpStdio is the transport of `nika mcp` on in and out (see the file
// comment). in is closed with the connection, as the SDK's IOTransport
// closes its Reader, so that a signal unblocks the read of stdin.
type mcpStdio struct {
	in  io.ReadCloser
	out io.Writer
}

// Connect implements mcp.Transport.
func (t *mcpStdio) Connect(ctx context.Context) (mcp.Connection, error) {
	out := &lockedWriter{w: t.out}
	pr, pw := io.Pipe()
	// The filter bounds the lines, so the SDK's limit is off: it counts the
	// decoder's read-ahead too.
	inner, err := (&mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{out}, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &mcpConn{inner: inner, in: t.in, out: out, closed: make(chan struct{}), pending: map[jsonrpc.ID]bool{}}
	go c.filter(pw)
	return c, nil
}

// lockedWriter makes each Write atomic: the SDK and the filter both write
// whole messages to stdout.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// mcpInputError is a failure to read stdin (or a line over the limit): it
// ends the session, unlike a bad line.
type mcpInputError struct{ err error }

func (e *mcpInputError) Error() string { return "reading stdin: " + e.err.Error() }
func (e *mcpInputError) Unwrap() error { return e.err }

// mcpConn is the connection of mcpStdio around the IOTransport's.
type mcpConn struct {
	inner mcp.Connection
	in    io.ReadCloser
	out   *lockedWriter

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // requests returned by Read and not yet answered
	drained chan struct{}       // closed when pending empties, while Read waits for it
}

// filter copies the JSON lines of c.in to pw, one per line, answers the
// others, and closes pw at the end of input: with nil (io.EOF) or the read
// error as an *mcpInputError.
func (c *mcpConn) filter(pw *io.PipeWriter) {
	sc := bufio.NewScanner(c.in)
	sc.Buffer(nil, mcp.DefaultMaxLineLength)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(line) == 0:
		case !json.Valid(line):
			err := json.Unmarshal(line, new(any))
			c.writeError(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: %v", err))
		default:
			msg := append(append(make([]byte, 0, len(line)+1), line...), '\n')
			if _, err := pw.Write(msg); err != nil {
				return // the connection is closed
			}
		}
	}
	var err error
	if sc.Err() != nil {
		err = &mcpInputError{sc.Err()}
		if errors.Is(sc.Err(), bufio.ErrTooLong) {
			err = &mcpInputError{fmt.Errorf("a line is longer than %d bytes", mcp.DefaultMaxLineLength)}
		}
	}
	pw.CloseWithError(err)
}

// writeError answers a line that is no request with a JSON-RPC error whose
// id is null (jsonrpc.EncodeMessage leaves out a null id).
func (c *mcpConn) writeError(code int64, message string) {
	select {
	case <-c.closed:
		return
	default:
	}
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		_, _ = c.out.Write(append(data, '\n')) // a broken stdout shows in the SDK's next write
	}
}

// Read implements mcp.Connection. At the end of input it waits for the
// answers to the requests it returned before reporting it.
func (c *mcpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.inner.Read(ctx)
		var inputErr *mcpInputError
		switch {
		case err == nil:
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.mu.Lock()
				c.pending[req.ID] = true
				c.mu.Unlock()
			}
			return msg, nil
		case errors.Is(err, io.EOF) || errors.As(err, &inputErr):
			c.drain()
			return nil, err
		case ctx.Err() != nil:
			return nil, err
		}
		// A JSON line that is not a message (or a batch the SDK refuses):
		// the IOTransport's reader goes on.
		c.writeError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: %v", err))
	}
}

// drain waits until every pending request is answered or c is closed.
func (c *mcpConn) drain() {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	c.drained = make(chan struct{})
	drained := c.drained
	c.mu.Unlock()
	select {
	case <-drained:
	case <-c.closed:
	}
}

// Write implements mcp.Connection; a response, once written (or failed),
// settles its request.
func (c *mcpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.inner.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		if len(c.pending) == 0 && c.drained != nil {
			close(c.drained)
			c.drained = nil
		}
		c.mu.Unlock()
	}
	return err
}

// Close implements mcp.Connection.
func (c *mcpConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.inner.Close(), c.in.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection.
func (c *mcpConn) SessionID() string { return c.inner.SessionID() }

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
	err := serveMCP(ctx, &mcpStdio{in: in, out: stdout})
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exitSignal
	}
	fmt.Fprintf(stderr, "nika mcp: %v\n", err)
	return exitEnv
}
