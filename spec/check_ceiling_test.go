package spec

import (
	"strings"
	"testing"
)

// CheckOptions.Ceiling: the static permit checks run under the ceiling ∩ the file's permits, the
// findings say so, and Analysis.Permits is that intersection; without a ceiling nothing changes.
func TestCheckUnderACeiling(t *testing.T) {
	src := []byte("nika: v1\nworkflow: c\npermits: { exec: [\"echo\", \"cat\"] }\ntasks:\n  - id: a\n    exec: { command: [\"echo\", \"hi\"] }\n")
	if a := CheckSource("c.nika.yaml", src, CheckOptions{}); !a.Valid() {
		t.Fatalf("without a ceiling: %v", a.Findings)
	}
	a := CheckSource("c.nika.yaml", src, CheckOptions{Ceiling: &Permits{ExecList: []string{"cat"}}})
	if a.Valid() || len(a.Findings) != 1 || a.Findings[0].Code != CodeSecPermits ||
		!strings.Contains(a.Findings[0].Detail, "permits ceiling") {
		t.Fatalf("under exec [cat]: %+v, want one SEC-004 naming the ceiling", a.Findings)
	}
	if a.Permits == nil || strings.Join(a.Permits.ExecList, ",") != "cat" {
		t.Errorf("Analysis.Permits = %+v, want exec [cat]", a.Permits)
	}
	// A file without permits gets the ceiling.
	bare := []byte("nika: v1\nworkflow: c\ntasks:\n  - id: a\n    exec: { command: [\"cat\", \"x\"] }\n")
	if a := CheckSource("c.nika.yaml", bare, CheckOptions{Ceiling: &Permits{ExecList: []string{"cat"}}}); !a.Valid() || a.Permits == nil {
		t.Errorf("no permits under exec [cat]: %v, permits %+v", a.Findings, a.Permits)
	}
}
