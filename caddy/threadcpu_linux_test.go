package squeezecaddy_test

import (
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID); the caller locks its goroutine to the thread.
func threadCPU(tb testing.TB) time.Duration {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		tb.Fatalf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", errno)
	}
	return time.Duration(ts.Nano())
}
