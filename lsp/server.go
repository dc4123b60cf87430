package lsp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nikahq/nika/spec"
)

// Options configure a server.
type Options struct {
	// Check is what every document is checked with: the --model default and
	// the MCP registry's server names, exactly as `nika check` has them. The
	// server also offers the registry's names in tool completions.
	Check spec.CheckOptions
	// Debounce is how long the server waits after a change for the next one
	// before it checks the document. Zero checks after every change; an
	// opened document is always checked at once.
	Debounce time.Duration
	// Version is the server version announced in initialize's serverInfo.
	Version string
	// Log, when not nil, gets one line for each problem the server survives:
	// a body that is not JSON, a handler that panicked.
	Log io.Writer
}

// DefaultDebounce is the pause `nika lsp` waits for after a change: short
// enough that a 1,000-task file has its diagnostics within 300 ms of the last
// keystroke (BENCHMARKS.md), long enough that a burst of keystrokes is
// checked once.
const DefaultDebounce = 50 * time.Millisecond

// ErrNoShutdown is what Serve returns when the session ended (an exit
// notification, or the end of the input) without a shutdown request first.
// LSP asks the server to exit with code 1 then.
var ErrNoShutdown = errors.New("lsp: the session ended without a shutdown request")

// lifecycle states of a session.
const (
	stateNew = iota
	stateRunning
	stateShutdown
)

type server struct {
	opts Options
	out  *outbox

	state int // read and written by the read loop only

	mu   sync.Mutex
	docs map[string]*document

	wake     chan struct{} // a document became dirty (buffered, never blocks)
	stop     chan struct{}
	loopDone chan struct{}

	// beforeCheck, set by tests only, runs in the check loop just before a
	// check starts, with the document's change sequence number.
	beforeCheck func(uri string, seq uint64)
}

// Serve runs one LSP session: it reads Content-Length framed JSON-RPC
// messages from in and writes its answers and notifications to out, until
// the client sends exit or in ends. It returns nil after a clean
// shutdown-then-exit, ErrNoShutdown when the session ended without a
// shutdown request, and an error wrapping the cause when the input could not
// be framed or read. Every goroutine Serve starts has ended when it returns;
// it never closes in or out.
func Serve(in io.Reader, out io.Writer, opts Options) error {
	return serve(newServer(out, opts), in)
}

func newServer(out io.Writer, opts Options) *server {
	return &server{
		opts:     opts,
		out:      newOutbox(out),
		docs:     map[string]*document{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
}

func serve(s *server, in io.Reader) (err error) {
	go s.checkLoop()
	defer func() {
		close(s.stop)
		<-s.loopDone
		s.out.close()
	}()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		body, rerr := readMessage(r)
		if rerr == io.EOF {
			if s.state == stateShutdown {
				return nil
			}
			return ErrNoShutdown
		}
		if rerr != nil {
			return rerr
		}
		if done, exitErr := s.handle(body); done {
			return exitErr
		}
	}
}

// handle answers one message. It reports done when the message was exit.
func (s *server) handle(body []byte) (done bool, exitErr error) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		s.logf("a message that is not JSON: %v", err)
		s.reply(json.RawMessage("null"), nil, &rpcError{Code: codeParseError, Message: "parse error: " + err.Error()})
		return false, nil
	}
	if m.Method == "" { // a response to a request of ours: the server sends none
		return false, nil
	}
	if m.Method == "exit" {
		if s.state == stateShutdown {
			return true, nil
		}
		return true, ErrNoShutdown
	}
	result, rerr := s.dispatch(&m)
	if m.isRequest() {
		s.reply(m.ID, result, rerr)
	}
	return false, nil
}

// dispatch runs the handler of a method under the lifecycle rules of LSP
// 3.17: before initialize only initialize is answered (notifications are
// dropped), after shutdown only exit. A handler that panics fails its
// request with an internal error and the session goes on.
func (s *server) dispatch(m *message) (result any, rerr *rpcError) {
	switch {
	case s.state == stateNew && m.Method != "initialize":
		return nil, &rpcError{Code: codeServerNotInitialized, Message: "the server is not initialized"}
	case s.state == stateShutdown:
		return nil, &rpcError{Code: codeInvalidRequest, Message: "the server is shut down"}
	case s.state == stateRunning && m.Method == "initialize":
		return nil, &rpcError{Code: codeInvalidRequest, Message: "initialize was already sent"}
	}
	h := route(m.Method)
	if h == nil {
		if m.isRequest() {
			return nil, &rpcError{Code: codeMethodNotFound, Message: "method not found: " + m.Method}
		}
		return nil, nil // unknown notifications ($/cancelRequest, $/setTrace, …) are ignored
	}
	defer func() {
		if p := recover(); p != nil {
			s.logf("%s panicked: %v\n%s", m.Method, p, debug.Stack())
			result, rerr = nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("internal error in %s: %v", m.Method, p)}
		}
	}()
	return h(s, m.Params)
}

type handler func(s *server, params json.RawMessage) (any, *rpcError)

func ignore(*server, json.RawMessage) (any, *rpcError) { return nil, nil }

// route returns the handler of a method, nil for one the server does not know.
func route(method string) handler {
	switch method {
	case "initialize":
		return (*server).initialize
	case "initialized", "textDocument/didSave":
		return ignore
	case "shutdown":
		return (*server).shutdown
	case "textDocument/didOpen":
		return (*server).didOpen
	case "textDocument/didChange":
		return (*server).didChange
	case "textDocument/didClose":
		return (*server).didClose
	case "textDocument/hover":
		return (*server).hover
	case "textDocument/completion":
		return (*server).completion
	case "textDocument/definition":
		return (*server).definition
	case "textDocument/references":
		return (*server).references
	case "textDocument/codeAction":
		return (*server).codeAction
	}
	return nil
}

func (s *server) reply(id json.RawMessage, result any, rerr *rpcError) {
	resp := response{JSONRPC: "2.0", ID: id, Error: rerr}
	if rerr == nil {
		raw, err := encode(result)
		if err != nil {
			resp.Error = &rpcError{Code: codeInternalError, Message: "cannot encode the result: " + err.Error()}
		} else {
			resp.Result = raw
		}
	}
	s.out.send(resp, nil)
}

func (s *server) notify(method string, params any, drop func() bool) {
	s.out.send(notification{JSONRPC: "2.0", Method: method, Params: params}, drop)
}

func (s *server) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, "nika lsp: "+format+"\n", args...)
	}
}

func decodeParams(raw json.RawMessage, v any) *rpcError {
	if err := json.Unmarshal(raw, v); err != nil {
		return &rpcError{Code: codeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return nil
}

func (s *server) initialize(raw json.RawMessage) (any, *rpcError) {
	var p initializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	s.state = stateRunning
	return map[string]any{
		"capabilities": map[string]any{
			"positionEncoding": "utf-16",
			"textDocumentSync": map[string]any{"openClose": true, "change": 2, "save": false},
			"hoverProvider":    true,
			"completionProvider": map[string]any{
				"triggerCharacters": []string{".", ":", "["},
			},
			"definitionProvider": true,
			"referencesProvider": true,
			"codeActionProvider": map[string]any{"codeActionKinds": []string{"quickfix"}},
		},
		"serverInfo": map[string]any{"name": "nika", "version": s.opts.Version},
	}, nil
}

func (s *server) shutdown(json.RawMessage) (any, *rpcError) {
	s.state = stateShutdown
	return nil, nil
}
