//go:build !unix

package bench

import "time"

// CPUTime reports false: this platform has no getrusage.
func CPUTime() (time.Duration, bool) { return 0, false }
