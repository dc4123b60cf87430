package server

import (
	"net/http"
	"testing"
)

// Finished runs keep their events and reports in memory; KeepRuns alone
// lets 1000 runs of any size pile up (a 100 KB submission can leave tens
// of MB behind). KeepBytes bounds what finished runs hold: the oldest go
// first, and the newest finished run is always kept, so a report can be
// read right after its run.
func TestFinishedRunsAreBoundedInBytes(t *testing.T) {
	s, c := start(t, Options{KeepRuns: 100, KeepBytes: 1})
	var ids []string
	for range 3 {
		id := c.submit(helloYAML, nil)
		c.events(id)
		ids = append(ids, id)
		if st := c.get(id); st.State != "success" || st.Report == nil {
			t.Fatalf("%s right after its run: %+v", id, st)
		}
	}
	for _, id := range ids[:2] {
		if code, _ := c.do("GET", "/v1/runs/"+id, ""); code != http.StatusNotFound {
			t.Errorf("an older finished run over the byte budget = %d, want 404 (forgotten)", code)
		}
	}
	s.mu.Lock()
	kept, retained := len(s.finished), s.retained
	s.mu.Unlock()
	if kept != 1 || retained <= 0 {
		t.Errorf("kept %d finished runs holding %d bytes, want the newest only", kept, retained)
	}

	// A budget that holds two runs keeps two.
	one := retained
	s2, c2 := start(t, Options{KeepRuns: 100, KeepBytes: 2*one + one/2})
	var ids2 []string
	for range 4 {
		id := c2.submit(helloYAML, nil)
		c2.events(id)
		ids2 = append(ids2, id)
	}
	for i, id := range ids2 {
		code, _ := c2.do("GET", "/v1/runs/"+id, "")
		if want := map[bool]int{true: 200, false: 404}[i >= 2]; code != want {
			t.Errorf("run %d of 4 under a two-run budget = %d, want %d", i, code, want)
		}
	}
	s2.mu.Lock()
	if s2.retained > s2.opts.KeepBytes {
		t.Errorf("retained %d bytes over the budget %d", s2.retained, s2.opts.KeepBytes)
	}
	s2.mu.Unlock()
}
