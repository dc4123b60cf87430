//go:build unix

package exec

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

// allocated is the bytes this process has allocated on the heap so far (freed or not).
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// A child writing 64 MiB under a 1 MiB bound: the job fails with NIKA-EXEC-001 naming the
// stream and the bound, and the engine allocates in proportion to the bound, not to the output
// (the whole pipe is still drained: head exits 0 having written everything).
func TestOutputBoundMemory(t *testing.T) {
	const bound, written = 1 << 20, 64 << 20
	v := &Verb{MaxOutputBytes: bound}
	f := map[string]any{"command": []any{"head", "-c", strconv.Itoa(written), "/dev/zero"}}
	before := allocated()
	out := v.Run(context.Background(), job(t.TempDir(), f, nil))
	spent := allocated() - before
	// The kept bytes (at most the bound, backing array included), os/exec's copy buffer, the
	// process's bookkeeping: a few MiB; an unbounded buffer grows past the 64 MiB written.
	if limit := uint64(8 << 20); spent > limit {
		t.Errorf("the job allocated %d bytes for a %d-byte bound (%d written), want under %d", spent, bound, written, limit)
	}
	if out.Err == nil || out.Err.Code != spec.CodeExecExit {
		t.Fatalf("outcome %+v, want NIKA-EXEC-001", out)
	}
	d := out.Err.Details
	if d["stream"] != "stdout" || d["output_bytes"] != int64(written) || d["max_output_bytes"] != int64(bound) || d["exit_code"] != 0 {
		t.Errorf("details %v", d)
	}
	for _, want := range []string{"67108864 bytes (64 MiB) to stdout", "1048576 bytes (1 MiB)", "--max-exec-output"} {
		if !strings.Contains(out.Err.Message, want) {
			t.Errorf("message %q lacks %q", out.Err.Message, want)
		}
	}
}

// Every captured stream has the bound: exactly the bound passes whole, one byte more fails,
// naming the stream; a non-zero exit under a text capture is still reported as the exit.
func TestOutputBoundStreams(t *testing.T) {
	const bound = 4096
	v := &Verb{MaxOutputBytes: bound}
	tests := []struct {
		name, capture, command string
		n                      int
		stream                 string // "" for success
		exit                   int
	}{
		{"stdout at the bound", "stdout", "head -c %d /dev/zero", bound, "", 0},
		{"stdout over", "stdout", "head -c %d /dev/zero", bound + 1, "stdout", 0},
		{"stderr at the bound", "stderr", "head -c %d /dev/zero >&2", bound, "", 0},
		{"stderr over", "stderr", "head -c %d /dev/zero >&2", bound + 1, "stderr", 0},
		{"combined over by both", "combined", "head -c %d /dev/zero; head -c 1 /dev/zero >&2", bound, "combined", 0},
		{"structured stdout over", "structured", "head -c %d /dev/zero; exit 3", bound + 1, "stdout", 3},
		{"structured stderr over", "structured", "head -c %d /dev/zero >&2", bound + 1, "stderr", 0},
		{"stderr of capture stdout is not bounded", "stdout", "head -c %d /dev/zero >&2; echo ok", 4 * bound, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := strings.Replace(tt.command, "%d", strconv.Itoa(tt.n), 1)
			out := v.Run(context.Background(), job(t.TempDir(), map[string]any{"command": cmd, "capture": tt.capture}, nil))
			if tt.stream == "" {
				if out.Err != nil {
					t.Fatalf("error %v", out.Err)
				}
				if s, ok := out.Output.(string); ok && s != "ok" && len(s) != tt.n {
					t.Errorf("output of %d bytes, want %d", len(s), tt.n)
				}
				return
			}
			if out.Err == nil || out.Err.Code != spec.CodeExecExit || out.Err.Details["stream"] != tt.stream || out.Err.Details["exit_code"] != tt.exit {
				t.Fatalf("outcome %+v, want NIKA-EXEC-001 over %s with exit code %d", out, tt.stream, tt.exit)
			}
		})
	}
	out := v.Run(context.Background(), job(t.TempDir(), map[string]any{"command": "head -c 10000 /dev/zero; echo bad >&2; exit 4"}, nil))
	if out.Err == nil || out.Err.Code != spec.CodeExecExit || out.Err.Details["exit_code"] != 4 || out.Err.Details["stream"] != nil || !strings.Contains(out.Err.Message, "bad") {
		t.Errorf("a failed command over the bound: %+v, want its exit reported", out.Err)
	}
}

func TestCapBuffer(t *testing.T) {
	c := &capBuffer{max: 10}
	for _, p := range []string{"abc", "defghij", "klm", "", "nopqrstuvwxyz"} {
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: a bounded buffer still takes everything", p, n, err)
		}
	}
	if string(c.Bytes()) != "abcdefghij" || c.n != 26 || !c.over() || cap(c.buf) > 10 {
		t.Errorf("kept %q (cap %d), counted %d, over %v", c.Bytes(), cap(c.buf), c.n, c.over())
	}
	c = &capBuffer{max: 3}
	c.Write([]byte("abc"))
	if c.over() || string(c.Bytes()) != "abc" {
		t.Errorf("exactly the bound: %q over=%v", c.Bytes(), c.over())
	}
}
