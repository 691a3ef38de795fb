// Package storeguard guards every call a replica makes to its fleet's
// shared store (squeeze's WithSharedStore): it bounds each call by a
// timeout, skips calls while a breaker is open or while the values in
// flight fill their budget, keeps values over the size limit out both
// ways, lets one fetch per key be in flight, has what it reads checked
// before anyone uses it, takes every write from a write budget, and
// reports each outcome. It knows nothing of HTTP: keys and values are
// opaque bytes, and what a value must be is its caller's check. Nothing
// here holds a lock while the store is asked.
//
// What goes through it is content-addressed and checked by the caller's
// [Use] function, so the store is never trusted: a value that fails the
// check is dropped and counted ([Rejected]), and its key is not asked
// again for a while. Such a value is the store's answer, not its fault:
// the breaker counts only calls that fail or time out, so no value, and
// no request naming one, can stop the fleet's sharing. Only what is wrong
// with the value alone (its framing, its hash, its size against the size
// limit) rejects it ([Bad]): a value that is sound but not for the caller
// that read it is [NotHere], which marks nothing, so that a request
// naming a key where it does not belong cannot keep it from the callers
// it does belong to. Callers that check a key's value differently read it
// through a via of their own ([Guard.Lookup]): each has its flight and its
// misses, and no caller's verdict is shared with another. What a request
// decides is checked by the caller after the read, never inside it: the
// flight's result is shared by every caller of the key and via.
//
// Reads are bounded so that requests naming keys the store lacks cost
// little: a key a client named and the store lacked is not asked again
// for missedFor; at most lookups reads are in flight, of which named keys
// not asked for before take only firstLookups, so that a flood of random
// keys leaves room for a key a client asks for again and for the
// replica's own ([Guard.Get]); and a read holds in the in-flight budget
// what the value really is when the store can tell ([Sizer]), not the
// limit.
package storeguard

import (
	"context"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// Result is the outcome of a call to the store, as [Info] reports it.
// Its values are those of squeeze.SharedResult, in the same order.
type Result uint8

const (
	// None is no result.
	None Result = iota
	// Hit: a value was read and verified.
	Hit
	// Miss: the store held no value for the key, or none usable here.
	Miss
	// Error: the call failed or reached its timeout.
	Error
	// Rejected: a value was read but failed verification and was dropped.
	Rejected
	// Skipped: no call was made.
	Skipped
	// Written: a value was written, or a claim won.
	Written
	// ClaimLost: a claim found the key taken.
	ClaimLost
	// BreakerOpened: calls failed in a row; the store is not asked a while.
	BreakerOpened
	// BreakerClosed: a call succeeded after the breaker opened.
	BreakerClosed
	// Refused: a write or a claim was not made for want of room in the
	// write budget.
	Refused
	// Refreshed: a key in use was kept fresh by a read that transfers no
	// value ([Guard.Refresh]).
	Refreshed
	// ResultCount is the number of results.
	ResultCount
)

// Info describes one call to the store, a call skipped or a breaker
// change.
type Info struct {
	Result Result
	// Read and Written are the value bytes transferred.
	Read, Written int64
	// Kind and Err are an [Error]'s kind and error.
	Kind    ErrorKind
	Err     error
	Elapsed time.Duration
}

// Defaults of [Config]'s fields.
const (
	// DefaultTimeout is the per-call deadline: a Redis GET of a value of
	// some hundreds of kilobytes on the same network takes well under a
	// millisecond, one of DefaultMaxValue a few milliseconds (see
	// docs/perf-history.md), so this leaves room for a loaded store while
	// bounding what a store that has gone away costs a request.
	DefaultTimeout = 25 * time.Millisecond

	// DefaultMaxValue is the largest value, in bytes, written or read:
	// 4 MiB, more than a large script bundle.
	DefaultMaxValue = 4 << 20

	// DefaultRefreshEvery is how often, at most, a replica keeps the key
	// of a value in use fresh in the store: well within the time a store
	// sized as docs/reference.md says takes to turn over under the
	// fleet's write budget (a minute or more), so that its LRU never takes
	// a value in use, for one small call per value in use per replica,
	// every 2 seconds at most.
	DefaultRefreshEvery = 2 * time.Second
)

// Config is what a [Guard] is built with; a zero field takes its default.
type Config struct {
	Timeout  time.Duration // DefaultTimeout
	MaxValue int           // DefaultMaxValue
	// Writes and WriteBytes are the write budget per minute
	// (DefaultWrites; DefaultWriteBytes, or MaxValue if more).
	Writes     int
	WriteBytes int64
	// AdmitAfter is how often a value is served before it is written
	// unasked ([Candidate.Served]; DefaultAdmitAfter).
	AdmitAfter int
	// Observe receives each outcome; nil reports nothing.
	Observe func(Info)
	// Logf logs failures, once per kind and minute; log.Printf if nil.
	Logf func(format string, args ...any)
}

// Guard is a replica's access to its shared store: every call goes
// through it. Its methods are safe for concurrent use.
type Guard struct {
	store    Store
	timeout  time.Duration
	maxValue int
	observe  func(Info) // nil: no observer

	// inflight holds the bytes of the values being read or written: a
	// read reserves its limit before the call, a write its value's length
	// until the call returns.
	inflight *semaphore.Weighted
	// lookups counts the reads in flight (see startLookup).
	lookups atomic.Int64
	flights singleflight.Group
	breaker breaker
	// budget bounds what this replica writes, and admitAfter is how
	// often a value is served before it is written unasked (budget.go,
	// candidate.go).
	budget     *writeBudget
	admitAfter int
	// rejected holds the keys whose value failed verification lately:
	// they are not asked again for rejectedFor, so one bad value named by
	// many requests costs one fetch per period and does not trip the
	// breaker, which stays for a store that fails as a whole.
	rejected *otter.Cache[string, struct{}]
	// missed holds the keys the store held no value for lately: they are
	// not asked again for missedFor, so a key named by many requests and
	// held by no replica costs one read per period.
	missed *RecentKeys
	// asked holds the keys whose read was skipped because the reads in
	// flight filled the places of keys asked for the first time: asked
	// again, such a key may take one of the other places.
	asked *RecentKeys
	// writes counts the background calls in progress (Wait).
	writes sync.WaitGroup
	// errLog logs failures, once per kind and minute (errors.go).
	errLog *errorLog
	// refreshEvery is how often, at most, the key of a value in use is
	// kept fresh (Refresh); refreshing counts the refreshes in flight.
	refreshEvery time.Duration
	refreshing   atomic.Int64
}

// refreshes is how many refreshes may be in flight at once; one due while
// they fill it waits for the value's next use.
const refreshes = 4

// inflightValues is how many values of the largest size may be in flight
// at once, reads and writes together.
const inflightValues = 8

// lookups is how many reads may be in flight at once; firstLookups of
// them may be of keys not asked for lately. A client repeats the hash of
// the dictionary it holds on every request, a flood of random hashes
// never does: the flood's reads hold firstLookups places, and the
// client's second request finds one of the others.
const (
	lookups      = 16
	firstLookups = 4
)

// probe is what the first read of a value holds in the in-flight budget
// when the store is a Sizer: a value this long or shorter comes in one
// call; a longer one is read in a second call that holds its length.
const probe = 64 << 10

// missedBytes and missedFor bound the keys remembered as missed: briefly,
// since another replica may write the value any time; and askedBytes and
// askedFor those remembered as asked for. Each key costs some 150 bytes:
// a budget holds a few thousand, so a client's key stays noted while a
// flood notes as many others.
const (
	missedBytes = 512 << 10
	missedFor   = time.Second
	askedBytes  = 512 << 10
	askedFor    = 10 * time.Second
)

// rejectedKeys and rejectedFor bound the keys remembered as holding a
// value that failed verification: some hundreds of kilobytes at most,
// each for a minute.
const (
	rejectedKeys = 4096
	rejectedFor  = time.Minute
)

// New returns the guard of store, configured by c.
func New(store Store, c Config) *Guard {
	g := &Guard{
		store:    store,
		timeout:  c.Timeout,
		maxValue: c.MaxValue,
		observe:  c.Observe,
	}
	if g.timeout == 0 {
		g.timeout = DefaultTimeout
	}
	if g.maxValue == 0 {
		g.maxValue = DefaultMaxValue
	}
	g.inflight = semaphore.NewWeighted(int64(g.maxValue) * inflightValues)
	writes, bytes := c.Writes, c.WriteBytes
	if writes == 0 {
		writes = DefaultWrites
	}
	if bytes == 0 {
		bytes = max(DefaultWriteBytes, int64(g.maxValue))
	}
	g.budget = newWriteBudget(writes, bytes)
	g.admitAfter = c.AdmitAfter
	if g.admitAfter == 0 {
		g.admitAfter = DefaultAdmitAfter
	}
	g.rejected = otter.Must(&otter.Options[string, struct{}]{
		MaximumSize:      rejectedKeys,
		ExpiryCalculator: otter.ExpiryWriting[string, struct{}](rejectedFor),
	})
	g.missed = NewRecentKeys(missedBytes, missedFor)
	g.asked = NewRecentKeys(askedBytes, askedFor)
	g.breaker.report, g.breaker.cooldown = g.report, breakerCooldown
	logf := c.Logf
	if logf == nil {
		logf = log.Printf
	}
	g.errLog = &errorLog{logf: logf}
	g.refreshEvery = DefaultRefreshEvery
	return g
}

// MaxValue returns the size limit: no longer value is written or read.
func (g *Guard) MaxValue() int { return g.maxValue }

// AdmitAfter returns how often a value is served before it is written
// unasked ([Candidate.Served]).
func (g *Guard) AdmitAfter() int { return g.admitAfter }

// RefreshEvery returns how often, at most, a caller keeps the key of a
// value in use fresh ([Guard.Refresh]).
func (g *Guard) RefreshEvery() time.Duration { return g.refreshEvery }

// Blocked reports whether the breaker is open and no probe is due: a
// cheap check before a call is prepared.
func (g *Guard) Blocked() bool { return g.breaker.blocked() }

// Wait waits until the background calls (of [Guard.SetAsync] and
// [Guard.Refresh]) started so far have returned.
func (g *Guard) Wait() { g.writes.Wait() }

// SetBreakerCooldown sets how long the breaker stays open before it lets a
// probe through (breakerCooldown by default), for tests.
func (g *Guard) SetBreakerCooldown(d time.Duration) { g.breaker.setCooldown(d) }

// SetLogf replaces the logger of failures, for tests; call it before any
// call is made.
func (g *Guard) SetLogf(logf func(format string, args ...any)) { g.errLog.logf = logf }

// SetRefreshEvery sets how often, at most, a caller keeps a key in use
// fresh, for tests; call it before any call is made.
func (g *Guard) SetRefreshEvery(d time.Duration) { g.refreshEvery = d }

// Refresh keeps key fresh in the store in the background: it reads the
// key with a limit of 0, which transfers no value and, in an LRU store
// such as Redis, marks it used. When the store is a Sizer, which tells a
// key that holds a value from one that holds none, gone is called if key
// holds none. It reports whether the call was started: not while the
// breaker is open or refreshes calls are in flight.
func (g *Guard) Refresh(key string, gone func()) bool {
	if g.breaker.blocked() {
		return false
	}
	if g.refreshing.Add(1) > refreshes {
		g.refreshing.Add(-1)
		return false
	}
	g.writes.Add(1)
	go func() {
		defer g.writes.Done()
		defer g.refreshing.Add(-1)
		if !g.breaker.allow() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		defer cancel()
		t0 := time.Now()
		found, told := true, false
		var err error
		if sizer, ok := g.store.(Sizer); ok {
			_, _, found, err = sizer.GetOrSize(ctx, key, 0)
			told = true
		} else {
			_, _, err = g.store.Get(ctx, key, 0)
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			g.fail("refresh", key, err, time.Since(t0))
			return
		}
		g.breaker.success()
		if told && !found {
			g.report(Miss, 0, 0, time.Since(t0))
			gone()
			return
		}
		g.report(Refreshed, 0, 0, time.Since(t0))
	}()
	return true
}

// report sends an Info to the observer, if any.
func (g *Guard) report(r Result, in, out int64, elapsed time.Duration) {
	if g.observe != nil {
		g.observe(Info{Result: r, Read: in, Written: out, Elapsed: elapsed})
	}
}

// Verdict is what a [Use] function found of a value.
type Verdict uint8

const (
	// Bad: the value alone is wrong, whoever reads it (its framing, its
	// hash): it is refused and its key not asked again for a while.
	Bad Verdict = iota
	// Taken: the value passed and was used.
	Taken
	// NotHere: the value is not for this caller (a pattern not its own, a
	// length over its own limit), though it may be for another: it is
	// dropped and nothing is noted of its key.
	NotHere
)

// Use checks and takes a value read from the store (see [Guard.Get]).
type Use func(value []byte) (any, Verdict)

// flight is the result of one fetch, shared by those that waited for it:
// v is what use returned, ok whether it took a value.
type flight struct {
	v  any
	ok bool
}

// Get fetches the value under key, of at most limit bytes (lowered to the
// size limit), and passes it to use, which checks it (against the hash
// that names it, and whatever else it claims) and keeps it where it is
// counted (a local store), returning what the caller needs and [Taken],
// or the verdict that drops it. One fetch of a key is in flight at once:
// the callers asking meanwhile wait for it and share its result, which is
// why use runs in the fetch and not in the caller. A caller waits at most
// the timeout, or until ctx ends; the fetch goes on, bounded by the
// timeout, without it.
//
// Get reports false, with no call made, while the breaker is open, the
// key's value failed verification lately, or the reads or values in
// flight fill their places or budget. It is for the keys the replica asks
// for itself (its upgrades, its polls), which come at the pace of its own
// work; Lookup with named set is for those a client named. Every caller
// of Get for key checks its value alike: callers that check it
// differently use Lookup, each with its own via.
func (g *Guard) Get(ctx context.Context, key string, limit int, use Use) (any, bool) {
	return g.Lookup(ctx, key, "", limit, false, use)
}

// Lookup is Get for a caller that reads key through via, and, when named
// is set, for a key a client's request named (a dictionary's hash in
// Available-Dictionary), which any client may make up: a key missed
// lately is not asked again, and a key not asked for lately takes only
// the first places of the reads in flight (see startLookup). via names
// the checks use makes and limit, the same for every caller of that via
// (the store of remembered dictionaries, a learned route). Callers of one
// key through different vias share no flight and no misses, only the keys
// whose value was bad ([Bad]) whoever read it.
func (g *Guard) Lookup(ctx context.Context, key, via string, limit int, named bool, use Use) (any, bool) {
	limit = min(limit, g.maxValue)
	if limit <= 0 {
		return nil, false
	}
	read := via + "\x00" + key // the flight, the misses and the asks
	if g.known(key, read, named) || g.breaker.blocked() {
		g.report(Skipped, 0, 0, 0)
		return nil, false
	}
	deadline := time.NewTimer(g.timeout)
	defer deadline.Stop()
	ch := g.flights.DoChan(read, func() (any, error) {
		return g.fetch(key, read, limit, named, use), nil
	})
	select {
	case r := <-ch:
		f := r.Val.(flight)
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
// through a via, see Lookup) lately: then it is not asked for.
func (g *Guard) known(key, read string, named bool) bool {
	if _, bad := g.rejected.GetIfPresent(key); bad {
		return true
	}
	return named && g.missed.Has(read)
}

// startLookup takes a place among the reads in flight for key, or reports
// false when there is none for it: the first firstLookups places are open
// to any key, the others to the replica's own keys and to a named key
// noted as asked for, which is what a named key whose read startLookup
// refused becomes. The caller of a true result gives its place back with
// endLookup.
func (g *Guard) startLookup(key string, named bool) bool {
	n := g.lookups.Add(1)
	if n <= firstLookups {
		return true
	}
	if n <= lookups {
		if !named || g.asked.Forget(key) {
			return true
		}
	}
	g.lookups.Add(-1)
	if named {
		g.asked.Note(key)
	}
	return false
}

// endLookup gives back a place startLookup gave.
func (g *Guard) endLookup() { g.lookups.Add(-1) }

// fetch is one flight of Lookup: read names it (key through its via).
func (g *Guard) fetch(key, read string, limit int, named bool, use Use) flight {
	if !g.startLookup(read, named) {
		g.report(Skipped, 0, 0, 0)
		return flight{}
	}
	defer g.endLookup()
	if !g.breaker.allow() {
		g.report(Skipped, 0, 0, 0)
		return flight{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	t0 := time.Now()
	r := g.read(ctx, key, limit)
	defer g.inflight.Release(r.held)
	elapsed := time.Since(t0)
	err := r.err
	switch {
	case r.skipped:
		g.report(Skipped, 0, 0, elapsed)
		return flight{}
	case err == nil && ctx.Err() != nil:
		err = ctx.Err() // an answer after the deadline is not one
	case err == nil && len(r.value) > g.maxValue:
		g.refuse(key, len(r.value), elapsed)
		return flight{}
	case err == nil && (len(r.value) > limit || r.over):
		// Within the size limit, over this caller's: perhaps another's.
		g.breaker.success()
		g.report(Miss, 0, 0, elapsed)
		return flight{}
	}
	if err != nil {
		g.fail("get", key, err, elapsed)
		return flight{}
	}
	if !r.found {
		g.breaker.success()
		if named {
			// A plain store tells no value from one over limit: the
			// miss is noted for this read only, not for another via's.
			g.missed.Note(read)
		}
		g.report(Miss, 0, 0, elapsed)
		return flight{}
	}
	v, verdict := use(r.value)
	switch verdict {
	case Bad:
		g.refuse(key, len(r.value), elapsed)
		return flight{}
	case NotHere:
		g.breaker.success()
		g.report(Miss, int64(len(r.value)), 0, elapsed)
		return flight{}
	}
	g.breaker.success()
	g.report(Hit, int64(len(r.value)), 0, elapsed)
	return flight{v: v, ok: true}
}

// refuse accounts for a value of n bytes under key that failed
// verification: the store answered, so the breaker counts a success; the
// key is not asked again for rejectedFor.
func (g *Guard) refuse(key string, n int, elapsed time.Duration) {
	g.rejected.Set(key, struct{}{})
	g.breaker.success()
	g.report(Rejected, int64(n), 0, elapsed)
}

// readResult is what read found.
type readResult struct {
	value []byte
	found bool // a value within the limit; false for one over it
	// over: a Sizer told of a value over the limit but within the size
	// limit, not brought.
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
// a plain Store; for a Sizer, probe bytes (or limit, if less) for a first
// call that brings a short value whole and tells a longer one's length,
// then that length for a second call that brings it. A key that holds
// nothing holds at most probe.
func (g *Guard) read(ctx context.Context, key string, limit int) (r readResult) {
	sizer, sized := g.store.(Sizer)
	first := limit
	if sized {
		first = min(limit, probe)
	}
	if !g.inflight.TryAcquire(int64(first)) {
		g.breaker.cancel()
		return readResult{skipped: true}
	}
	r.held = int64(first)
	if !sized {
		r.value, r.found, r.err = g.store.Get(ctx, key, limit)
		return r
	}
	value, size, found, err := sizer.GetOrSize(ctx, key, first)
	if err == nil && found && size > first && size <= limit {
		// Longer than the first call could bring: hold its length.
		if !g.inflight.TryAcquire(int64(size - first)) {
			g.breaker.success() // the store answered
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
	r.over = err == nil && found && !r.found && size <= g.maxValue
	return r
}

// SetAsync writes value under key for lifetime in the background, unless
// it is over the size limit, the breaker is open, the values in flight
// leave no room for it or the write budget has none: a write only saves
// another replica work, so none waits for it. It reports whether the
// write was started; failed, if not nil, is called if the store then does
// not take it. value must not be modified afterwards.
func (g *Guard) SetAsync(key string, value []byte, lifetime time.Duration, failed func()) bool {
	if len(value) > g.maxValue {
		return false
	}
	if g.breaker.blocked() || !g.inflight.TryAcquire(int64(len(value))) {
		g.report(Skipped, 0, 0, 0)
		return false
	}
	if !g.Admit(len(value)) {
		g.inflight.Release(int64(len(value)))
		return false
	}
	g.writes.Add(1)
	go func() {
		defer g.writes.Done()
		defer g.inflight.Release(int64(len(value)))
		if !g.Set(context.Background(), key, value, lifetime) && failed != nil {
			failed()
		}
	}()
	return true
}

// Set writes value under key for lifetime within the timeout (or ctx),
// unless it is over the size limit or the breaker is open; it reports
// whether the store took it. The caller has taken the write from the
// budget ([Guard.Admit]).
func (g *Guard) Set(ctx context.Context, key string, value []byte, lifetime time.Duration) bool {
	ctx, cancel, ok := g.writeCall(ctx, len(value))
	if !ok {
		return false
	}
	defer cancel()
	t0 := time.Now()
	err := g.store.Set(ctx, key, value, lifetime)
	if !g.wrote(ctx, "set", key, err, len(value), time.Since(t0)) {
		return false
	}
	g.rejected.Invalidate(key) // the store holds a good value now
	g.missed.Forget(key)
	return true
}

// ClaimOutcome is what a claim found ([Guard.Claim]).
type ClaimOutcome uint8

const (
	// Won: this replica does the work and writes the result.
	Won ClaimOutcome = iota
	// Lost: another replica holds the claim; this one waits for its
	// result and looks again later.
	Lost
	// Unknown: the store did not answer; this replica does the work
	// for itself, as it would without a store, and writes the result if
	// the store takes it.
	Unknown
)

// Claim stores value under key for lifetime if key holds none, within the
// timeout: [Won] when this replica won the claim, [Lost] when
// another holds it, and [Unknown] when the store could not answer,
// the breaker is open, value is over the size limit or the write budget
// has no room for it: then the caller does the work itself (or not at
// all), never waits for another replica. A claim is a write, taken from
// the budget.
func (g *Guard) Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) ClaimOutcome {
	if len(value) > g.maxValue {
		return Unknown
	}
	if g.breaker.blocked() {
		g.report(Skipped, 0, 0, 0)
		return Unknown
	}
	if !g.Admit(len(value)) {
		return Unknown
	}
	ctx, cancel, ok := g.writeCall(ctx, len(value))
	if !ok {
		return Unknown
	}
	defer cancel()
	t0 := time.Now()
	won, err := g.store.Claim(ctx, key, value, lifetime)
	if err == nil && !won && ctx.Err() == nil {
		g.breaker.success()
		g.report(ClaimLost, 0, 0, time.Since(t0))
		return Lost
	}
	if !g.wrote(ctx, "claim", key, err, len(value), time.Since(t0)) {
		return Unknown
	}
	return Won
}

// writeCall gives a write of n bytes its deadline: the timeout, whatever
// ctx's own, since a write may outlive the request that asked for it. It
// reports false, with nothing to cancel, when n is over the size limit or
// the breaker is open (a skip).
func (g *Guard) writeCall(ctx context.Context, n int) (context.Context, context.CancelFunc, bool) {
	if n > g.maxValue {
		return nil, nil, false
	}
	if !g.breaker.allow() {
		g.report(Skipped, 0, 0, 0)
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	return ctx, cancel, true
}

// wrote accounts for a write (op on key) that returned err after elapsed,
// and reports whether it succeeded within its deadline.
func (g *Guard) wrote(ctx context.Context, op, key string, err error, n int, elapsed time.Duration) bool {
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		g.fail(op, key, err, elapsed)
		return false
	}
	g.breaker.success()
	g.report(Written, 0, int64(n), elapsed)
	return true
}
