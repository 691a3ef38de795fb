//go:build !linux

package squeeze_test

import "time"

var start = time.Now()

// threadCPUTime stands in for the thread's CPU time with the time since
// start where no per-thread CPU clock is at hand.
func threadCPUTime() time.Duration { return time.Since(start) }
