//go:build !linux

package squeeze

import "time"

var threadCPUStart = time.Now()

// threadCPU stands in for the thread's CPU time with the time since the
// tests started where no per-thread CPU clock is at hand.
func threadCPU() time.Duration { return time.Since(threadCPUStart) }
