package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Temporal commands offline: usage errors are exit 2 before anything is reached, a workflow
// with findings is exit 2 before the service is dialled, and a service that cannot be reached is
// exit 3 with nothing on stdout and no trace left behind. (Runs against a real server are issue
// 16's integration tests, on its dev server.)
func TestTemporalCommandsOffline(t *testing.T) {
	dir := t.TempDir()
	ok := "nika: v1\nworkflow: w\ntasks:\n  - id: a\n    invoke: { tool: \"nika:uuid\" }\n"
	if err := os.WriteFile(filepath.Join(dir, "ok.nika.yaml"), []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.nika.yaml"), []byte("nika: v1\nworkflow: w\ntasks: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: one the kernel gave and took back.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"worker without --temporal", []string{"worker"}, 2, "nika worker: give --temporal HOST:PORT"},
		{"worker with a file", []string{"worker", "--temporal", closed, "ok.nika.yaml"}, 2, "and no file"},
		{"worker unreachable", []string{"worker", "--temporal", closed}, 3, "nika worker: cannot reach Temporal at " + closed},
		{"run --temporal without a file", []string{"run", "--temporal", closed}, 2, "give exactly one workflow file"},
		{"run --temporal with findings", []string{"run", "bad.nika.yaml", "--temporal", closed}, 2, "error["},
		{"run --temporal with a zero heartbeat timeout", []string{"run", "--temporal", closed, "--heartbeat-timeout", "0s", "ok.nika.yaml"}, 2, "--heartbeat-timeout must be positive"},
		{"run --temporal with a bad heartbeat timeout", []string{"run", "--temporal", closed, "--heartbeat-timeout", "soon", "ok.nika.yaml"}, 2, "invalid value \"soon\" for flag -heartbeat-timeout"},
		{"run --temporal unreachable", []string{"run", "--temporal=" + closed, "ok.nika.yaml"}, 3, "nika run: cannot reach Temporal at " + closed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runBinary(t, dir, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q on stderr", r.code, r.stdout, r.stderr, c.code, c.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".nika", "traces")); !os.IsNotExist(err) {
		t.Errorf("a run that never reached Temporal left a trace directory (%v)", err)
	}
}

func TestHasTemporal(t *testing.T) {
	for args, want := range map[string]bool{
		"run x --temporal h:1": true, "--temporal=h:1 x": true, "-temporal h": true,
		"x": false, "x -- --temporal h": false, "--temporal-x": false,
	} {
		if got := hasTemporal(strings.Fields(args)); got != want {
			t.Errorf("hasTemporal(%q) = %v", args, got)
		}
	}
}
