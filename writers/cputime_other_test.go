//go:build !linux

package writers_test

import "time"

// threadCPUTime is only implemented on Linux; elsewhere BenchmarkLevels
// reports wall-clock speed alone.
func threadCPUTime() (time.Duration, bool) { return 0, false }
