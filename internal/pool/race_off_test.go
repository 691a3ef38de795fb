//go:build !race

package pool_test

// raceEnabled reports whether the race detector is on. sync.Pool drops a
// share of Puts under -race by design, so allocation counts and "the same
// object comes back" are only certain without it.
const raceEnabled = false
