package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools"
)

// tools/list, read once per session, every page, and kept.

// toolSet is a server's tools/list, kept for the session.
type toolSet struct {
	order  []string // tool names, sorted
	byName map[string]*tool
}

// tool is one listed tool and its compiled input schema.
type tool struct {
	def  tools.Def
	doc  any
	once sync.Once
	sch  *schema.Schema
}

// schema returns the compiled input schema, nil when there is none nika can apply.
func (t *tool) schema() *schema.Schema {
	t.once.Do(func() {
		if t.doc == nil {
			return
		}
		if s, err := schema.Compile(t.doc); err == nil {
			t.sch = s
		}
	})
	return t.sch
}

// list returns the server's tools, reading every page of tools/list once per session.
func (cn *conn) list(ctx context.Context) (*toolSet, *spec.Error) {
	cn.mu.Lock()
	ts := cn.tools
	cn.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	select {
	case cn.listSem <- struct{}{}:
	case <-ctx.Done():
		return nil, tools.CancelError(ctx)
	}
	defer func() { <-cn.listSem }()
	cn.mu.Lock()
	ts = cn.tools
	cn.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	ts = &toolSet{byName: map[string]*tool{}}
	seen := map[string]bool{}
	cursor := ""
	for {
		res, err := cn.sess.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			if ctx.Err() != nil {
				return nil, tools.CancelError(ctx)
			}
			d := map[string]any{"server": cn.name}
			if !errors.Is(err, sdk.ErrConnectionClosed) {
				// A server that still answers refused the list, or sent one nika cannot read: a
				// retry would meet the same answer.
				answered, _ := cn.probe(ctx, cn.grace)
				if ctx.Err() != nil {
					return nil, tools.CancelError(ctx)
				}
				if answered {
					return nil, spec.NewError(CodeUnavailable, fmt.Sprintf("MCP server %q cannot list its tools: %v", cn.name, err), d).Wrap(err)
				}
			}
			return nil, unavailable(fmt.Sprintf("MCP server %q failed to list its tools: %v%s", cn.name, err, cn.stderrNote(d)), d).Wrap(err)
		}
		for _, t := range res.Tools {
			if t == nil || !validTool(t.Name) {
				continue
			}
			if _, dup := ts.byName[t.Name]; dup {
				continue
			}
			params, doc, err := inputSchema(t.InputSchema)
			if err != nil {
				continue
			}
			ts.byName[t.Name] = &tool{def: tools.Def{Name: "mcp:" + cn.name + "/" + t.Name, Description: t.Description, Params: params}, doc: doc}
			ts.order = append(ts.order, t.Name)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return nil, unavailable(fmt.Sprintf("MCP server %q returned the tools/list cursor %q twice", cn.name, res.NextCursor),
				map[string]any{"server": cn.name})
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	sort.Strings(ts.order)
	cn.mu.Lock()
	cn.tools = ts
	cn.mu.Unlock()
	return ts, nil
}

// inputSchema returns a tool's input schema as raw JSON (for the model) and as plain values
// (for the validator). A missing schema is an empty object schema.
func inputSchema(s any) (json.RawMessage, any, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	doc, err := tools.JSONValue(s)
	if err != nil {
		return nil, nil, err
	}
	return b, doc, nil
}

// validTool reports whether a server's tool name can be the tool segment of a nika name.
func validTool(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}
