package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openReadNonblock opens a path submission: non-blocking, so that opening a
// FIFO that took a checked file's place returns at once instead of waiting
// for a writer (readWorkflow then refuses it by its type).
const openReadNonblock = os.O_RDONLY | syscall.O_NONBLOCK

// withoutPath is err without the path an *fs.PathError carries: the
// server's own paths (its workflows directory, a file's full name) are not
// the client's business.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// workflowOpenError is why a path submission cannot be stat'ed or opened.
func workflowOpenError(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no workflow %q under the workflows directory", name)
	}
	return fmt.Errorf("workflow %q cannot be read from the workflows directory (paths must stay inside it): %v", name, withoutPath(err))
}

// notRegular refuses a path submission that is not a regular file.
func notRegular(name string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO), not a regular file"
	case mode.IsDir():
		what = "a directory, not a file"
	case mode&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	case mode&fs.ModeDevice != 0:
		what = "a device, not a regular file"
	}
	return fmt.Errorf("workflow %q under the workflows directory is %s; \"path\" names a workflow file", name, what)
}
