package squeeze

import (
	"context"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// This file holds the one way squeeze talks to a SharedStore (see
// WithSharedStore): every call goes through shared, which bounds it by the
// per-call timeout, skips it while the breaker is open or while the values
// in flight fill their budget, keeps values over the size limit out both
// ways, lets one fetch per key be in flight, verifies what it reads before
// anyone uses it, and reports each outcome to the observer. Nothing here
// holds a lock while the store is asked.
//
// What goes through it is content-addressed and checked by the caller's
// use function (shared_dict.go for dictionaries), so the store is never
// trusted: a value that fails the check is dropped, counted and charged to
// the breaker, as an error is.

// shared is a Middleware's access to its SharedStore. nil when none is
// configured: callers check before building keys or values.
type shared struct {
	store    SharedStore
	timeout  time.Duration
	maxValue int
	observe  func(Event) // nil: no observer

	// inflight holds the bytes of the values being read or written: a
	// read reserves its limit before the call, a write its value's length
	// until the call returns.
	inflight *semaphore.Weighted
	flights  singleflight.Group
	breaker  breaker
	// budget bounds what this Middleware writes (shared_admission.go).
	budget *writeBudget
	// rejected holds the keys whose value failed verification lately:
	// they are not asked again for sharedRejectedFor, so one bad value
	// named by many requests costs one fetch per period and does not trip
	// the breaker, which stays for a store that fails as a whole.
	rejected *otter.Cache[string, struct{}]
	// writes counts the background writes in progress, for tests.
	writes sync.WaitGroup
}

// sharedInflightValues is how many values of the largest size may be in
// flight at once, reads and writes together.
const sharedInflightValues = 8

// sharedRejectedKeys and sharedRejectedFor bound the keys remembered as
// holding a value that failed verification: some hundreds of kilobytes at
// most, each for a minute.
const (
	sharedRejectedKeys = 4096
	sharedRejectedFor  = time.Minute
)

// newShared returns the wrapper of c's store, or nil without one.
func newShared(c *config, observe func(Event)) *shared {
	if c.shared == nil {
		return nil
	}
	s := &shared{
		store:    c.shared,
		timeout:  c.sharedTimeout,
		maxValue: c.sharedMaxValue,
		observe:  observe,
	}
	if s.timeout == 0 {
		s.timeout = DefaultSharedStoreTimeout
	}
	if s.maxValue == 0 {
		s.maxValue = DefaultSharedStoreMaxValue
	}
	s.inflight = semaphore.NewWeighted(int64(s.maxValue) * sharedInflightValues)
	writes, bytes := c.sharedWrites, c.sharedWriteBytes
	if writes == 0 {
		writes = DefaultSharedStoreWrites
	}
	if bytes == 0 {
		bytes = max(DefaultSharedStoreWriteBytes, int64(s.maxValue))
	}
	s.budget = newWriteBudget(writes, bytes)
	s.rejected = otter.Must(&otter.Options[string, struct{}]{
		MaximumSize:      sharedRejectedKeys,
		ExpiryCalculator: otter.ExpiryWriting[string, struct{}](sharedRejectedFor),
	})
	s.breaker.report, s.breaker.cooldown = s.report, sharedBreakerCooldown
	return s
}

// report sends a SharedStoreEvent to the observer, if any.
func (s *shared) report(r SharedResult, in, out int64, elapsed time.Duration) {
	if s.observe != nil {
		s.observe(Event{Kind: SharedStoreEvent, Shared: r, In: in, Out: out, Elapsed: elapsed})
	}
}

// sharedFlight is the result of one fetch, shared by those that waited for
// it: v is what use returned, ok whether it accepted a value.
type sharedFlight struct {
	v  any
	ok bool
}

// get fetches the value under key, of at most limit bytes (lowered to the
// size limit), and passes it to use, which checks it (against the hash
// that names it, and whatever else it claims) and keeps it where it is
// counted (a local store), returning what the caller needs and true, or
// false to reject it. One fetch of a key is in flight at once: the
// callers asking meanwhile wait for it and share its result, which is why
// use runs in the fetch and not in the caller. A caller waits at most the
// timeout, or until ctx ends; the fetch goes on, bounded by the timeout,
// without it.
//
// get reports false, with no call made, while the breaker is open or the
// values in flight leave no room for limit bytes more.
func (s *shared) get(ctx context.Context, key string, limit int, use func(value []byte) (any, bool)) (any, bool) {
	limit = min(limit, s.maxValue)
	if limit <= 0 {
		return nil, false
	}
	if _, bad := s.rejected.GetIfPresent(key); bad || s.breaker.blocked() {
		s.report(SharedSkipped, 0, 0, 0)
		return nil, false
	}
	deadline := time.NewTimer(s.timeout)
	defer deadline.Stop()
	ch := s.flights.DoChan(key, func() (any, error) {
		return s.fetch(key, limit, use), nil
	})
	select {
	case r := <-ch:
		f := r.Val.(sharedFlight)
		return f.v, f.ok
	case <-deadline.C:
		// The fetch has not returned by its deadline: the store is slow to
		// honour its context, or does not. The fetch counts as a failure
		// when it returns; this caller goes on without it. A store that
		// never returns holds its fetches' reservations, so past the
		// in-flight budget no call is made at all.
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// fetch is one flight of get.
func (s *shared) fetch(key string, limit int, use func([]byte) (any, bool)) sharedFlight {
	if !s.breaker.allow() {
		s.report(SharedSkipped, 0, 0, 0)
		return sharedFlight{}
	}
	if !s.inflight.TryAcquire(int64(limit)) {
		s.breaker.cancel()
		s.report(SharedSkipped, 0, 0, 0)
		return sharedFlight{}
	}
	defer s.inflight.Release(int64(limit))
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	t0 := time.Now()
	value, found, err := s.store.Get(ctx, key, limit)
	elapsed := time.Since(t0)
	switch {
	case err == nil && ctx.Err() != nil:
		err = ctx.Err() // an answer after the deadline is not one
	case err == nil && len(value) > limit:
		s.rejected.Set(key, struct{}{})
		s.breaker.failure()
		s.report(SharedRejected, int64(len(value)), 0, elapsed)
		return sharedFlight{}
	}
	if err != nil {
		s.breaker.failure()
		s.report(SharedError, 0, 0, elapsed)
		return sharedFlight{}
	}
	if !found {
		s.breaker.success()
		s.report(SharedMiss, 0, 0, elapsed)
		return sharedFlight{}
	}
	v, ok := use(value)
	if !ok {
		s.rejected.Set(key, struct{}{})
		s.breaker.failure()
		s.report(SharedRejected, int64(len(value)), 0, elapsed)
		return sharedFlight{}
	}
	s.breaker.success()
	s.report(SharedHit, int64(len(value)), 0, elapsed)
	return sharedFlight{v: v, ok: true}
}

// setAsync writes value under key for lifetime in the background, unless
// it is over the size limit, the breaker is open, the values in flight
// leave no room for it or the write budget has none (shared_admission.go):
// a write only saves another replica work, so none waits for it. It
// reports whether the write was started. value must not be modified
// afterwards.
func (s *shared) setAsync(key string, value []byte, lifetime time.Duration) bool {
	if len(value) > s.maxValue {
		return false
	}
	if s.breaker.blocked() || !s.inflight.TryAcquire(int64(len(value))) {
		s.report(SharedSkipped, 0, 0, 0)
		return false
	}
	if !s.admit(len(value)) {
		s.inflight.Release(int64(len(value)))
		return false
	}
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer s.inflight.Release(int64(len(value)))
		_ = s.set(context.Background(), key, value, lifetime)
	}()
	return true
}

// set writes value under key for lifetime within the timeout (or ctx),
// unless it is over the size limit or the breaker is open; it reports
// whether the store took it. The caller has taken the write from the
// budget (setAsync).
func (s *shared) set(ctx context.Context, key string, value []byte, lifetime time.Duration) bool {
	ctx, cancel, ok := s.writeCall(ctx, len(value))
	if !ok {
		return false
	}
	defer cancel()
	t0 := time.Now()
	err := s.store.Set(ctx, key, value, lifetime)
	if !s.wrote(ctx, err, len(value), time.Since(t0)) {
		return false
	}
	s.rejected.Invalidate(key) // the store holds a good value now
	return true
}

// claim stores value under key for lifetime if key holds none, within the
// timeout: claimWon when this replica won the claim, claimLost when another
// holds it, and claimUnknown when the store could not answer, the breaker
// is open, value is over the size limit or the write budget has no room
// for it: then the caller does the work itself (or not at all), never
// waits for another replica. A claim is a write, taken from the budget.
func (s *shared) claim(ctx context.Context, key string, value []byte, lifetime time.Duration) claimOutcome {
	if len(value) > s.maxValue {
		return claimUnknown
	}
	if s.breaker.blocked() {
		s.report(SharedSkipped, 0, 0, 0)
		return claimUnknown
	}
	if !s.admit(len(value)) {
		return claimUnknown
	}
	ctx, cancel, ok := s.writeCall(ctx, len(value))
	if !ok {
		return claimUnknown
	}
	defer cancel()
	t0 := time.Now()
	won, err := s.store.Claim(ctx, key, value, lifetime)
	if err == nil && !won && ctx.Err() == nil {
		s.breaker.success()
		s.report(SharedClaimLost, 0, 0, time.Since(t0))
		return claimLost
	}
	if !s.wrote(ctx, err, len(value), time.Since(t0)) {
		return claimUnknown
	}
	return claimWon
}

// writeCall gives a write of n bytes its deadline: the timeout, whatever
// ctx's own, since a write may outlive the request that asked for it. It
// reports false, with nothing to cancel, when n is over the size limit or
// the breaker is open (a skip).
func (s *shared) writeCall(ctx context.Context, n int) (context.Context, context.CancelFunc, bool) {
	if n > s.maxValue {
		return nil, nil, false
	}
	if !s.breaker.allow() {
		s.report(SharedSkipped, 0, 0, 0)
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	return ctx, cancel, true
}

// wrote accounts for a write that returned err after elapsed, and reports
// whether it succeeded within its deadline.
func (s *shared) wrote(ctx context.Context, err error, n int, elapsed time.Duration) bool {
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		s.breaker.failure()
		s.report(SharedError, 0, 0, elapsed)
		return false
	}
	s.breaker.success()
	s.report(SharedWritten, 0, int64(n), elapsed)
	return true
}

// breaker stops calls to a store that keeps failing (see
// sharedBreakerFailures): closed, it lets every call through; open, none
// until the cooldown has passed; then one probe, whose outcome closes or
// reopens it. Its mutex guards a few fields and is never held across a
// call.
type breaker struct {
	report   func(r SharedResult, in, out int64, elapsed time.Duration)
	cooldown time.Duration // sharedBreakerCooldown; shorter in tests

	mu       sync.Mutex
	failures int       // in a row
	open     bool      // open or probing
	until    time.Time // open: no call before this
	probing  bool      // a probe is in flight
}

// blocked reports whether the breaker is open and no probe is due: a
// cheap check before a call is prepared.
func (b *breaker) blocked() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open && (b.probing || time.Now().Before(b.until))
}

// allow reports whether a call may be made now. When the cooldown of an
// open breaker has passed, it lets one call through as the probe.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true
	}
	if b.probing || time.Now().Before(b.until) {
		return false
	}
	b.probing = true
	return true
}

// cancel gives back a probe allowed but not made.
func (b *breaker) cancel() {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// success records a call that the store answered.
func (b *breaker) success() {
	b.mu.Lock()
	wasOpen := b.open
	b.failures, b.open, b.probing = 0, false, false
	b.mu.Unlock()
	if wasOpen {
		b.report(SharedBreakerClosed, 0, 0, 0)
	}
}

// failure records a call that failed; it opens the breaker after
// sharedBreakerFailures in a row, or at once when the call was the probe.
func (b *breaker) failure() {
	b.mu.Lock()
	b.failures++
	opens := b.failures >= sharedBreakerFailures && (!b.open || b.probing)
	if opens {
		b.until = time.Now().Add(b.cooldown)
		b.probing = false
	}
	wasOpen := b.open
	b.open = b.open || opens
	b.mu.Unlock()
	if opens && !wasOpen {
		b.report(SharedBreakerOpened, 0, 0, 0)
	}
}
