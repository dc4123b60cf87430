package event

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikahq/nika/internal/testfs"
)

func TestFileCloseSaysAFailedWrite(t *testing.T) {
	f, err := CreateFile("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	f.Emit(ev(1, WorkflowStarted, map[string]any{"workflow": "w"}))
	f.Emit(ev(2, Log, map[string]any{"message": "more"}))
	err = f.Close()
	if err == nil || !strings.Contains(err.Error(), "the trace /dev/full is incomplete: event: writing seq 1") ||
		!strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Close() = %v, want the file, the first event lost and why", err)
	}
}

func TestFileCloseOfACompleteTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.ndjson")
	f, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Emit(ev(1, WorkflowStarted, map[string]any{"workflow": "w"}))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 1 {
		t.Errorf("trace = %q", b)
	}
}

// A write that fills the disk part-way is cut back: the file keeps the whole
// lines before it.
func TestFileCutsATornLine(t *testing.T) {
	dir := testfs.SmallFS(t, "64k")
	path := filepath.Join(dir, "t.ndjson")
	f, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Emit(ev(1, WorkflowStarted, map[string]any{"workflow": "w"}))
	f.Emit(ev(2, Log, map[string]any{"message": strings.Repeat("a", 100000)}))
	f.Emit(ev(3, Log, map[string]any{"message": "after"}))
	err = f.Close()
	if err == nil || !strings.Contains(err.Error(), "holds only the first 1 events") || !strings.Contains(err.Error(), "writing seq 2") {
		t.Errorf("Close() = %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "\n") != 1 || !strings.HasSuffix(string(b), "\n") || !strings.Contains(string(b), "workflow_started") {
		t.Errorf("trace = %q, want the first line alone", b)
	}
	if n, err := VerifyChain(bytes.NewReader(b)); n != 1 || err != nil {
		t.Errorf("VerifyChain = %d, %v: the cut trace is not an intact chain", n, err)
	}
}
