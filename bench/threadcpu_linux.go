package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPUTime returns the CPU time the calling thread has used. A
// goroutine locked to its thread (runtime.LockOSThread) can time one
// response by it and leave out the time the thread waited for a core,
// which on a machine shared with other work swamps the response's own.
// It reports false where the figure is unavailable.
func ThreadCPUTime() (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
