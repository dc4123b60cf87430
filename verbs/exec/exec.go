// Package exec is the `exec` verb (LANGUAGE.md §5.2): it runs one process, a shell string through
// /bin/sh or an argv list, in its own process group, and turns what it printed into the task output.
//
// # Process bound
//
// A child holds some of the engine's file descriptors (its pipes and pidfd, and those of its
// group's watcher: FDsPerProcess at most) for as long as it runs, so a fan-out of a few hundred
// ready exec jobs would exhaust RLIMIT_NOFILE and lose tasks to NIKA-EXEC-002 "too many open files": a failure the engine
// caused, not the workflow. A Verb therefore runs at most Verb.Processes() children at once. A job
// beyond the bound waits for a slot, first come first served, before its pipes are made, and
// gives the slot back once its process is reaped and its pipes are closed (after a cancellation,
// once its process group is gone). The wait honours ctx: a job cancelled while it waits ends
// NIKA-CANCEL-001 without starting anything, and the wait counts against the task's timeout (the
// planner then reports NIKA-TIMEOUT-001, as for a running process). A job that has to wait sends
// a LiveQueued note on the live stream.
//
// The default bound is ProcessBound(soft RLIMIT_NOFILE, runtime.GOMAXPROCS(0)): what the
// descriptors left after a reserve for the engine's own files (MaxReserveFDs) allow, and at most
// ProcessesPerCPU per CPU. The engine does not raise the soft limit itself: the Go runtime
// already raises it to the hard limit when the process starts (and gives children the original
// soft limit back), so the bound follows the hard limit; under `ulimit -n 1024` (which sets both)
// it is 64 on 2 CPUs.
//
// Configuration follows DECISIONS.md D4's precedence: `--max-processes N` of `nika run` and
// `nika serve`, then the NIKA_MAX_PROCESSES environment variable, then Verb.MaxProcesses of an
// embedding program, then the default. The descriptor limit is the process's, so an engine
// process shares one Verb, and one bound, among all its runs (`nika serve` does); a nested
// `nika run` started by an exec job is a process of its own, with its own bound.
//
// # Orphans
//
// On Linux a job's process group is a watched one (tools/procgroup): a /bin/sh watcher creates
// the group before the job's process joins it, and kills the whole group, grandchildren
// included, when the engine dies, whatever killed it (SIGKILL too; the OOM killer too). The
// group id is then the watcher's pid, not the job's; cancellation signals the group as before
// (the watcher ignores SIGTERM), and waits until no process but the watcher is left. A job that
// ends normally releases its watcher: what it left running in the background is not killed,
// as before. A child that leaves the group (setsid) is not followed. Where the watcher cannot
// start (no /bin/sh or /proc) and on other systems, the job leads a group of its own: the
// engine's SIGINT, SIGTERM and SIGHUP still end it through the cancellation, a SIGKILLed engine
// leaves it running. Each job costs one more short-lived process (the watcher) and 2 more
// descriptors (FDsPerProcess counts them).
//
// # Output bound
//
// A job keeps at most Verb.MaxOutputBytes (default DefaultMaxOutputBytes, 16 MiB) of each
// stream it captures: stdout, stderr, or the combined stream; both under structured. Beyond
// the bound the pipe is still read to its end, so the child never blocks on a full pipe, and
// the rest is counted and dropped: the engine's memory follows the bound, not the output. A job
// whose captured stream went over the bound fails once its process has exited, with NIKA-EXEC-001
// (a process_error, not transient: the same command writes as much again): the output is not
// the command's, and no truncated value is ever passed on as if it were. A non-zero exit under a
// text capture is reported as such first. The error's details add to exit_code (the real one)
// and stderr: stream ("stdout", "stderr" or "combined"), output_bytes (all the stream carried)
// and max_output_bytes. The stderr tail of NIKA-EXEC-001 is 4 KiB whatever the bound. Streams
// not captured (stderr under capture stdout beyond its tail, stdout under capture stderr) are
// not bounded: they are not kept. Configuration follows D4's precedence, as for the process
// bound: `--max-exec-output BYTES` of `nika run` and `nika serve`, then NIKA_MAX_EXEC_OUTPUT,
// then Verb.MaxOutputBytes, then the default.
package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/procgroup"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// DepthVar carries the run recursion depth to exec children (LANGUAGE.md §8.3).
const DepthVar = "NIKA_RUN_DEPTH"

// DefaultKillGrace is the time between SIGTERM and SIGKILL on cancellation.
const DefaultKillGrace = 5 * time.Second

// reapWait bounds the wait, after SIGKILL, for the last processes of a cancelled group to be
// reaped. Orphans are reaped by init (or the nearest subreaper), which some container inits do
// only every few seconds.
const reapWait = 5 * time.Second

// stderrTail is how much of stderr NIKA-EXEC-001 carries.
const stderrTail = 4 << 10

// DefaultMaxOutputBytes is the bound on what one job captures from one stream when
// Verb.MaxOutputBytes is 0 (package doc, "Output bound").
const DefaultMaxOutputBytes = 16 << 20

// Capture modes.
const (
	captureStdout     = "stdout"
	captureStderr     = "stderr"
	captureCombined   = "combined"
	captureStructured = "structured"
)

// Verb runs exec jobs. The zero value is usable and bounds its processes by default. A Verb is
// safe for concurrent use; it holds the slots of its process bound, so it must not be copied after
// its first job, and the runs of one engine process share one Verb (the descriptor limit is the
// process's).
type Verb struct {
	// Env is the base environment of every child, as "KEY=value" entries; nil means os.Environ()
	// (read at each Run). The job's `env` is overlaid on it.
	Env []string
	// Depth is NIKA_RUN_DEPTH of this run: children get Depth+1, whatever the base environment or
	// the job's `env` say, so the recursion guard cannot be reset from a workflow.
	Depth int
	// KillGrace is the time between SIGTERM and SIGKILL to the process group on cancellation;
	// 0 means DefaultKillGrace.
	KillGrace time.Duration
	// MaxProcesses bounds the children of this Verb running at once; a job beyond it waits for a
	// slot (honouring its ctx) before its process starts. 0 or less: DefaultMaxProcesses(), read
	// at the first job. Set it before the first job.
	MaxProcesses int
	// MaxOutputBytes bounds what a job captures from each stream it keeps (stdout, stderr, or
	// the combined stream); 0 or less means DefaultMaxOutputBytes. A job whose stream goes over
	// it fails with NIKA-EXEC-001 (package doc, "Output bound").
	MaxOutputBytes int64

	procsOnce sync.Once
	maxProcs  int
	procs     *semaphore.Weighted
}

// command is a job's validated fields.
type command struct {
	shell   string   // the rendered string form; "" for argv
	argv    []string // the argv form; nil for a shell string
	dir     string   // absolute or "" (the engine's working directory)
	overlay map[string]string
	stdin   *string
	capture string
}

// Run runs one exec job (planner.Verb). Its output is a string (capture stdout, stderr or
// combined) or {stdout, stderr, exit_code} (capture structured). Errors:
//
//   - NIKA-VAR-006 / -007: a field whose evaluated value cannot be used (an array inside argv,
//     bytes in a string field, an unknown capture).
//   - NIKA-SEC-001: a shell string that matches the blocklist (checked on the rendered text).
//   - NIKA-SEC-004: job.Permits is set and permits.exec does not allow the command.
//   - NIKA-EXEC-002: the program is not found or cannot be started, or cwd does not exist.
//   - NIKA-EXEC-001: a non-zero exit (128+s for death by signal s), except under structured.
//   - NIKA-CANCEL-001: ctx ended; the error wraps context.Cause(ctx). The process group got
//     SIGTERM, then SIGKILL after KillGrace; or ctx ended while the job waited for a process
//     slot, and nothing was started.
//
// Run returns only once the process has been reaped and its output pipes drained; only then is
// its process slot given back.
func (v *Verb) Run(ctx context.Context, job workflow.Job) workflow.Outcome {
	if ctx.Err() != nil {
		return workflow.Failed(fields.Cancelled(ctx, nil))
	}
	cmd, err := parse(job)
	if err != nil {
		return workflow.Failed(err)
	}
	if err := allowed(cmd, job.Permits); err != nil {
		return workflow.Failed(err)
	}
	return v.run(ctx, cmd, job.Live)
}

// parse reads and checks the evaluated fields.
func parse(job workflow.Job) (*command, *spec.Error) {
	f := job.Fields
	c := &command{capture: captureStdout}
	switch x := f["command"].(type) {
	case string:
		c.shell = x
		if strings.TrimSpace(x) == "" {
			return nil, fields.Invalid("command", "`command` is empty after evaluation")
		}
	case []string:
		c.argv = append([]string(nil), x...)
	case []any:
		c.argv = make([]string, len(x))
		for i, e := range x {
			switch e.(type) {
			case []any, map[string]any, []string, map[string]string:
				return nil, fields.Invalid("command", "`command[%d]` is %s; argv elements are strings and lists are never spliced", i, fields.KindOf(e))
			}
			s, err := fields.Render(fmt.Sprintf("command[%d]", i), e)
			if err != nil {
				return nil, err
			}
			c.argv[i] = s
		}
	case nil:
		if _, ok := f["command"]; !ok {
			return nil, fields.Invalid("command", "`command` is missing")
		}
		return nil, fields.Invalid("command", "`command` is null; write a string or a list of strings")
	default:
		return nil, fields.Invalid("command", "`command` must be a string or a list of strings, not %s", fields.KindOf(x))
	}
	if c.argv != nil && (len(c.argv) == 0 || c.argv[0] == "") {
		return nil, fields.Invalid("command", "`command` has no program: its list is empty or starts with an empty string")
	}

	dir := job.RunDir
	if cwd, ok, err := fields.String(f, "cwd"); err != nil {
		return nil, err
	} else if ok {
		dir = cwd
		if !filepath.IsAbs(cwd) {
			dir = filepath.Join(job.RunDir, cwd)
		}
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, spawnError(fmt.Sprintf("cwd %q cannot be resolved: %v", dir, err), map[string]any{"cwd": dir}, err)
		}
		c.dir = abs
	}

	if raw, ok := f["env"]; ok && raw != nil {
		c.overlay = map[string]string{}
		add := func(k string, val any) *spec.Error {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fields.Invalid("env", "`env` key %q is not a valid environment variable name", k)
			}
			s, err := fields.Render("env."+k, val)
			if err != nil {
				return err
			}
			c.overlay[k] = s
			return nil
		}
		switch m := raw.(type) {
		case map[string]any:
			for k, val := range m {
				if err := add(k, val); err != nil {
					return nil, err
				}
			}
		case map[string]string:
			for k, val := range m {
				if err := add(k, val); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fields.Invalid("env", "`env` must be a mapping of names to strings, not %s", fields.KindOf(raw))
		}
	}

	if in, ok, err := fields.String(f, "stdin"); err != nil {
		return nil, err
	} else if ok {
		c.stdin = &in
	}

	if raw, ok := f["capture"]; ok {
		s, _ := raw.(string)
		switch s {
		case captureStdout, captureStderr, captureCombined, captureStructured:
			c.capture = s
		default:
			return nil, fields.Invalid("capture", "`capture` must be stdout, stderr, combined or structured, not %v", raw)
		}
	}
	return c, nil
}

// allowed applies the blocklist floor and, under permits, permits.exec (LANGUAGE.md §2.4, §5.2).
func allowed(c *command, p *spec.Permits) *spec.Error {
	if c.argv == nil {
		if rule := spec.Blocked(c.shell); rule != "" {
			return spec.NewError(spec.CodeSecBlocklist, "the command matches the exec blocklist: "+rule,
				map[string]any{"rule": rule})
		}
	}
	if p == nil {
		return nil
	}
	switch {
	case p.ExecList != nil && c.argv == nil:
		return spec.NewError(spec.CodeSecPermits, "`permits.exec` is a list of programs, so only the argv form may run; a shell string is refused",
			map[string]any{"gate": "exec", "form": "string", "allowed": append([]string{}, p.ExecList...)})
	case p.ExecList != nil:
		for _, prog := range p.ExecList {
			if prog == c.argv[0] {
				return nil
			}
		}
		return spec.NewError(spec.CodeSecPermits, fmt.Sprintf("`permits.exec` does not allow %q", c.argv[0]),
			map[string]any{"gate": "exec", "program": c.argv[0], "allowed": append([]string{}, p.ExecList...)})
	case !p.Exec:
		return spec.NewError(spec.CodeSecPermits, "`permits` does not allow exec (`permits.exec` is false or absent)",
			map[string]any{"gate": "exec"})
	}
	return nil
}

// run spawns the process, waits for it and its pipes, and builds the outcome.
func (v *Verb) run(ctx context.Context, c *command, live func(workflow.LiveNote)) workflow.Outcome {
	if c.dir != "" {
		fi, err := os.Stat(c.dir)
		switch {
		case err != nil:
			return workflow.Failed(spawnError(fmt.Sprintf("cwd %s: %v", c.dir, unwrapPath(err)), map[string]any{"cwd": c.dir}, err))
		case !fi.IsDir():
			return workflow.Failed(spawnError(fmt.Sprintf("cwd %s is not a directory", c.dir), map[string]any{"cwd": c.dir}, nil))
		}
	}
	env := v.environ(c.overlay)

	var path string
	var args []string
	if c.argv == nil {
		path, args = "/bin/sh", []string{"sh", "-c", c.shell}
	} else {
		p, err := lookPath(c.argv[0], getenv(env, "PATH"), c.dir)
		if err != nil {
			return workflow.Failed(spawnError(fmt.Sprintf("cannot run %q: %v", c.argv[0], err),
				map[string]any{"program": c.argv[0]}, err))
		}
		path, args = p, c.argv
	}

	cmd := &osexec.Cmd{Path: path, Args: args, Dir: c.dir, Env: env}
	if c.stdin != nil {
		cmd.Stdin = strings.NewReader(*c.stdin)
	}
	bound := v.MaxOutputBytes
	if bound <= 0 {
		bound = DefaultMaxOutputBytes
	}
	stdout, stderr := &capBuffer{max: bound}, &capBuffer{max: bound}
	tail := &tailBuffer{max: stderrTail}
	switch c.capture {
	case captureStdout:
		cmd.Stdout, cmd.Stderr = stdout, tail
	case captureStderr:
		cmd.Stderr = stderr // stdout goes to the null device
	case captureCombined:
		cmd.Stdout, cmd.Stderr = stdout, stdout // the same writer: one pipe, arrival order
	case captureStructured:
		cmd.Stdout, cmd.Stderr = stdout, stderr
	}

	// The slot is taken before Start creates the pipes and given back once Wait has closed them
	// and reaped the process (and, when cancelled, the rest of its group is gone).
	release, err := v.acquire(ctx, live)
	if err != nil {
		return workflow.Failed(fields.Cancelled(ctx, nil))
	}
	defer release()
	// The job's group is the watcher's, so that it dies with the engine (package doc, "Orphans");
	// without a watcher it is a group of the process's own.
	grp, _ := procgroup.New()
	defer grp.Release()
	if grp != nil {
		grp.Join(cmd)
	} else {
		setGroup(cmd)
	}
	if err := cmd.Start(); err != nil {
		prog := args[0]
		if c.argv == nil {
			prog = path
		}
		return workflow.Failed(spawnError(fmt.Sprintf("cannot start %q: %v", prog, unwrapPath(err)),
			map[string]any{"program": prog}, err))
	}
	cancelled := v.wait(ctx, cmd, grp)
	if cancelled {
		return workflow.Failed(fields.Cancelled(ctx, nil))
	}

	code := exitCode(cmd.ProcessState)
	switch c.capture {
	case captureStructured:
		if stdout.over() {
			return workflow.Failed(overError("stdout", stdout, code, lastBytes(stderr.Bytes(), stderrTail)))
		}
		if stderr.over() {
			return workflow.Failed(overError("stderr", stderr, code, lastBytes(stderr.Bytes(), stderrTail)))
		}
		return workflow.Outcome{Output: map[string]any{
			"stdout":    validUTF8(stdout.Bytes()),
			"stderr":    validUTF8(stderr.Bytes()),
			"exit_code": code,
		}}
	case captureStdout:
		if code != 0 {
			return workflow.Failed(exitError(code, tail.Bytes()))
		}
		if stdout.over() {
			return workflow.Failed(overError("stdout", stdout, code, tail.Bytes()))
		}
		return workflow.Outcome{Output: text(stdout.Bytes())}
	case captureStderr:
		if code != 0 {
			return workflow.Failed(exitError(code, lastBytes(stderr.Bytes(), stderrTail)))
		}
		if stderr.over() {
			return workflow.Failed(overError("stderr", stderr, code, lastBytes(stderr.Bytes(), stderrTail)))
		}
		return workflow.Outcome{Output: text(stderr.Bytes())}
	default: // combined: stderr is interleaved with stdout; its tail is the stream's
		if code != 0 {
			return workflow.Failed(exitError(code, lastBytes(stdout.Bytes(), stderrTail)))
		}
		if stdout.over() {
			return workflow.Failed(overError("combined", stdout, code, lastBytes(stdout.Bytes(), stderrTail)))
		}
		return workflow.Outcome{Output: text(stdout.Bytes())}
	}
}

// wait waits for the process and its pipes. When ctx ends first, the process group gets SIGTERM,
// then SIGKILL after the grace period; wait then also waits until no process of the group is left
// (reaped, zombies included), so that a cancelled exec leaves nothing behind: within the grace,
// and after a SIGKILL for at most reapWait. It reports whether ctx ended before the process was done.
func (v *Verb) wait(ctx context.Context, cmd *osexec.Cmd, grp *procgroup.Group) (cancelled bool) {
	grace := v.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	proc := cmd.Process
	pgid := grp.ID()
	alive := grp.Others // the watcher does not count: it stays until the group is empty
	if grp == nil {
		pgid = proc.Pid // a group of its own
		alive = func() bool { return groupAlive(pgid) }
	}
	waited := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-waited:
			return
		case <-ctx.Done():
		}
		signal(proc, pgid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		leader := waited
		var deadline <-chan time.Time // after the SIGKILL: how long to wait for the reaper
		for {
			select {
			case <-leader:
				leader = nil // reaped; now wait for the rest of the group
			case <-tick.C:
			case <-timer.C:
				signal(proc, pgid, syscall.SIGKILL)
				deadline = time.After(reapWait)
			case <-deadline:
				return // unkillable, or orphans nobody reaps: give up waiting
			}
			if leader == nil && !alive() {
				return
			}
		}
	}()
	_ = cmd.Wait() // the outcome is read from cmd.ProcessState
	close(waited)
	wg.Wait()
	return ctx.Err() != nil
}

// environ is the child's environment: the base, the job's overlay (in name order for the entries
// the base lacks), and NIKA_RUN_DEPTH last, so it always wins.
func (v *Verb) environ(overlay map[string]string) []string {
	base := v.Env
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(overlay)+1)
	at := make(map[string]int, len(base)+len(overlay)+1)
	set := func(k, val string) {
		kv := k + "=" + val
		if i, ok := at[k]; ok {
			out[i] = kv
			return
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		set(k, val)
	}
	keys := make([]string, 0, len(overlay))
	for k := range overlay {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, overlay[k])
	}
	set(DepthVar, strconv.Itoa(v.Depth+1))
	return out
}

func getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, val, ok := strings.Cut(env[i], "="); ok && k == key {
			return val
		}
	}
	return ""
}

var errNotFound = errors.New("executable file not found in $PATH")

// lookPath resolves argv[0] as a shell would, with the child's PATH: a name with a slash is used as
// it is (relative to dir), a bare name is searched in the absolute directories of path. Relative
// PATH entries are skipped, as os/exec refuses them (ErrDot): a program is never found in the
// current directory by accident.
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		full := name
		if !filepath.IsAbs(name) && dir != "" {
			full = filepath.Join(dir, name)
		}
		if err := executable(full); err != nil {
			return "", err
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errNotFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPath(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return errors.New("permission denied (not executable)")
	}
	return nil
}

// unwrapPath drops the operation and path of an *os.PathError, which messages already name.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func spawnError(msg string, details map[string]any, cause error) *spec.Error {
	e := spec.NewError(spec.CodeExecSpawn, msg, details)
	if cause != nil {
		e.Wrap(cause)
	}
	return e
}

// exitError is NIKA-EXEC-001 with the last 4 KiB of stderr.
func exitError(code int, stderr []byte) *spec.Error {
	tail := text(stderr)
	msg := fmt.Sprintf("the command exited with code %d", code)
	if code > 128 && code < 128+65 {
		msg = fmt.Sprintf("the command was killed by signal %d (exit code %d)", code-128, code)
	}
	if last := lastLine(tail); last != "" {
		msg += ": " + last
	}
	return spec.NewError(spec.CodeExecExit, msg, map[string]any{"exit_code": code, "stderr": tail})
}

// overError is NIKA-EXEC-001 for a stream that went over the output bound (package doc, "Output
// bound"): the output is not the command's, so the job fails as a failed command does.
func overError(stream string, b *capBuffer, code int, stderr []byte) *spec.Error {
	msg := fmt.Sprintf("the command wrote %s to %s, more than the exec output bound of %s; "+
		"have it write large output to a file and pass the file's path on, or raise the bound (--max-exec-output or NIKA_MAX_EXEC_OUTPUT)",
		sizeText(b.n), stream, sizeText(b.max))
	return spec.NewError(spec.CodeExecExit, msg, map[string]any{
		"exit_code": code, "stderr": text(stderr),
		"stream": stream, "output_bytes": b.n, "max_output_bytes": b.max,
	})
}

// sizeText says a byte count for people: "1048576 bytes (1 MiB)".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d bytes (%d GiB)", n, n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

var (
	_ io.Writer = (*tailBuffer)(nil)
	_ io.Writer = (*capBuffer)(nil)
)
