package main

import (
	"net"
	"strings"
	"testing"
)

// `nika answer` offline: usage errors are exit 2 before the service is dialled, an unreachable
// service exit 3; nothing goes to stdout.
func TestAnswerOffline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no --temporal", []string{"answer", "r-1", "ask=yes"}, 2, "give --temporal HOST:PORT and the run id"},
		{"no run", []string{"answer", "--temporal", closed}, 2, "give --temporal HOST:PORT and the run id"},
		{"not TASK=VALUE", []string{"answer", "--temporal", closed, "r-1", "ask"}, 2, "an answer is TASK=VALUE"},
		{"--list with answers", []string{"answer", "--temporal", closed, "r-1", "--answer", "ask=yes", "--list"}, 2, "--list sends nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runBinary(t, dir, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.code, r.stdout, r.stderr, c.code, c.stderr)
			}
		})
	}
}
