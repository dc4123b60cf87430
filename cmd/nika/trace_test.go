package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// traceOfFixture runs testdata/trace/retry-each.nika.yaml (a task failing after its retries, a for_each
// of agents with a retried iteration; exit 1) and returns the directory and its trace's path.
func traceOfFixture(t *testing.T) (dir, trace string) {
	t.Helper()
	dir = t.TempDir()
	src, err := os.ReadFile(filepath.Join(testdataDir(t), "trace", "retry-each.nika.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "retry-each.nika.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, "run", "retry-each.nika.yaml", "--trace", "t.ndjson", "--no-progress")
	if r.code != 1 {
		t.Fatalf("nika run: exit %d, want 1 (a task fails)\nstderr:\n%s", r.code, r.stderr)
	}
	return dir, filepath.Join(dir, "t.ndjson")
}

func readTraceLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the trace is empty or does not end with a newline: %q", b)
	}
	return bytes.SplitAfter(b[:len(b)-1], []byte("\n"))
}

// The trace of a real run verifies; the same trace with one byte changed in its third line fails naming
// line 3; cut in the middle of its last line, it fails naming the last line as torn.
func TestTraceVerify(t *testing.T) {
	dir, trace := traceOfFixture(t)
	lines := readTraceLines(t, trace)
	if len(lines) < 5 {
		t.Fatalf("%d lines in the trace", len(lines))
	}
	r := runBinary(t, dir, "trace", "verify", "t.ndjson")
	if want := "t.ndjson: " + strconv.Itoa(len(lines)) + " events, chain intact\n"; r.code != 0 || r.stderr != want || r.stdout != "" {
		t.Fatalf("verify of an intact trace: exit %d, stdout %q, stderr %q; want 0 and %q", r.code, r.stdout, r.stderr, want)
	}

	// One byte of line 3's kind, flipped: still one line, still JSON, another content.
	flipped := bytes.Clone(bytes.Join(lines, nil))
	at := len(lines[0]) + len(lines[1]) + bytes.Index(lines[2], []byte(`"kind":"`)) + len(`"kind":"`)
	flipped[at] ^= 0x01
	writeTraceFile(t, dir, "flipped.ndjson", flipped)
	r = runBinary(t, dir, "trace", "verify", "flipped.ndjson")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "flipped.ndjson:3: chain mismatch: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("verify of a changed line 3: exit %d, stderr %q; want 1 and one line naming line 3", r.code, r.stderr)
	}

	last := lines[len(lines)-1]
	torn := append(bytes.Join(lines[:len(lines)-1], nil), last[:len(last)/2]...)
	writeTraceFile(t, dir, "torn.ndjson", torn)
	r = runBinary(t, dir, "trace", "verify", "torn.ndjson")
	want := "torn.ndjson:" + strconv.Itoa(len(lines)) + ": torn last line: "
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("verify of a torn trace: exit %d, stderr %q; want 1 and %q…", r.code, r.stderr, want)
	}
}

func writeTraceFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// What differs between two runs of the fixture: the run id, the times and the measured durations.
var (
	traceRunID    = regexp.MustCompile(`r-[0-9a-f-]{36}`)
	traceTime     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	traceDuration = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`)
)

// show prints the run of a real trace: the header, the task that failed after its retries, the
// for_each's iterations with the agent turns and the retried one. testdata/trace/show.golden holds it,
// with the run id, the times and the durations replaced (refresh it with -update).
func TestTraceShow(t *testing.T) {
	dir, _ := traceOfFixture(t)
	r := runBinary(t, dir, "trace", "show", "t.ndjson")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("show: exit %d, stderr %q", r.code, r.stderr)
	}
	got := traceRunID.ReplaceAllString(r.stdout, "RUN")
	got = traceTime.ReplaceAllString(got, "TIME")
	got = traceDuration.ReplaceAllString(got, "DURATION")
	golden := filepath.Join(testdataDir(t), "trace", "show.golden")
	if *update {
		writeTraceFile(t, filepath.Dir(golden), filepath.Base(golden), []byte(got))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("nika trace show:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	for _, line := range []string{
		"flaky: failure (exec, 3 attempts, DURATION)",
		"  retry: attempt 2 failed with NIKA-EXEC-001, next in DURATION",
		"  error NIKA-EXEC-001 (process_error, attempt 3): the command exited with code 7: upstream unavailable",
		"each: failure (agent, for_each, DURATION)",
		"  iterations: 3 in the trace (0-2), 1 retried",
		"  [1] 2 attempts",
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("show has no line %q", line)
		}
	}
}

// A trace with a torn last line still shows, and says which line it skipped.
func TestTraceShowOfATornTrace(t *testing.T) {
	dir, trace := traceOfFixture(t)
	lines := readTraceLines(t, trace)
	last := lines[len(lines)-1]
	writeTraceFile(t, dir, "torn.ndjson", append(bytes.Join(lines[:len(lines)-1], nil), last[:10]...))
	r := runBinary(t, dir, "trace", "show", "torn.ndjson")
	want := "torn.ndjson:" + strconv.Itoa(len(lines)) + ": skipped: torn last line (no newline at the end)\n"
	if r.code != 0 || r.stderr != want || !strings.Contains(r.stdout, "state     unfinished") || !strings.Contains(r.stdout, "flaky: failure") {
		t.Errorf("show of a torn trace: exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
}

// Usage errors exit 2, an unreadable file 3, help 0; in the binary and in-process alike.
func TestTraceUsage(t *testing.T) {
	dir := t.TempDir()
	writeTraceFile(t, dir, "empty.ndjson", nil)
	tests := []struct {
		args   []string
		code   int
		stdout string // a prefix
		stderr string // a prefix
	}{
		{[]string{"trace"}, 2, "", "nika trace: give a subcommand, verify or show\nUsage: nika trace verify FILE\n"},
		{[]string{"trace", "-h"}, 0, "Usage: nika trace verify FILE\n       nika trace show FILE\n\n  verify FILE", ""},
		{[]string{"help", "trace"}, 0, "Usage: nika trace verify FILE\n", ""},
		{[]string{"trace", "show", "--help"}, 0, "Usage: nika trace verify FILE\n", ""},
		{[]string{"trace", "frob"}, 2, "", "nika trace: unknown subcommand \"frob\" (use verify or show)\n"},
		{[]string{"trace", "verify"}, 2, "", "nika trace verify: give exactly one trace file\n"},
		{[]string{"trace", "show", "a", "b"}, 2, "", "nika trace show: give exactly one trace file\n"},
		{[]string{"trace", "verify", "--json", "a"}, 2, "", "nika trace verify: flag provided but not defined: -json\n"},
		{[]string{"trace", "verify", "missing.ndjson"}, 3, "", "nika trace verify: cannot read missing.ndjson: open missing.ndjson: no such file or directory\n"},
		{[]string{"trace", "show", "missing.ndjson"}, 3, "", "nika trace show: cannot read missing.ndjson: "},
		{[]string{"trace", "verify", "."}, 3, "", "nika trace verify: .: reading line 1: read .: is a directory\n"},
		{[]string{"trace", "verify", "empty.ndjson"}, 0, "", "empty.ndjson: 0 events, chain intact\n"},
		{[]string{"trace", "show", "empty.ndjson"}, 1, "", "nika trace show: empty.ndjson holds no event\n"},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		check := func(t *testing.T, r result) {
			if r.code != tt.code || !strings.HasPrefix(r.stdout, tt.stdout) || !strings.HasPrefix(r.stderr, tt.stderr) ||
				(tt.stdout == "" && r.stdout != "") || (tt.stderr == "" && r.stderr != "") {
				t.Errorf("nika %s: exit %d, stdout %q, stderr %q; want %d, %q…, %q…", name, r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		}
		t.Run(name, func(t *testing.T) {
			check(t, runBinary(t, dir, tt.args...))
			check(t, runInProcess(t, dir, tt.args...))
		})
	}
}
