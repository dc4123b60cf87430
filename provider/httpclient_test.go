package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// barrierServer answers once `size` requests are being handled at the same time (so every
// round of `size` concurrent requests needs `size` connections at once), and counts the
// connections it accepted.
type barrierServer struct {
	*httptest.Server
	conns atomic.Int64

	mu      sync.Mutex
	size    int
	waiting int
	open    chan struct{} // closed when the current round is complete
}

func newBarrierServer(t *testing.T, ctx context.Context, size int) *barrierServer {
	t.Helper()
	s := &barrierServer{size: size, open: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		open := s.open
		if s.waiting++; s.waiting == s.size {
			close(s.open)
			s.waiting, s.open = 0, make(chan struct{})
		}
		s.mu.Unlock()
		select {
		case <-open:
		case <-ctx.Done(): // the test gave up; do not hold the server's Close
		}
		io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	return s
}

// rounds sends `rounds` rounds of `size` concurrent requests through c, each round after the
// last has been fully read, and returns the connections the server accepted.
func (s *barrierServer) rounds(t *testing.T, c *http.Client, rounds int) int64 {
	t.Helper()
	for range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, s.size)
		for range s.size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := c.Get(s.URL)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				if _, err := io.ReadAll(resp.Body); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("request: %v", err)
		}
	}
	return s.conns.Load()
}

// A provider's client keeps as many idle connections as the limiter may have requests in
// flight: 3 rounds of 200 concurrent requests open 200 connections, not 200 per round.
func TestNewHTTPClientReusesConnectionsUpToTheLimit(t *testing.T) {
	defer goleak.VerifyNone(t)
	const size, rounds = 200, 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s := newBarrierServer(t, ctx, size)
	c := NewHTTPClient(256)
	got := s.rounds(t, c, rounds)
	c.CloseIdleConnections()
	s.Close()
	if got > size {
		t.Errorf("NewHTTPClient(256): %d rounds of %d concurrent requests opened %d connections, want at most %d (idle ones reused)",
			rounds, size, got, size)
	}

	d := newBarrierServer(t, ctx, size)
	plain := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Logf("connections for %d rounds of %d: NewHTTPClient(256) %d, Go's default transport %d", rounds, size, got, d.rounds(t, plain, rounds))
	plain.CloseIdleConnections()
	d.Close()
}

// A server that speaks HTTP/2 over TLS is spoken to in HTTP/2, with the caller's TLS settings.
func TestNewHTTPClientSpeaksHTTP2(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()

	c := NewHTTPClient(4)
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T, want *http.Transport", c.Transport)
	}
	if c.Timeout != 0 {
		t.Errorf("client Timeout = %v, want none (deadlines come from the context)", c.Timeout)
	}
	if tr.MaxIdleConnsPerHost != 4 || (tr.MaxIdleConns != 0 && tr.MaxIdleConns < 4) {
		t.Errorf("MaxIdleConnsPerHost %d, MaxIdleConns %d; want 4 and at least 4", tr.MaxIdleConnsPerHost, tr.MaxIdleConns)
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	if resp.ProtoMajor != 2 {
		t.Errorf("response protocol %s (server saw %s), want HTTP/2", resp.Proto, body)
	}
}

// A limit of 0 or less sizes the client for DefaultMaxLimit, the Front's default.
func TestNewHTTPClientDefaultSize(t *testing.T) {
	for _, n := range []int{0, -1} {
		tr := NewHTTPClient(n).Transport.(*http.Transport)
		if tr.MaxIdleConnsPerHost != DefaultMaxLimit || (tr.MaxIdleConns != 0 && tr.MaxIdleConns < DefaultMaxLimit) {
			t.Errorf("NewHTTPClient(%d): MaxIdleConnsPerHost %d, MaxIdleConns %d; want %d", n, tr.MaxIdleConnsPerHost, tr.MaxIdleConns, DefaultMaxLimit)
		}
	}
}
