package lsp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A check that a newer change supersedes while it runs is never published:
// the check of version 2 is held until version 3 has been received, then
// released; the first diagnostics published after version 1 are version 3's.
func TestSupersededCheckIsNotPublished(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	c := start(t, Options{}, func(s *server) {
		s.beforeCheck = func(_ string, seq uint64) {
			if seq == 2 {
				close(entered)
				<-release
			}
		}
	})
	c.initialize()
	text := fixture(t, "broken.nika.yaml")
	c.open(brokenURI, text)
	first := c.diagnostics(brokenURI, 1)
	c.change(brokenURI, 2, contentChange{Text: text + "\n"})
	<-entered
	fix := Range{at(t, text, "modle", 0), at(t, text, "modle", 5)}
	c.change(brokenURI, 3, contentChange{Range: &fix, Text: "model"})
	// A round trip: once it is answered, the server has read version 3.
	if e := c.callErr("nika/ping", nil, nil); e == nil || e.Code != codeMethodNotFound {
		t.Fatalf("ping: %v", e)
	}
	close(release)
	m := c.await(func(m rawMessage) bool { return m.Method == "textDocument/publishDiagnostics" }, "the next diagnostics")
	var p publishDiagnosticsParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.Version == nil || *p.Version != 3 {
		t.Fatalf("published version %v after the superseded check, want 3", p.Version)
	}
	if len(p.Diagnostics) != len(first.Diagnostics)-1 {
		t.Errorf("version 3 has %d diagnostics, want %d", len(p.Diagnostics), len(first.Diagnostics)-1)
	}
	c.shutdown()
}

// The writer drops a queued message whose drop check says it went stale
// while it waited, and writes the others in order.
func TestOutboxDropsStaleMessages(t *testing.T) {
	var buf bytes.Buffer
	o := newOutbox(&buf)
	o.send(map[string]int{"a": 1}, nil)
	o.send(map[string]int{"b": 2}, func() bool { return true })
	o.send(map[string]int{"c": 3}, func() bool { return false })
	o.close()
	want := "Content-Length: 7\r\n\r\n{\"a\":1}Content-Length: 7\r\n\r\n{\"c\":3}"
	if buf.String() != want {
		t.Errorf("written %q, want %q", buf.String(), want)
	}
}
