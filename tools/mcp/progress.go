package mcp

import (
	"context"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress of CallProgress: tokens unique in the run, and notifications routed to the call in
// flight that owns the token, from that call's session only.

// progressSink is where the progress notifications of one call in flight go.
type progressSink struct {
	sess *sdk.ClientSession // the session the call went to: no other may report on it
	mu   sync.Mutex
	f    func(progress, total float64, message string) // nil once the call has returned
}

// watchProgress gives a call's params a fresh progress token and routes the notifications that
// name it, from sess, to f until the returned stop is called.
func (c *Client) watchProgress(params *sdk.CallToolParams, sess *sdk.ClientSession, f func(progress, total float64, message string)) (stop func()) {
	s := &progressSink{sess: sess, f: f}
	c.progMu.Lock()
	c.progSeq++
	token := fmt.Sprintf("nika-%d", c.progSeq)
	c.progress[token] = s
	c.progMu.Unlock()
	params.SetProgressToken(token)
	return func() {
		c.progMu.Lock()
		delete(c.progress, token)
		c.progMu.Unlock()
		s.mu.Lock() // waits for a delivery in progress
		s.f = nil
		s.mu.Unlock()
	}
}

// onProgress is the SDK's progress handler: it runs on the session's handler goroutine, one
// notification at a time, in the order the server sent them.
func (c *Client) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return // nika's tokens are strings: not one of its calls
	}
	c.progMu.Lock()
	s := c.progress[token]
	c.progMu.Unlock()
	if s == nil || s.sess != req.Session {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	defer func() { _ = recover() }()
	s.f(req.Params.Progress, req.Params.Total, req.Params.Message)
}
