package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nikahq/nika/verbs/exec"
)

// MaxRunDepth is the nesting depth of nika runs (an exec task starting nika run) from which a run
// is refused with NIKA-SEC-003.
const MaxRunDepth = 8

// Limits are the engine's bounds that flags and environment both set (D4). Zero means "not set
// by a flag": FromEnv then fills it from the environment, else the verb's default applies.
type Limits struct {
	MaxParallelTasks   int   // tasks of one run at once; 0: unbounded
	MaxParallelTools   int   // tool calls of one agent batch at once, 1..1024; 0: the agent's default (8)
	MaxProcesses       int   // exec processes at once; 0: exec.DefaultMaxProcesses()
	MaxExecOutputBytes int64 // what an exec task keeps of each stream; 0: exec.DefaultMaxOutputBytes
	// ExecDepth is NIKA_RUN_DEPTH of this process; exec children get one more.
	ExecDepth int
}

// EnvError is a bad engine variable in the environment (exit 3).
type EnvError struct{ msg string }

func (e *EnvError) Error() string { return e.msg }

// Check refuses flag values out of range; the message names the flag (a usage error, exit 2).
func (l Limits) Check() error {
	switch {
	case l.MaxParallelTasks < 0:
		return fmt.Errorf("--max-parallel-tasks must be ≥ 0, got %d", l.MaxParallelTasks)
	case l.MaxParallelTools != 0 && (l.MaxParallelTools < 1 || l.MaxParallelTools > 1024):
		return fmt.Errorf("--max-parallel-tools must be from 1 to 1024, got %d", l.MaxParallelTools)
	case l.MaxProcesses < 0:
		return fmt.Errorf("--max-processes must be ≥ 0, got %d", l.MaxProcesses)
	case l.MaxExecOutputBytes < 0:
		return fmt.Errorf("--max-exec-output must be ≥ 0, got %d", l.MaxExecOutputBytes)
	}
	return nil
}

// FromEnv fills the limits a flag left zero from the environment (flag > NIKA_MAX_PARALLEL_TOOLS,
// NIKA_MAX_PROCESSES, NIKA_MAX_EXEC_OUTPUT > the verb's default) and reads NIKA_RUN_DEPTH. A
// value that is not valid is an *EnvError naming the variable.
func (l *Limits) FromEnv(lookup func(string) (string, bool)) error {
	if v, ok := lookup("NIKA_MAX_PARALLEL_TOOLS"); ok && l.MaxParallelTools == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			return &EnvError{fmt.Sprintf("NIKA_MAX_PARALLEL_TOOLS must be from 1 to 1024, got %q", v)}
		}
		l.MaxParallelTools = n
	}
	if v, ok := lookup("NIKA_MAX_PROCESSES"); ok && l.MaxProcesses == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return &EnvError{fmt.Sprintf("NIKA_MAX_PROCESSES must be a whole number ≥ 1, got %q", v)}
		}
		l.MaxProcesses = n
	}
	if v, ok := lookup("NIKA_MAX_EXEC_OUTPUT"); ok && l.MaxExecOutputBytes == 0 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return &EnvError{fmt.Sprintf("NIKA_MAX_EXEC_OUTPUT must be a whole number of bytes ≥ 1, got %q", v)}
		}
		l.MaxExecOutputBytes = n
	}
	depth, err := RunDepth(lookup)
	if err != nil {
		return &EnvError{err.Error()}
	}
	l.ExecDepth = depth
	return nil
}

// RunDepth reads NIKA_RUN_DEPTH, the nesting depth nika passes to the runs its exec children
// start (NIKA-SEC-003). Unset is 0; a value that is not a whole number ≥ 0 is an error rather
// than 0, which would silently reset the recursion guard.
func RunDepth(lookup func(string) (string, bool)) (int, error) {
	v, ok := lookup(exec.DepthVar)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a whole number ≥ 0 (nika sets it for the runs its exec tasks start; unset it at the top level), got %q", exec.DepthVar, v)
	}
	return n, nil
}
