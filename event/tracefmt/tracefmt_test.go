package tracefmt

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the renderer (review the diff: a golden is a statement of the expected rendering)")

// render is what a golden holds: the text, then the skipped lines if any.
func render(t *testing.T, trace []byte) string {
	t.Helper()
	tr, err := Read(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tr.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if len(tr.Skipped) > 0 {
		out.WriteString("-- skipped --\n")
		for _, s := range tr.Skipped {
			fmt.Fprintf(&out, "line %d: %s\n", s.Line, s.Why)
		}
	}
	fmt.Fprintf(&out, "-- %d events --\n", tr.Events)
	return out.String()
}

// Every testdata/NAME.ndjson renders as testdata/NAME.golden. The traces of real runs (agent-*, retry-exec,
// skipped-cancelled: `nika run … --trace`; paused, then resumed: a nika:prompt without a terminal, then
// `--resume last --answer`) and hand-written ones: kinds this package does not know and
// a trace without chain (unknown-and-old), a crashed run's cut trace with garbage and a torn last line (cut).
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no traces in testdata: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".ndjson")
		t.Run(name, func(t *testing.T) {
			trace, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, trace)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("rendering of %s differs from %s:\n--- got\n%s--- want\n%s", in, golden, got, want)
			}
		})
	}
}

var chainMember = regexp.MustCompile(`"chain":"[0-9a-f]{64}",`)

// A trace renders the same with and without its chain: show says nothing about it.
func TestChainDoesNotMatter(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("testdata", "agent-each.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	old := chainMember.ReplaceAll(trace, nil)
	if bytes.Equal(old, trace) {
		t.Fatal("the fixture has no chain")
	}
	if a, b := render(t, trace), render(t, old); a != b {
		t.Errorf("with chain:\n%s\nwithout:\n%s", a, b)
	}
}

// Fields are printed in a fixed order, whatever the map order of a run.
func TestRenderingIsStable(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("testdata", "unknown-and-old.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	first := render(t, trace)
	for range 20 {
		if got := render(t, trace); got != first {
			t.Fatalf("two renderings differ:\n%s\n%s", first, got)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain •••••• text": "plain •••••• text",
		"a\nb\tc":           `a\nb\tc`,
		"\x1b[31mred":       `\x1b[31mred`,
		"del\x7f c1\u0085":  `del\x7f c1\u0085`,
		"é ✓ 日本":            "é ✓ 日本",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2}, "0-2"},
		{[]int{5, 0, 1, 3, 7, 8, 9}, "0-1, 3, 5, 7-9"},
	} {
		if got := ranges(tt.in); got != tt.want {
			t.Errorf("ranges(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadError(t *testing.T) {
	sentinel := errors.New("gone")
	_, err := Read(iotest.ErrReader(sentinel))
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "reading line 1") {
		t.Errorf("Read = %v, want the read error on line 1", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteError(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("testdata", "agent-invoke.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteText(failWriter{}); err == nil || err.Error() != "closed" {
		t.Errorf("WriteText = %v, want the write error", err)
	}
}

// Read and WriteText never panic, whatever the trace holds.
func FuzzShow(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"kind":"tool_invoked","task":"t","attempt":-3,"iteration":-9,"fields":{"turn":{"a":1},"timing":"x"}}` + "\n"))
	f.Add([]byte(`{"kind":"workflow_failed","fields":{"timing":{"duration_ms":"x"},"state":[1]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Read of a bytes.Reader failed: %v", err)
		}
		var out bytes.Buffer
		if err := tr.WriteText(&out); err != nil {
			t.Fatal(err)
		}
	})
}
