//go:build !race

package testtool

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
