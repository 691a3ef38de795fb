package squeeze

import (
	"context"
	"sync"
	"sync/atomic"
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
// trusted: a value that fails the check is dropped and counted
// (SharedRejected), and its key is not asked again for a while. Such a
// value is the store's answer, not its fault: the breaker counts only
// calls that fail or time out, so no value, and no request naming one, can
// stop the fleet's sharing. Only what is wrong with the value alone (its
// framing, its hash, its size against the size limit) rejects it: a value
// that is sound but not for the caller that read it (a dictionary of a
// pattern not the caller's, or longer than the caller's own limit) is
// sharedNotHere, which marks nothing, so that a request naming a key on a
// path where it does not belong cannot keep it from the callers it does
// belong to. Callers that check a key's value differently (the store of
// remembered dictionaries, each learned route) read it under a via of
// their own: each has its flight and its misses, and no caller's verdict
// is shared with another. What a request decides (whether a verified
// dictionary's pattern matches its path) is checked by the caller after
// get, never inside it: the flight's result is shared by every caller of
// the key and via.
//
// Reads are bounded so that requests naming keys the store lacks cost
// little: a key a client named (lookup's named) and the store lacked is not
// asked again for sharedMissedFor; at most sharedLookups reads are in
// flight, of which named keys not asked for before take only
// sharedFirstLookups, so that a flood of random keys leaves room for a key
// a client asks for again and for the replica's own (get); and a read
// holds in the in-flight budget what the value really is when the store
// can tell (SharedStoreSizer), not the limit.

// shared is a Middleware's access to its SharedStore. nil when none is
// configured: callers check before building keys or values.
type shared struct {
	store    SharedStore
	timeout  time.Duration
	maxValue int
	observe  func(SharedStoreInfo) // nil: no observer

	// inflight holds the bytes of the values being read or written: a
	// read reserves its limit before the call, a write its value's length
	// until the call returns.
	inflight *semaphore.Weighted
	// lookups counts the reads in flight (see startLookup).
	lookups atomic.Int64
	flights singleflight.Group
	breaker breaker
	// budget bounds what this Middleware writes, and admitAfter is how
	// often a dictionary is sent before it is written unasked
	// (shared_admission.go).
	budget     *writeBudget
	admitAfter int
	// rejected holds the keys whose value failed verification lately:
	// they are not asked again for sharedRejectedFor, so one bad value
	// named by many requests costs one fetch per period and does not trip
	// the breaker, which stays for a store that fails as a whole.
	rejected *otter.Cache[string, struct{}]
	// missed holds the keys the store held no value for lately: they are
	// not asked again for sharedMissedFor, so a key named by many
	// requests and held by no replica costs one read per period.
	missed *recentKeys
	// asked holds the keys whose read was skipped because the reads in
	// flight filled the places of keys asked for the first time: asked
	// again, such a key may take one of the other places.
	asked *recentKeys
	// writes counts the background writes in progress, for tests.
	writes sync.WaitGroup
	// errLog logs failures, once per kind and minute
	// (shared_errors.go).
	errLog *sharedErrorLog
	// refreshEvery is how often, at most, the key of a value in use is
	// kept fresh (refresh); refreshing counts the refreshes in flight.
	refreshEvery time.Duration
	refreshing   atomic.Int64
	// life is the Middleware's (lifetime.go): every call made in the
	// background runs within its context, so that Close cancels it.
	life *lifetime
}

// defaultSharedRefreshEvery is how often, at most, a replica keeps the
// key of a shared dictionary it uses fresh in the store: well within the
// time a store sized as docs/reference.md says takes to turn over under
// the fleet's write budget (a minute or more), so that its LRU never takes
// a dictionary in use, for one small call per dictionary in use per
// replica, every 2 seconds at most and never more often than the
// dictionary is used.
const defaultSharedRefreshEvery = 2 * time.Second

// sharedRefreshes is how many refreshes may be in flight at once; one due
// while they fill it waits for the dictionary's next use.
const sharedRefreshes = 4

// refresh keeps key fresh in the store in the background: it reads the
// key with a limit of 0, which transfers no value and, in an LRU store
// such as Redis, marks it used. When the store is a SharedStoreSizer,
// which tells a key that holds a value from one that holds none, gone is
// called if key holds none. It reports whether the call was started:
// not while the breaker is open or sharedRefreshes calls are in flight.
func (s *shared) refresh(key string, gone func()) bool {
	if s.breaker.blocked() {
		return false
	}
	if s.refreshing.Add(1) > sharedRefreshes {
		s.refreshing.Add(-1)
		return false
	}
	s.writes.Add(1)
	started := s.life.goWork(func(ctx context.Context) {
		defer s.writes.Done()
		defer s.refreshing.Add(-1)
		if !s.breaker.allow() {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		t0 := time.Now()
		found, told := true, false
		var err error
		if sizer, ok := s.store.(SharedStoreSizer); ok {
			_, _, found, err = sizer.GetOrSize(ctx, key, 0)
			told = true
		} else {
			_, _, err = s.store.Get(ctx, key, 0)
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			s.fail("refresh", key, err, time.Since(t0))
			return
		}
		s.breaker.success()
		if told && !found {
			s.report(SharedMiss, 0, 0, time.Since(t0))
			gone()
			return
		}
		s.report(sharedRefreshed, 0, 0, time.Since(t0))
	})
	if !started {
		s.writes.Done()
		s.refreshing.Add(-1)
	}
	return started
}

// sharedInflightValues is how many values of the largest size may be in
// flight at once, reads and writes together.
const sharedInflightValues = 8

// sharedLookups is how many reads may be in flight at once;
// sharedFirstLookups of them may be of keys not asked for lately. A client
// repeats the hash of the dictionary it holds on every request, a flood of
// random hashes never does: the flood's reads hold sharedFirstLookups
// places, and the client's second request finds one of the others.
const (
	sharedLookups      = 16
	sharedFirstLookups = 4
)

// sharedProbe is what the first read of a value holds in the in-flight
// budget when the store is a SharedStoreSizer: a value this long or
// shorter comes in one call; a longer one is read in a second call that
// holds its length.
const sharedProbe = 64 << 10

// sharedMissedBytes and sharedMissedFor bound the keys remembered as
// missed: briefly, since another replica may write the value any time; and
// sharedAskedBytes and sharedAskedFor those remembered as asked for. Each
// key costs some 150 bytes: a budget holds a few thousand, so a client's
// key stays noted while a flood notes as many others.
const (
	sharedMissedBytes = 512 << 10
	sharedMissedFor   = time.Second
	sharedAskedBytes  = 512 << 10
	sharedAskedFor    = 10 * time.Second
)

// sharedRejectedKeys and sharedRejectedFor bound the keys remembered as
// holding a value that failed verification: some hundreds of kilobytes at
// most, each for a minute.
const (
	sharedRejectedKeys = 4096
	sharedRejectedFor  = time.Minute
)

// newShared returns the wrapper of c's store, or nil without one.
func newShared(c *config, observe func(SharedStoreInfo)) *shared {
	if c.shared == nil {
		return nil
	}
	s := &shared{
		store:    c.shared,
		timeout:  c.sharedTimeout,
		maxValue: c.sharedMaxValue,
		observe:  observe,
		life:     new(lifetime), // New gives it the Middleware's
	}
	if s.timeout == 0 {
		s.timeout = defaultSharedTimeout
	}
	if s.maxValue == 0 {
		s.maxValue = defaultSharedMaxValue
	}
	s.inflight = semaphore.NewWeighted(int64(s.maxValue) * sharedInflightValues)
	writes, bytes := c.sharedWrites, c.sharedWriteBytes
	if writes == 0 {
		writes = defaultSharedWrites
	}
	if bytes == 0 {
		bytes = max(defaultSharedWriteBytes, int64(s.maxValue))
	}
	s.budget = newWriteBudget(writes, bytes)
	s.admitAfter = c.sharedAdmitAfter
	if s.admitAfter == 0 {
		s.admitAfter = defaultSharedAdmitAfter
	}
	s.rejected = otter.Must(&otter.Options[string, struct{}]{
		MaximumSize:      sharedRejectedKeys,
		ExpiryCalculator: otter.ExpiryWriting[string, struct{}](sharedRejectedFor),
	})
	s.missed = newRecentKeys(sharedMissedBytes, sharedMissedFor)
	s.asked = newRecentKeys(sharedAskedBytes, sharedAskedFor)
	s.breaker.report, s.breaker.cooldown = s.report, sharedBreakerCooldown
	s.errLog = newSharedErrorLog()
	s.refreshEvery = defaultSharedRefreshEvery
	return s
}

// report sends a SharedStoreInfo to the observer, if any.
func (s *shared) report(r SharedResult, in, out int64, elapsed time.Duration) {
	if s.observe != nil {
		s.observe(SharedStoreInfo{Result: r, Read: in, Written: out, Elapsed: elapsed})
	}
}

// sharedVerdict is what a use function of get found of a value.
type sharedVerdict uint8

const (
	// sharedBad: the value alone is wrong, whoever reads it (its framing,
	// its hash): it is refused and its key not asked again for a while.
	sharedBad sharedVerdict = iota
	// sharedTaken: the value passed and was used.
	sharedTaken
	// sharedNotHere: the value is not for this caller (a pattern not its
	// own, a length over its own limit), though it may be for another: it
	// is dropped and nothing is noted of its key.
	sharedNotHere
)

// sharedUse checks and takes a value read from the store (see get).
type sharedUse func(value []byte) (any, sharedVerdict)

// sharedFlight is the result of one fetch, shared by those that waited for
// it: v is what use returned, ok whether it took a value.
type sharedFlight struct {
	v  any
	ok bool
}

// get fetches the value under key, of at most limit bytes (lowered to the
// size limit), and passes it to use, which checks it (against the hash
// that names it, and whatever else it claims) and keeps it where it is
// counted (a local store), returning what the caller needs and
// sharedTaken, or the verdict that drops it. One fetch of a key is in
// flight at once: the callers asking meanwhile wait for it and share its
// result, which is why use runs in the fetch and not in the caller. A
// caller waits at most the
// timeout, or until ctx ends; the fetch goes on, bounded by the timeout,
// without it.
//
// get reports false, with no call made, while the breaker is open, the
// key's value failed verification lately, or the reads or values in
// flight fill their places or budget. It is for the keys the replica asks
// for itself (its upgrades, its polls), which come at the pace of its own
// work; lookup with named set is for those a client named. Every caller
// of get for key checks its value alike: callers that check it
// differently use lookup, each with its own via.
func (s *shared) get(ctx context.Context, key string, limit int, use sharedUse) (any, bool) {
	return s.lookup(ctx, key, "", limit, false, use)
}

// lookup is get for a caller that reads key through via, and, when named
// is set, for a key a client's request named (a dictionary's hash in
// Available-Dictionary), which any client may make up: a key missed
// lately is not asked again, and a key not asked for lately takes only
// the first places of the reads in flight (see startLookup). via names
// the checks use makes and limit, the same for every caller of that via
// (the store of remembered dictionaries, a learned route). Callers of one key through different
// vias share no flight and no misses, only the keys whose value was bad
// (sharedBad) whoever read it.
func (s *shared) lookup(ctx context.Context, key, via string, limit int, named bool, use sharedUse) (any, bool) {
	limit = min(limit, s.maxValue)
	if limit <= 0 {
		return nil, false
	}
	read := via + "\x00" + key // the flight, the misses and the asks
	if s.known(key, read, named) || s.breaker.blocked() || s.life.isClosed() {
		s.report(SharedSkipped, 0, 0, 0)
		return nil, false
	}
	deadline := time.NewTimer(s.timeout)
	defer deadline.Stop()
	ch := s.flights.DoChan(read, func() (any, error) {
		// The fetch outlives its callers' waits: it is the Middleware's
		// work, which Close cancels and waits for.
		life, done, ok := s.life.enter()
		if !ok {
			return sharedFlight{}, nil
		}
		defer done()
		return s.fetch(life, key, read, limit, named, use), nil
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

// known reports whether key's value failed verification lately, or, for
// a key a client named, whether the store held none for its read (key
// through a via, see lookup) lately: then it is not asked for.
func (s *shared) known(key, read string, named bool) bool {
	if _, bad := s.rejected.GetIfPresent(key); bad {
		return true
	}
	return named && s.missed.has(read)
}

// startLookup takes a place among the reads in flight for key, or reports
// false when there is none for it: the first sharedFirstLookups places are
// open to any key, the others to the replica's own keys and to a named key
// noted as asked for, which is what a named key whose read startLookup
// refused becomes. The caller of a true result gives its place back with
// endLookup.
func (s *shared) startLookup(key string, named bool) bool {
	n := s.lookups.Add(1)
	if n <= sharedFirstLookups {
		return true
	}
	if n <= sharedLookups {
		if !named || s.asked.forget(key) {
			return true
		}
	}
	s.lookups.Add(-1)
	if named {
		s.asked.note(key)
	}
	return false
}

// endLookup gives back a place startLookup gave.
func (s *shared) endLookup() { s.lookups.Add(-1) }

// fetch is one flight of lookup, within life: read names it (key through
// its via).
func (s *shared) fetch(life context.Context, key, read string, limit int, named bool, use sharedUse) sharedFlight {
	if !s.startLookup(read, named) {
		s.report(SharedSkipped, 0, 0, 0)
		return sharedFlight{}
	}
	defer s.endLookup()
	if !s.breaker.allow() {
		s.report(SharedSkipped, 0, 0, 0)
		return sharedFlight{}
	}
	ctx, cancel := context.WithTimeout(life, s.timeout)
	defer cancel()
	t0 := time.Now()
	r := s.read(ctx, key, limit)
	defer s.inflight.Release(r.held)
	elapsed := time.Since(t0)
	err := r.err
	switch {
	case r.skipped:
		s.report(SharedSkipped, 0, 0, elapsed)
		return sharedFlight{}
	case err == nil && ctx.Err() != nil:
		err = ctx.Err() // an answer after the deadline is not one
	case err == nil && len(r.value) > s.maxValue:
		s.refuse(key, len(r.value), elapsed)
		return sharedFlight{}
	case err == nil && (len(r.value) > limit || r.over):
		// Within the size limit, over this caller's: perhaps another's.
		s.breaker.success()
		s.report(SharedMiss, 0, 0, elapsed)
		return sharedFlight{}
	}
	if err != nil {
		s.fail("get", key, err, elapsed)
		return sharedFlight{}
	}
	if !r.found {
		s.breaker.success()
		if named {
			// A plain store tells no value from one over limit: the
			// miss is noted for this read only, not for another via's.
			s.missed.note(read)
		}
		s.report(SharedMiss, 0, 0, elapsed)
		return sharedFlight{}
	}
	v, verdict := use(r.value)
	switch verdict {
	case sharedBad:
		s.refuse(key, len(r.value), elapsed)
		return sharedFlight{}
	case sharedNotHere:
		s.breaker.success()
		s.report(SharedMiss, int64(len(r.value)), 0, elapsed)
		return sharedFlight{}
	}
	s.breaker.success()
	s.report(SharedHit, int64(len(r.value)), 0, elapsed)
	return sharedFlight{v: v, ok: true}
}

// refuse accounts for a value of n bytes under key that failed
// verification: the store answered, so the breaker counts a success; the
// key is not asked again for sharedRejectedFor.
func (s *shared) refuse(key string, n int, elapsed time.Duration) {
	s.rejected.Set(key, struct{}{})
	s.breaker.success()
	s.report(SharedRejected, int64(n), 0, elapsed)
}

// sharedRead is what read found.
type sharedRead struct {
	value []byte
	found bool // a value within the limit; false for one over it
	// over: a SharedStoreSizer told of a value over the limit but within
	// the size limit, not brought.
	over bool
	err  error
	// held is what read holds of the in-flight budget, for its caller to
	// release.
	held int64
	// skipped: the budget had no room for the value; nothing more was
	// asked.
	skipped bool
}

// read asks the store for key's value of at most limit bytes, within ctx,
// holding in the in-flight budget what the store may transfer: limit for
// a plain SharedStore; for a SharedStoreSizer, sharedProbe bytes (or
// limit, if less) for a first call that brings a short value whole and
// tells a longer one's length, then that length for a second call that
// brings it. A key that holds nothing holds at most sharedProbe.
func (s *shared) read(ctx context.Context, key string, limit int) (r sharedRead) {
	sizer, sized := s.store.(SharedStoreSizer)
	first := limit
	if sized {
		first = min(limit, sharedProbe)
	}
	if !s.inflight.TryAcquire(int64(first)) {
		s.breaker.cancel()
		return sharedRead{skipped: true}
	}
	r.held = int64(first)
	if !sized {
		r.value, r.found, r.err = s.store.Get(ctx, key, limit)
		return r
	}
	value, size, found, err := sizer.GetOrSize(ctx, key, first)
	if err == nil && found && size > first && size <= limit {
		// Longer than the first call could bring: hold its length.
		if !s.inflight.TryAcquire(int64(size - first)) {
			s.breaker.success() // the store answered
			r.skipped = true
			return r
		}
		r.held = int64(size)
		value, size, found, err = sizer.GetOrSize(ctx, key, size)
	}
	// A value told longer than what was asked (over the limit, or grown
	// since its length was told) was not brought: over, when it is within
	// the size limit and so perhaps for another caller; else a miss, as
	// for Get.
	r.value, r.found, r.err = value, found && (value != nil || size <= int(r.held)), err
	r.over = err == nil && found && !r.found && size <= s.maxValue
	return r
}

// setAsync writes value under key for lifetime in the background, unless
// it is over the size limit, the breaker is open, the values in flight
// leave no room for it or the write budget has none (shared_admission.go):
// a write only saves another replica work, so none waits for it. It
// reports whether the write was started; failed, if not nil, is called
// if the store then does not take it. value must not be modified
// afterwards.
func (s *shared) setAsync(key string, value []byte, lifetime time.Duration, failed func()) bool {
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
	started := s.life.goWork(func(ctx context.Context) {
		defer s.writes.Done()
		defer s.inflight.Release(int64(len(value)))
		if !s.set(ctx, key, value, lifetime) && failed != nil {
			failed()
		}
	})
	if !started { // the Middleware is closed
		s.writes.Done()
		s.inflight.Release(int64(len(value)))
	}
	return started
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
	if !s.wrote(ctx, "set", key, err, len(value), time.Since(t0)) {
		return false
	}
	s.rejected.Invalidate(key) // the store holds a good value now
	s.missed.forget(key)
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
	if !s.wrote(ctx, "claim", key, err, len(value), time.Since(t0)) {
		return claimUnknown
	}
	return claimWon
}

// writeCall gives a write of n bytes its deadline: the timeout, whatever
// ctx's own, since a write may outlive the request that asked for it, but
// not the Middleware: Close cancels it (lifetime.go). It reports false,
// with nothing to cancel, when n is over the size limit, the breaker is
// open or the Middleware is closed (a skip).
func (s *shared) writeCall(ctx context.Context, n int) (context.Context, context.CancelFunc, bool) {
	if n > s.maxValue {
		return nil, nil, false
	}
	if s.life.isClosed() || !s.breaker.allow() {
		s.report(SharedSkipped, 0, 0, 0)
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	stop := context.AfterFunc(s.life.context(), cancel)
	return ctx, func() { stop(); cancel() }, true
}

// wrote accounts for a write (op on key) that returned err after elapsed,
// and reports whether it succeeded within its deadline.
func (s *shared) wrote(ctx context.Context, op, key string, err error, n int, elapsed time.Duration) bool {
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		s.fail(op, key, err, elapsed)
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
