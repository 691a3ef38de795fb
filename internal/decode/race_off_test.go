//go:build !race

package decode

// raceEnabled reports whether the race detector is on. sync.Pool drops a
// share of Puts under -race by design, so allocation counts are only
// meaningful without it.
const raceEnabled = false
