package squeeze

import (
	"net/http"
	"time"
)

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
	return t.init().dec.Idle()
}

// WaitFileServer waits for the background encodings of h, a handler from
// FileServer, to end.
func WaitFileServer(h http.Handler) { h.(*fileServer).bestRuns.Wait() }

// SetFileServerLog replaces the logger of h, a handler from FileServer.
func SetFileServerLog(h http.Handler, logf func(format string, args ...any)) {
	h.(*fileServer).logf = logf
}

// SetStreamPatience sets the longest a follower of c waits for a stream's
// leader before it encodes for itself. Set it before c serves.
func SetStreamPatience(c *Cache, d time.Duration) { c.patience = d }

// GoroutinesIn counts the goroutines with frame on their stacks.
var GoroutinesIn = goroutinesIn

// CacheEntriesWeight sums the weights of the entries c holds: what
// Stats().Bytes must come back to once no work is in flight.
func CacheEntriesWeight(c *Cache) int64 {
	var w int64
	for _, e := range c.store.All() {
		w += e.weight
	}
	return w
}

// WaitUpgrades waits until no upgrade of c is queued or under way, and its
// workers dropped their encoders.
func WaitUpgrades(c *Cache) {
	for c.pending.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
}

// WaitSharedStore waits until m's background writes to its shared store
// have returned.
func WaitSharedStore(m *Middleware) {
	if m.shared != nil {
		m.shared.Wait()
	}
}

// SetSharedBreakerCooldown sets how long m's shared-store breaker stays
// open before it lets a probe through.
func SetSharedBreakerCooldown(m *Middleware, d time.Duration) { m.shared.SetBreakerCooldown(d) }

// SetLengthHidingSecret fixes the secret of m's WithLengthHiding, so that
// a test's padding is the same on every run.
func SetLengthHidingSecret(m *Middleware, secret [32]byte) { m.hiding.secret = secret }

// WaitLearned waits until the background work of m's learned dictionaries
// (rounds, trainings, looks for the fleet's) has ended.
func WaitLearned(m *Middleware) {
	if m.dicts != nil {
		m.dicts.learner.jobs.Wait()
	}
}

// SetLearnedLog sets the log of m's learned dictionaries.
func SetLearnedLog(m *Middleware, logf func(format string, args ...any)) {
	m.dicts.learner.logf = logf
}

// SetLearnedPollEvery sets the least time between two reads of a learned
// route's pointer in m's shared store.
func SetLearnedPollEvery(m *Middleware, d time.Duration) {
	m.dicts.learner.pollEvery = d
}

// SetSharedStoreLog replaces the logger of m's shared store's failures.
func SetSharedStoreLog(m *Middleware, logf func(format string, args ...any)) {
	m.shared.SetLogf(logf)
}

// The defaults the tests compare with, which the package states in its
// options' docs rather than exports.
const (
	DefaultMinSize               = defaultMinSize
	DefaultBufferSize            = defaultBufferSize
	DefaultLearnedDictionarySize = defaultLearnedDictionarySize
	DefaultLearnedPath           = defaultLearnedPath
	DictionaryCacheControl       = dictionaryCacheControl
)

// SetSharedRefreshEvery sets how often, at most, m refreshes the key of a
// shared dictionary it uses.
func SetSharedRefreshEvery(m *Middleware, d time.Duration) { m.shared.SetRefreshEvery(d) }

// Registrable reports whether squeeze judges that a browser registers a
// 200 response with header h as a dictionary (unregistrable).
func Registrable(h http.Header) bool { return unregistrable(h, "") == "" }
