package squeeze

// RaceEnabled exposes raceEnabled to the black-box tests in package
// squeeze_test: the allocation test only counts without the race detector.
const RaceEnabled = raceEnabled

// ReasonCount is one past the last Reason, for tests that walk them all.
const ReasonCount = reasonCount

// EscapeLabel exposes the Prometheus label escaping to the format tests.
var EscapeLabel = escapeLabel

// TransportBudgetIdle reports whether no response body of t holds any of
// its decoder memory budget: whether the whole budget can be taken.
func TransportBudgetIdle(t *Transport) bool {
	s := t.init()
	if !s.dec.budget.TryAcquire(s.dec.memory) {
		return false
	}
	s.dec.budget.Release(s.dec.memory)
	return true
}
