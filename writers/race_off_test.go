//go:build !race

package writers_test

// raceEnabled reports whether the race detector is on. It instruments
// memory accesses and sync.Pool drops Puts under it, so allocation counts
// are only meaningful without it.
const raceEnabled = false
