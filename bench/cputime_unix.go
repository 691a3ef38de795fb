//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time the process has used, user and system, in
// all its threads. Unlike wall time it does not grow while the process waits
// for a core, so per-operation figures derived from it hold up on a machine
// shared with other work. It reports false where the figure is unavailable.
func CPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
