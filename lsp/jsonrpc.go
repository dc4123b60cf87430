package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// maxMessage bounds one message body. A workflow is a text file an editor
// holds in memory; 64 MiB is far past any real one and keeps a bad
// Content-Length from allocating without bound.
const maxMessage = 64 << 20

// JSON-RPC 2.0 and LSP error codes.
const (
	codeParseError           = -32700
	codeInvalidRequest       = -32600
	codeMethodNotFound       = -32601
	codeInvalidParams        = -32602
	codeInternalError        = -32603
	codeServerNotInitialized = -32002
)

// errFraming is a header the server cannot read past: without a valid
// Content-Length there is no way to find the next message, so the session ends.
var errFraming = errors.New("lsp: bad message framing")

// message is any JSON-RPC message as read: a request has an id and a
// method, a notification only a method, a response an id and no method.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

func (m *message) isRequest() bool { return len(m.ID) > 0 && m.Method != "" }

// rpcError is the error object of a response.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// response is written for every request; Result is always present on
// success (JSON null when the answer is "nothing"), as JSON-RPC requires.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// readMessage reads one Content-Length framed message (LSP base protocol):
// header lines ending in CRLF, an empty line, then exactly Content-Length
// bytes. It returns io.EOF at a clean end of input between messages, and
// errFraming (wrapped) for a header it cannot use. A body that is not JSON is
// returned as is: the caller answers it with a parse error and goes on.
func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for first := true; ; first = false {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && first && line == "" {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%w: reading a header: %v", errFraming, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if length < 0 {
				return nil, fmt.Errorf("%w: no Content-Length header", errFraming)
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %q", errFraming, line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || n > maxMessage {
				return nil, fmt.Errorf("%w: Content-Length %q", errFraming, strings.TrimSpace(value))
			}
			length = n
		}
		// Content-Type is optional and its only defined value is the default
		// (utf-8 JSON): other headers are ignored, as the base protocol allows.
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: reading a %d-byte body: %v", errFraming, length, err)
	}
	return body, nil
}

// encode marshals v without HTML escaping, so messages carry `<`, `>` and
// `&` as written in the workflow.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// outbox serialises what the server writes. Handlers and the check loop
// queue messages without blocking (a client that is slow to read never
// stalls the read loop, so it cannot deadlock on a full pipe); one writer
// goroutine frames and writes them in queue order. A queued message may
// carry a drop check, evaluated just before writing: diagnostics superseded
// while they waited are never written.
type outbox struct {
	w io.Writer

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []outItem
	closed  bool
	err     error // the first write error; later messages are dropped
	stopped chan struct{}
}

type outItem struct {
	body []byte
	drop func() bool
}

func newOutbox(w io.Writer) *outbox {
	o := &outbox{w: w, stopped: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	go o.run()
	return o
}

// send queues one message; drop, when not nil, is asked just before writing.
func (o *outbox) send(v any, drop func() bool) {
	body, err := encode(v)
	if err != nil { // a bug in a handler's result type: never silent
		body, _ = encode(notification{JSONRPC: "2.0", Method: "window/logMessage",
			Params: map[string]any{"type": 1, "message": "nika lsp: cannot encode a message: " + err.Error()}})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.queue = append(o.queue, outItem{body: body, drop: drop})
	o.cond.Signal()
}

func (o *outbox) run() {
	defer close(o.stopped)
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed {
			o.cond.Wait()
		}
		if len(o.queue) == 0 {
			o.mu.Unlock()
			return
		}
		item := o.queue[0]
		o.queue[0] = outItem{}
		o.queue = o.queue[1:]
		failed := o.err != nil
		o.mu.Unlock()
		if failed || (item.drop != nil && item.drop()) {
			continue
		}
		frame := make([]byte, 0, len(item.body)+32)
		frame = append(frame, "Content-Length: "...)
		frame = strconv.AppendInt(frame, int64(len(item.body)), 10)
		frame = append(frame, "\r\n\r\n"...)
		frame = append(frame, item.body...)
		if _, err := o.w.Write(frame); err != nil {
			o.mu.Lock()
			o.err = err
			o.mu.Unlock()
		}
	}
}

// close writes what is queued, then stops the writer and waits for it.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Signal()
	o.mu.Unlock()
	<-o.stopped
}
