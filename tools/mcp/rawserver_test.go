package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer is an MCP server written by hand behind a Dial, so a test can make it answer with
// bytes the SDK's own server never sends. Every tools/call is answered with the line callLine
// when it is set, otherwise with a response whose result is call.
type rawServer struct {
	tools    string // the raw `tools` array of tools/list
	listErr  string // when set, the raw JSON-RPC error tools/list answers with
	call     string // the raw result of tools/call
	callLine string // a raw line sent instead of the tools/call response
	starts   atomic.Int32
	mu       sync.Mutex // guards call and callLine once the server runs
}

func (s *rawServer) answer(call, callLine string) {
	s.mu.Lock()
	s.call, s.callLine = call, callLine
	s.mu.Unlock()
}

func (s *rawServer) dial(ctx context.Context, _ string, _ Server) (sdk.Transport, error) {
	s.starts.Add(1)
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	go func() {
		defer sw.Close()
		defer sr.Close()
		sc := bufio.NewScanner(sr)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
				continue
			}
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
			case "tools/list":
				if s.listErr != "" {
					if _, err := io.WriteString(sw, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":`+s.listErr+"}\n"); err != nil {
						return
					}
					continue
				}
				result = `{"tools":` + s.tools + `}`
			case "tools/call":
				s.mu.Lock()
				call, line := s.call, s.callLine
				s.mu.Unlock()
				if line != "" {
					if _, err := io.WriteString(sw, line+"\n"); err != nil {
						return
					}
					continue
				}
				result = call
			default:
				result = `{}`
			}
			if _, err := io.WriteString(sw, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+"}\n"); err != nil {
				return
			}
		}
	}()
	return &sdk.IOTransport{Reader: cr, Writer: cw}, nil
}

// A live server whose tools/call result the SDK cannot decode (here a content type it does not
// know) has not crashed: the call is NIKA-INVOKE-003, not transient, and the session is kept
// rather than killed and restarted on every call.
func TestUnreadableResultKeepsServer(t *testing.T) {
	s := &rawServer{tools: `[{"name":"t","inputSchema":{"type":"object"}}]`, call: `{"content":[{"type":"hologram","text":"x"}]}`}
	c := NewClient(memRegistry("raw"), Options{Dial: s.dial})
	defer c.Close()
	for i := 0; i < 2; i++ {
		_, err := c.Call(context.Background(), "mcp:raw/t", nil)
		se := asError(t, err, CodeFailed)
		if se.Transient || !strings.Contains(se.Message, "mcp:raw/t") {
			t.Errorf("call %d: %+v", i, se)
		}
	}
	if n := s.starts.Load(); n != 1 {
		t.Errorf("starts = %d, want 1: a live server was dropped", n)
	}
}

// A server that writes a line that is not a JSON-RPC message breaks the session (the SDK stops
// reading it): the call in flight is NIKA-MCP-001, transient, and the next call starts the
// server again; it is not the tool's NIKA-MCP-002.
func TestBrokenSessionMidCallIsUnavailable(t *testing.T) {
	s := &rawServer{tools: `[{"name":"t","inputSchema":{"type":"object"}}]`, callLine: `{"jsonrpc":"2.0"}`}
	c := NewClient(memRegistry("raw"), Options{Dial: s.dial})
	defer c.Close()
	_, err := c.Call(context.Background(), "mcp:raw/t", nil)
	se := asError(t, err, CodeUnavailable)
	if !se.Transient {
		t.Errorf("error = %+v, want transient", se)
	}
	s.answer(`{"content":[{"type":"text","text":"ok"}]}`, "")
	if out, err := c.Call(context.Background(), "mcp:raw/t", nil); err != nil || out != "ok" {
		t.Fatalf("after the broken session: %v, %v", out, err)
	}
	if n := s.starts.Load(); n != 2 {
		t.Errorf("starts = %d, want 2", n)
	}
}

// A registry may name a server with a `/` (other MCP clients' files do): its tools are listed
// as mcp:<server>/<tool>, and calling one of them reaches that server. A tool name never holds
// a `/`, so the name splits at its last one.
func TestServerNameWithSlash(t *testing.T) {
	m := newMemServer(t, 0)
	c := newMemClient(t, m, memRegistry("team/mem"))
	defs, err := c.List(context.Background(), "team/mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) == 0 || defs[0].Name != "mcp:team/mem/block" {
		t.Fatalf("defs = %+v", defs)
	}
	out, err := c.Call(context.Background(), "mcp:team/mem/echo", map[string]any{"text": "hi"})
	if err != nil || out != "hi" {
		t.Fatalf("call = %v, %v", out, err)
	}
}

// A live server that answers tools/list with an error (one without tools, say) is not down: a
// retry cannot help, so the NIKA-MCP-001 is not transient, and the session is kept rather than
// killed and started again by every call.
func TestListRefusedByLiveServer(t *testing.T) {
	s := &rawServer{listErr: `{"code":-32601,"message":"Method not found"}`}
	c := NewClient(memRegistry("raw"), Options{Dial: s.dial})
	defer c.Close()
	for i := 0; i < 2; i++ {
		_, err := c.Call(context.Background(), "mcp:raw/t", nil)
		se := asError(t, err, CodeUnavailable)
		if se.Transient || !strings.Contains(se.Message, "Method not found") {
			t.Errorf("call %d: %+v", i, se)
		}
	}
	if n := s.starts.Load(); n != 1 {
		t.Errorf("starts = %d, want 1: a live server was dropped", n)
	}
}
