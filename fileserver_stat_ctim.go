//go:build aix || dragonfly || linux || openbsd || solaris

package squeeze

import "syscall"

// ctimeOf returns the change time of s in nanoseconds since 1970.
func ctimeOf(s *syscall.Stat_t) int64 { return s.Ctim.Nano() }
