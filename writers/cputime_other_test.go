//go:build !unix

package writers_test

import "time"

// processCPUTime is only implemented on Unix; elsewhere the benchmarks
// report wall-clock speed alone.
func processCPUTime() (time.Duration, bool) { return 0, false }
