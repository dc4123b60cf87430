package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/workflow"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// verb is the planner's Verb interface, restated here (verbs do not import the planner).
type verb interface {
	Run(ctx context.Context, job workflow.Job) workflow.Outcome
}

var _ verb = (*Verb)(nil)

func job(dir string, f map[string]any, p *spec.Permits) workflow.Job {
	return workflow.Job{Verb: "exec", Fields: f, RunDir: dir, Permits: p, Attempt: 1, Iteration: -1,
		Emit: func(string, map[string]any) {}}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	base := []string{"PATH=" + os.Getenv("PATH"), "KEEP=base", "OVER=base"}

	tests := []struct {
		name    string
		verb    *Verb // nil: a Verb over base
		fields  map[string]any
		permits *spec.Permits
		want    any    // the output, when no error is expected
		code    string // the expected error code
		details map[string]any
	}{
		{name: "argv echo", fields: map[string]any{"command": []any{"echo", "hello", "world"}}, want: "hello world"},
		{name: "argv []string", fields: map[string]any{"command": []string{"echo", "a b"}}, want: "a b"},
		{name: "argv renders scalars", fields: map[string]any{"command": []any{"echo", 1, 2.5, true, nil}}, want: "1 2.5 true null"},
		{name: "argv array element", fields: map[string]any{"command": []any{"echo", []any{"x"}}}, code: "NIKA-VAR-006"},
		{name: "argv object element", fields: map[string]any{"command": []any{"echo", map[string]any{}}}, code: "NIKA-VAR-006"},
		{name: "argv bytes element", fields: map[string]any{"command": []any{"echo", []byte("x")}}, code: "NIKA-VAR-007"},
		{name: "argv empty", fields: map[string]any{"command": []any{}}, code: "NIKA-VAR-006"},
		{name: "no command", fields: map[string]any{}, code: "NIKA-VAR-006"},
		{name: "command of wrong type", fields: map[string]any{"command": 3}, code: "NIKA-VAR-006"},
		{name: "string through sh", fields: map[string]any{"command": "echo $((1 + 2)) | tr 3 x"}, want: "x"},
		{name: "string empty", fields: map[string]any{"command": "  "}, code: "NIKA-VAR-006"},

		{name: "capture stdout by default", fields: map[string]any{"command": "echo out; echo err >&2"}, want: "out"},
		{name: "capture stderr", fields: map[string]any{"command": "echo out; echo err >&2", "capture": "stderr"}, want: "err"},
		{name: "capture combined in arrival order", fields: map[string]any{"command": "echo a; echo b >&2; echo c; echo d >&2", "capture": "combined"}, want: "a\nb\nc\nd"},
		{name: "capture structured, success", fields: map[string]any{"command": "echo o; echo e >&2", "capture": "structured"},
			want: map[string]any{"stdout": "o\n", "stderr": "e\n", "exit_code": 0}},
		{name: "capture structured, non-zero exit is data", fields: map[string]any{"command": "echo o; echo e >&2; exit 3", "capture": "structured"},
			want: map[string]any{"stdout": "o\n", "stderr": "e\n", "exit_code": 3}},
		{name: "capture unknown", fields: map[string]any{"command": "true", "capture": "both"}, code: "NIKA-VAR-006"},

		{name: "trailing newlines dropped", fields: map[string]any{"command": `printf 'a\n\nb\n\r\n\n'`}, want: "a\n\nb"},
		{name: "lone trailing CR kept", fields: map[string]any{"command": `printf 'a\r'`}, want: "a\r"},
		{name: "only newlines", fields: map[string]any{"command": `printf '\n\n'`}, want: ""},
		{name: "invalid UTF-8", fields: map[string]any{"command": `printf 'a\377\376b\n'`}, want: "a\uFFFD\uFFFDb"},
		{name: "invalid UTF-8 structured", fields: map[string]any{"command": `printf 'a\377'`, "capture": "structured"},
			want: map[string]any{"stdout": "a\uFFFD", "stderr": "", "exit_code": 0}},

		{name: "non-zero exit", fields: map[string]any{"command": "echo partial; echo boom >&2; exit 7"}, code: "NIKA-EXEC-001",
			details: map[string]any{"exit_code": 7, "stderr": "boom"}},
		{name: "non-zero exit under capture stderr", fields: map[string]any{"command": "echo boom >&2; exit 2", "capture": "stderr"}, code: "NIKA-EXEC-001",
			details: map[string]any{"exit_code": 2, "stderr": "boom"}},
		{name: "death by signal", fields: map[string]any{"command": "kill -9 $$"}, code: "NIKA-EXEC-001",
			details: map[string]any{"exit_code": 128 + 9, "stderr": ""}},
		{name: "missing program", fields: map[string]any{"command": []any{"nika-surely-no-such-program"}}, code: "NIKA-EXEC-002"},
		{name: "program path missing", fields: map[string]any{"command": []any{"./nope"}}, code: "NIKA-EXEC-002"},
		{name: "program not executable", fields: map[string]any{"command": []any{"./afile"}}, code: "NIKA-EXEC-002"},
		{name: "bad cwd", fields: map[string]any{"command": []any{"pwd"}, "cwd": "no/such/dir"}, code: "NIKA-EXEC-002"},
		{name: "cwd is a file", fields: map[string]any{"command": []any{"pwd"}, "cwd": "afile"}, code: "NIKA-EXEC-002"},
		{name: "cwd relative to the run directory", fields: map[string]any{"command": "pwd -P", "cwd": "sub"}, want: filepath.Join(realDir, "sub")},
		{name: "default cwd is the run directory", fields: map[string]any{"command": "pwd -P"}, want: realDir},

		{name: "blocklisted rendered command", fields: map[string]any{"command": "echo hi; rm -rf " + "~/"}, code: "NIKA-SEC-001"},
		{name: "blocklisted fork bomb", fields: map[string]any{"command": ":(){ :|:& };:"}, code: "NIKA-SEC-001"},
		{name: "blocklist does not apply to argv", fields: map[string]any{"command": []any{"echo", "rm", "-rf", "/"}}, want: "rm -rf /"},

		{name: "permits {} refuses a string", permits: &spec.Permits{}, fields: map[string]any{"command": "echo hi"}, code: "NIKA-SEC-004"},
		{name: "permits {} refuses argv", permits: &spec.Permits{}, fields: map[string]any{"command": []any{"echo", "hi"}}, code: "NIKA-SEC-004"},
		{name: "permits exec true", permits: &spec.Permits{Exec: true}, fields: map[string]any{"command": "echo hi"}, want: "hi"},
		{name: "permits list admits argv[0]", permits: &spec.Permits{ExecList: []string{"git", "echo"}}, fields: map[string]any{"command": []any{"echo", "hi"}}, want: "hi"},
		{name: "permits list refuses another program", permits: &spec.Permits{ExecList: []string{"git"}}, fields: map[string]any{"command": []any{"echo", "hi"}}, code: "NIKA-SEC-004",
			details: map[string]any{"gate": "exec", "program": "echo", "allowed": []string{"git"}}},
		{name: "permits list refuses a string", permits: &spec.Permits{Exec: true, ExecList: []string{"echo"}}, fields: map[string]any{"command": "echo hi"}, code: "NIKA-SEC-004"},
		{name: "permits empty list", permits: &spec.Permits{ExecList: []string{}}, fields: map[string]any{"command": []any{"echo"}}, code: "NIKA-SEC-004"},

		{name: "NIKA_RUN_DEPTH is depth+1", verb: &Verb{Depth: 3}, fields: map[string]any{"command": "echo $NIKA_RUN_DEPTH"}, want: "4"},
		{name: "NIKA_RUN_DEPTH wins over env", verb: &Verb{Env: []string{"NIKA_RUN_DEPTH=0"}},
			fields: map[string]any{"command": "echo $NIKA_RUN_DEPTH", "env": map[string]any{"NIKA_RUN_DEPTH": "0"}}, want: "1"},
		{name: "env overlay", verb: &Verb{Env: base},
			fields: map[string]any{"command": `echo "$KEEP $OVER $NEW $NUM $OBJ"`, "env": map[string]any{"OVER": "job", "NEW": "x y", "NUM": 5, "OBJ": map[string]any{"a": 1}}},
			want:   `base job x y 5 {"a":1}`},
		{name: "env string map", verb: &Verb{Env: base}, fields: map[string]any{"command": `echo "$A"`, "env": map[string]string{"A": "b"}}, want: "b"},
		{name: "base env only", verb: &Verb{Env: []string{"ONLY=1"}}, fields: map[string]any{"command": "env | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_=' | sort"},
			want: "NIKA_RUN_DEPTH=1\nONLY=1"},
		{name: "env bad key", fields: map[string]any{"command": "true", "env": map[string]any{"A=B": "x"}}, code: "NIKA-VAR-006"},
		{name: "env not a map", fields: map[string]any{"command": "true", "env": []any{"A"}}, code: "NIKA-VAR-006"},
		{name: "argv resolved through the child's PATH", verb: &Verb{Env: []string{"PATH=/nonexistent"}},
			fields: map[string]any{"command": []any{"echo", "x"}, "env": map[string]any{"PATH": "/usr/bin:/bin"}}, want: "x"},
		{name: "argv not on the child's PATH", verb: &Verb{Env: []string{"PATH=/nonexistent"}},
			fields: map[string]any{"command": []any{"echo", "x"}}, code: "NIKA-EXEC-002"},

		{name: "stdin", fields: map[string]any{"command": []any{"cat"}, "stdin": "line 1\nline 2\n"}, want: "line 1\nline 2"},
		{name: "stdin rendered", fields: map[string]any{"command": []any{"cat"}, "stdin": map[string]any{"b": 2, "a": 1}}, want: `{"a":1,"b":2}`},
		{name: "no stdin reads empty", fields: map[string]any{"command": "cat; echo end"}, want: "end"},
		{name: "stdin not read by the child", fields: map[string]any{"command": "echo done", "stdin": strings.Repeat("x", 1<<20)}, want: "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.verb
			if v == nil {
				v = &Verb{}
			}
			if v.Env == nil {
				v.Env = base
			}
			out := v.Run(context.Background(), job(dir, tt.fields, tt.permits))
			if tt.code != "" {
				if out.Err == nil {
					t.Fatalf("output %#v, want error %s", out.Output, tt.code)
				}
				if out.Err.Code != tt.code {
					t.Fatalf("error %v, want %s", out.Err, tt.code)
				}
				if out.Output != nil {
					t.Errorf("error with an output: %#v", out.Output)
				}
				if c, _ := spec.LookupCode(tt.code); out.Err.Category != c.Category {
					t.Errorf("category %q, want %q", out.Err.Category, c.Category)
				}
				for k, want := range tt.details {
					if got := out.Err.Details[k]; !reflect.DeepEqual(got, want) {
						t.Errorf("details[%s] = %#v, want %#v", k, got, want)
					}
				}
				return
			}
			if out.Err != nil {
				t.Fatalf("error %v (details %v), want %#v", out.Err, out.Err.Details, tt.want)
			}
			if !reflect.DeepEqual(out.Output, tt.want) {
				t.Errorf("output %#v, want %#v", out.Output, tt.want)
			}
		})
	}
}

func TestExitStderrTail(t *testing.T) {
	// 10,000 bytes of stderr then a marker: details.stderr is the last 4 KiB, and cut at a rune
	// boundary (é is two bytes).
	out := (&Verb{}).Run(context.Background(), job(t.TempDir(), map[string]any{
		"command": `i=0; while [ $i -lt 5000 ]; do printf 'é'; i=$((i+1)); done >&2; echo END >&2; exit 1`,
	}, nil))
	if out.Err == nil || out.Err.Code != spec.CodeExecExit {
		t.Fatalf("outcome %+v", out)
	}
	s, _ := out.Err.Details["stderr"].(string)
	if len(s) > stderrTail || !strings.HasSuffix(s, "éEND") || strings.ContainsRune(s, '\uFFFD') {
		t.Errorf("stderr tail: %d bytes, suffix %q", len(s), s[max(0, len(s)-10):])
	}
	if !strings.Contains(out.Err.Message, "code 1") || strings.Contains(out.Err.Message, "\n") {
		t.Errorf("message %q", out.Err.Message)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defghij", "", "klmnopqrstuvwxyz0123", "45"} {
		_, _ = tb.Write([]byte(s))
	}
	if got := string(tb.Bytes()); got != "wxyz012345"[2:] {
		t.Errorf("tail = %q", got)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("task deadline")
	cancel(cause)
	dir := t.TempDir()
	out := (&Verb{}).Run(ctx, job(dir, map[string]any{"command": "touch ran"}, nil))
	if out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, cause) || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("outcome %+v", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran after cancellation")
	}
}

// startGroup runs command (which must write the pid of one of its processes that keeps running
// to the file $PIDFILE once its children are started) in the background and returns that
// process's group id (the watcher's, see tools/procgroup) and the outcome channel.
func startGroup(t *testing.T, ctx context.Context, v *Verb, command string) (int, <-chan workflow.Outcome) {
	t.Helper()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	done := make(chan workflow.Outcome, 1)
	go func() {
		done <- v.Run(ctx, job(dir, map[string]any{"command": command, "env": map[string]any{"PIDFILE": pidfile}}, nil))
	}()
	// Wait for the group to be up: a condition, not a duration (the deadline only bounds a hang).
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(pidfile)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q", b)
			}
			pgid, err := syscall.Getpgid(pid)
			if err != nil {
				t.Fatalf("process %d: %v", pid, err)
			}
			return pgid, done
		}
		select {
		case out := <-done:
			t.Fatalf("the command ended before it was cancelled: %+v", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pid")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestCancelKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name    string
		verb    *Verb
		command string
	}{
		// SIGTERM ends both sleeps; the grace is long, so nothing waits for SIGKILL.
		{"SIGTERM", &Verb{KillGrace: time.Hour}, `sleep 60 & echo $$ > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; sleep 60`},
		// Everything ignores SIGTERM (ignored signals survive exec): SIGKILL after the grace.
		{"SIGKILL after the grace", &Verb{KillGrace: 50 * time.Millisecond},
			`trap '' TERM; sleep 60 & echo $$ > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; sleep 60`},
		// The leader exits at once; a background child holds the stdout pipe.
		{"orphan holding the pipe", &Verb{KillGrace: time.Hour}, `sleep 60 & echo $! > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			pgid, done := startGroup(t, ctx, tt.verb, tt.command)
			if err := syscall.Kill(-pgid, 0); err != nil {
				t.Fatalf("the group %d is not running before the cancellation: %v", pgid, err)
			}
			cause := errors.New("user pressed ^C")
			cancel(cause)
			out := <-done
			if out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, cause) {
				t.Fatalf("outcome %+v", out)
			}
			// Run has returned: the whole group must be gone by now.
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process group %d still exists after Run returned (kill: %v)", pgid, err)
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		})
	}
}

func TestDeadlineCause(t *testing.T) {
	// A deadline is told apart from a user cancellation through the wrapped cause.
	errDeadline := errors.New("task deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	_, done := startGroup(t, ctx, &Verb{}, `echo $$ > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; exec sleep 60`)
	cancel(errDeadline)
	out := <-done
	if out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, errDeadline) || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("outcome %+v", out)
	}
}

func TestEnviron(t *testing.T) {
	v := &Verb{Env: []string{"A=1", "B=2", "A=3", "junk", "=x", "C=c=d"}, Depth: 7}
	got := v.environ(map[string]string{"Z": "z", "B": "b", "Y": "y"})
	want := []string{"A=3", "B=b", "C=c=d", "Y=y", "Z=z", "NIKA_RUN_DEPTH=8"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environ = %q, want %q", got, want)
	}
	if got := (&Verb{}).environ(nil); getenv(got, "NIKA_RUN_DEPTH") != "1" || len(got) < len(os.Environ()) {
		t.Errorf("default environ lacks the process environment: %d entries", len(got))
	}
}
