// Package testfs gives tests a file system that fills up: the write-failure tests of event, server
// and cmd/nika (issue 12 item 1) need a disk that is full part-way through a run.
package testfs

import (
	"os"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes (a mount option such as "64k") in a new temporary directory,
// unmounted at the end of the test, and returns the directory. Without the right to mount (not root, a
// container without CAP_SYS_ADMIN, not Linux) the test is skipped, unless NIKA_REQUIRE_INTEGRATION=1
// (.ci/run) makes that a failure.
func SmallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := mount(dir, size); err != nil {
		msg := "cannot mount a " + size + " tmpfs to fill (" + err.Error() + "); this test needs root on Linux"
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 makes that a failure")
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}
