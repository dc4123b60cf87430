package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools"
)

// What a tools/call gives back: its output (§5.3), and its failures as *spec.Error values.

// callError maps a failed tools/call. An error that is not the session closing can be the
// server's answer (a JSON-RPC error, or a result the SDK cannot decode) or the session breaking
// under the call (the SDK fails the calls in flight with whatever stopped its reading); a ping
// tells them apart, waiting at most wait for the answer.
func (cn *conn) callError(ctx context.Context, name string, err error, wait time.Duration) *spec.Error {
	d := map[string]any{"tool": name, "server": cn.name}
	var wire *jsonrpc.Error
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed):
	case ctx.Err() != nil:
		return tools.CancelError(ctx)
	default:
		answered, broken := cn.probe(ctx, wait)
		if ctx.Err() != nil {
			return tools.CancelError(ctx)
		}
		if errors.As(err, &wire) && !broken {
			d["rpc_code"] = wire.Code
			return spec.NewError(CodeToolError, fmt.Sprintf("%s failed: %s", name, wire.Message), d).Wrap(err)
		}
		if answered {
			return spec.NewError(CodeFailed, fmt.Sprintf("%s returned a result nika cannot read: %v", name, err), d).Wrap(err)
		}
	}
	msg := fmt.Sprintf("MCP server %q stopped answering while running %s: %v", cn.name, name, err)
	return unavailable(msg+cn.stderrNote(d), d).Wrap(err)
}

// listed names a server's tools for a message (the first 20).
func listed(names []string) string {
	if len(names) == 0 {
		return "(it lists none)"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(", … (%d more)", len(names)-20)
	}
	return strings.Join(names, ", ")
}

// argsError is the NIKA-INVOKE-002 of arguments that fail the input schema.
func argsError(name string, vs []schema.Violation) *spec.Error {
	list := make([]any, len(vs))
	for i, v := range vs {
		list[i] = map[string]any{"path": v.Path, "message": v.Message}
	}
	first := vs[0].Message
	if vs[0].Path != "" {
		first = "at " + vs[0].Path + ": " + first
	}
	msg := fmt.Sprintf("invalid arguments for %s: %s", name, first)
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return spec.NewError(CodeArgs, msg, map[string]any{"tool": name, "violations": list})
}

// output applies LANGUAGE.md §5.3: structuredContent when present; otherwise, when every block
// is text, the texts joined with "\n"; otherwise the content blocks as JSON.
func output(res *sdk.CallToolResult) (any, error) {
	if res.StructuredContent != nil {
		return tools.JSONValue(res.StructuredContent)
	}
	if texts, ok := allText(res.Content); ok {
		return strings.Join(texts, "\n"), nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, err
	}
	var blocks any
	if err := json.Unmarshal(b, &blocks); err != nil {
		return nil, err
	}
	return tools.JSONValue(blocks)
}

func allText(content []sdk.Content) ([]string, bool) {
	texts := make([]string, 0, len(content))
	for _, c := range content {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			return nil, false
		}
		texts = append(texts, t.Text)
	}
	return texts, true
}

// errorText is the text of an isError result (its texts joined with "\n", else its blocks as
// JSON), whole, for details.text, and on one line for the message.
func errorText(res *sdk.CallToolResult) (full, line string) {
	if texts, ok := allText(res.Content); ok {
		full = strings.Join(texts, "\n")
	} else if b, err := json.Marshal(res.Content); err == nil {
		full = string(b)
	}
	line = strings.Join(strings.Fields(full), " ")
	if line == "" {
		line = "the tool reported an error without a message"
	}
	return full, line
}
