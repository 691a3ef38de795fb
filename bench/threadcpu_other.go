//go:build !linux

package bench

import "time"

// ThreadCPUTime reports false: only Linux has a clock for one thread's CPU
// time that this package reads.
func ThreadCPUTime() (time.Duration, bool) { return 0, false }
