//go:build !linux

package squeezecaddy_test

import (
	"testing"
	"time"
)

// threadCPU skips: only Linux has a clock for one thread's CPU time.
func threadCPU(tb testing.TB) time.Duration {
	tb.Skip("thread CPU time needs Linux's CLOCK_THREAD_CPUTIME_ID")
	return 0
}
