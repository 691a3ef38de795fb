package squeeze

// RaceEnabled exposes raceEnabled to the black-box tests in package
// squeeze_test: the allocation test only counts without the race detector.
const RaceEnabled = raceEnabled
