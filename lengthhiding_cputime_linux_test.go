package squeeze_test

import (
	"syscall"
	"time"
)

// threadCPUTime returns the CPU time the calling thread has used, which on
// a busy machine measures the work done rather than the wait for a core.
// The caller locks its goroutine to the thread.
func threadCPUTime() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
