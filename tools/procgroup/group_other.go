//go:build !linux

package procgroup

import (
	"errors"
	osexec "os/exec"
)

// New is unsupported here (see the package doc, "Limits"): the caller runs its child in a group
// of its own.
func New() (*Group, error) { return nil, errors.ErrUnsupported }

// Join does nothing: New never returns a Group here, and the caller sets up its own group.
func (g *Group) Join(*osexec.Cmd) {}

// Others is false: there is never a watched group here.
func (g *Group) Others() bool { return false }

func killGroup(int) {}
