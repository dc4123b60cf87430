//go:build !linux

package testfs

import "errors"

func mount(dir, size string) error { return errors.New("tmpfs mounts are Linux only") }

func unmount(dir string) error { return nil }
