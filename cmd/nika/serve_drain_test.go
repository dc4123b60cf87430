package main

// Black-box test of the SIGTERM drain of `nika serve` (issue 12 item 8):
// clients hear 503, not a refused connection, while runs drain.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// post sends a submission with a deadline that only keeps a broken server
// from hanging the test (nothing is timed).
func (s *served) post(body string) (int, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/runs", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v (the server did not answer)", body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// errorMessage is the message of a {"error": {"message"}} body, "" if it is
// not one.
func errorMessage(body string) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	return e.Error.Message
}

// During the SIGTERM drain the listener stays open: /readyz is 503 and a
// submission gets 503 with a JSON error while a run is still running; the
// run then finishes and the server exits 0.
func TestServeDrainAnswers503(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, "--permits", writePermits(t, dir, "exec: [cat]\n"), "--shutdown-timeout", "10m")
	fifo := mkfifo(t, dir, "hold")
	id := s.submit(catYAML("held", fifo))
	s.waitLine("run " + id + " (workflow held) started")
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.waitLine("shutting down: 1 running runs") // logged once submissions are refused

	if code, body := s.do("GET", "/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d %q, want 503", code, body)
	}
	if code, body := s.post(submitBody(catYAML("late", fifo))); code != http.StatusServiceUnavailable || !strings.Contains(errorMessage(body), "shutting down") {
		t.Errorf("POST while draining: %d %s, want 503 with a JSON error saying the server is shutting down", code, body)
	}
	if code, body := s.do("GET", "/v1/runs/"+id, ""); code != http.StatusOK || !strings.Contains(body, `"state":"running"`) {
		t.Errorf("GET of the draining run: %d %s, want 200, running", code, body)
	}
	release(t, fifo) // the run drains only now, after every check above
	s.waitLine("run " + id + " (workflow held) finished: success")
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d after the drain, want 0\n%s", code, s.stderr())
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Error("the server still accepts connections after exiting")
	}
}
