//go:build linux

package mcp

import (
	"syscall"
	"unsafe"
)

const (
	pidfdOpen = 434 // pidfd_open(2), numbered alike on every Linux architecture
	pPID      = 1   // waitid idtypes
	pPIDFD    = 3
)

// onExit calls f once the server process pid (a child of this process) has exited, without
// reaping it (cmd.Wait does that): a server that dies while a grandchild holds its stdout open
// never sends the end of file that would end its session, and f kills the group so it comes.
// The goroutine ends with the process, which Close kills at the latest.
func onExit(pid int, f func()) {
	go func() {
		idtype, id := uintptr(pPID), uintptr(pid)
		if fd, _, errno := syscall.Syscall(pidfdOpen, uintptr(pid), 0, 0); errno == 0 {
			defer syscall.Close(int(fd))
			idtype, id = pPIDFD, fd
		}
		var info [128]byte // siginfo_t
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, idtype, id, uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
			switch errno {
			case 0:
				f()
				return
			case syscall.EINTR:
				continue
			}
			return // already reaped: its shutdown kills the group
		}
	}()
}
