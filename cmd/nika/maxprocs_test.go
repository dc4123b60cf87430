//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runNika runs the built binary in dir through /bin/sh -c script (the binary is "$0", args "$@"),
// with the test environment plus extra.
func runNika(t *testing.T, dir, script string, extra []string, args ...string) result {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, nikaBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), extra...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running nika %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestWideFanOutUnderLowFileLimit is issue 11 item 9: a 10,000-iteration exec fan-out under a
// 1,024-descriptor limit. Unbounded, every ready exec started at once and thousands failed with
// NIKA-EXEC-002 "too many open files"; with the default process bound they queue and all
// succeed. `ulimit -n` sets the hard limit too, so the Go runtime in nika cannot raise its soft
// limit past it; the workflow's first task reports the hard limit nika ran under.
//
// The nika child is a separate process built without -race: its 10,000 goroutines do not count
// against this test binary's race-detector limit (D32).
func TestWideFanOutUnderLowFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 10,000 processes (tens of seconds); not in -short")
	}
	const n = 10000
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fan.nika.yaml"), fmt.Sprintf(`nika: v1
workflow: wide-fan-out
tasks:
  - id: limit
    exec:
      command: "ulimit -Hn"
  - id: fan
    depends_on: [limit]
    for_each: "${{ 0..%d }}"
    fail_fast: false
    exec:
      command: ["echo", "${{ item }}"]
outputs:
  limit: ${{ tasks.limit.output }}
  items: ${{ tasks.fan.output }}
`, n-1))
	r := runNika(t, dir, `ulimit -n 1024 && exec "$0" "$@"`, nil, "run", "fan.nika.yaml", "--no-trace", "--quiet")
	var out struct {
		Limit string `json:"limit"`
		Items []any  `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil && r.code == 0 {
		t.Fatalf("stdout is not the outputs: %v\n%.500s", err, r.stdout)
	}
	failed := 0
	for i, v := range out.Items {
		if v != strconv.Itoa(i) {
			failed++
		}
	}
	if r.code != 0 || len(out.Items) != n || failed != 0 {
		t.Fatalf("exit %d, %d items, %d of them not their index; stderr:\n%.2000s", r.code, len(out.Items), failed, r.stderr)
	}
	if out.Limit != "1024" {
		t.Errorf("nika ran under a hard descriptor limit of %q, want 1024: the test proves nothing", out.Limit)
	}
}

// TestMaxProcessesFlagAndEnv: --max-processes and NIKA_MAX_PROCESSES reach the exec verb, the flag
// first. Two exec tasks meet on a fifo, one reading and one writing, so they can only both end
// when both run at once: under a bound of 1 the rendezvous cannot happen and both time out
// (the timeout only breaks the deadlock; what is asserted is the outcome).
func TestMaxProcessesFlagAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "meet"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "meet.nika.yaml"), `nika: v1
workflow: meet
tasks:
  - id: reader
    timeout: 2s
    exec:
      command: "read x < meet; echo $x"
  - id: writer
    timeout: 2s
    exec:
      command: "echo met > meet"
outputs:
  got: ${{ tasks.reader.output }}
`)
	run := `exec "$0" "$@"`
	args := []string{"run", "meet.nika.yaml", "--no-trace", "--quiet"}
	for _, tt := range []struct {
		name  string
		env   []string
		flags []string
		code  int
	}{
		{"default", nil, nil, 0},
		{"flag 1", nil, []string{"--max-processes", "1"}, 1},
		{"env 1", []string{"NIKA_MAX_PROCESSES=1"}, nil, 1},
		{"the flag wins over the env", []string{"NIKA_MAX_PROCESSES=1"}, []string{"--max-processes", "2"}, 0},
		{"flag 0 is the default, the env applies", []string{"NIKA_MAX_PROCESSES=1"}, []string{"--max-processes", "0"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runNika(t, dir, run, tt.env, append(args, tt.flags...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == 0 && r.stdout != `{"got":"met"}`+"\n" {
				t.Errorf("stdout %q", r.stdout)
			}
			if tt.code == 1 && !strings.Contains(r.stderr, "NIKA-TIMEOUT-001") {
				t.Errorf("stderr %q, want the tasks timed out", r.stderr)
			}
		})
	}

	// Bad values: a flag is a usage error (2), the environment an environment error (3).
	for _, cmd := range []string{"run", "serve"} {
		for _, tt := range []struct {
			env  []string
			args []string
			code int
			want string
		}{
			{nil, []string{"--max-processes", "-1"}, 2, "--max-processes must be ≥ 0"},
			{nil, []string{"--max-processes", "x"}, 2, "invalid value"},
			{[]string{"NIKA_MAX_PROCESSES=0"}, nil, 3, "NIKA_MAX_PROCESSES must be a whole number ≥ 1"},
			{[]string{"NIKA_MAX_PROCESSES=many"}, nil, 3, "NIKA_MAX_PROCESSES must be a whole number ≥ 1"},
		} {
			a := append([]string{cmd}, tt.args...)
			if cmd == "run" {
				a = append(a, "meet.nika.yaml", "--no-trace")
			} else {
				a = append(a, "--addr", "127.0.0.1:0")
			}
			r := runNika(t, dir, run, tt.env, a...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("nika %s (env %q): exit %d, stderr %q; want exit %d and %q", strings.Join(a, " "), tt.env, r.code, r.stderr, tt.code, tt.want)
			}
		}
	}
}
