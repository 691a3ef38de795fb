package squeeze

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/maypok86/otter/v2"

	"github.com/squeezehttp/squeeze/internal/storeguard"
	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the cache of encoded representations: what it keeps, how
// a response finds its entry, and the background upgrades. The response
// writer calls it at three points only: sendWhole (a body that ended in the
// buffer), the start of an encoded stream in commit, and finish.
//
// Choices (the measurements behind them are in docs/internals.md#the-cache):
//
//   - Eviction is github.com/maypok86/otter/v2: weight-bounded W-TinyLFU,
//     which keeps hot entries through scans of one-hit wonders, where plain
//     LRU lets a scan flush them, and a hit allocates nothing in it
//     (TestCacheHitRatio, TestCacheHitAllocations). Its maintenance runs on the
//     calling goroutine (a synchronous Executor), so the cache starts no
//     goroutine but its own upgrade worker.
//   - Bytes <= maxBytes holds at all times, not only after otter's
//     maintenance: every store first reserves its weight against maxBytes
//     in Cache.bytes, and otter is bounded at maxBytes less one entry's
//     limit, which leaves the headroom for work in flight. A store that
//     finds no room is skipped, never admitted over the bound.
//   - Work in flight is counted in the same budget, so that no number of
//     requests can make the cache hold more than maxBytes: a stream being
//     stored claims room as its copy grows, and is dropped, not stored,
//     when there is none; an upgrade claims an estimate of its encoder's
//     memory and room for its output before it starts, and is skipped
//     without. One upgrade runs at a time, and the worker drops its
//     encoder when no upgrade waits: best-level encoders hold tens of
//     megabytes.
//   - A stream's followers wait for its leader at most streamPatience in
//     all: the leader goes at its client's pace, which may be any.
//   - Content keys are hash/maphash with a per-cache random seed, and a hit
//     compares the plain bytes, which a content entry keeps beside its
//     encoding. A hit must never serve another body's bytes: a collision
//     would send one client's page to another, or let a client whose
//     reflected input collides with a popular page poison it. maphash is
//     made to spread keys, and its documentation disclaims collision
//     resistance: an attacker cannot see the seed, but nothing rules out
//     seed-independent collisions, and 64 bits collide by chance at 2^32
//     distinct bodies. So the hash only finds the candidate and the
//     comparison decides; a collision is a miss that stores nothing. The
//     alternative, SHA-256, needs no plain copy but costs several times
//     maphash, and a hit much of its lead over a fresh encode
//     (BenchmarkContentHash); the plain copy costs memory instead, counted
//     in Bytes, and only for bodies within the buffer. It also spares
//     upgrades a decode.
//   - A body that ends within the buffer is found by content whatever
//     its ETag: real handlers send one tag over per-user, per-language or
//     per-tenant bytes, and were correct before a cache stood in front of
//     them. A stream cannot be compared before it is sent, so it is found
//     by its strong ETag only when the Middleware was told to trust them
//     (CacheTrustedETags), and then only under Host and RequestURI, with
//     no Vary but squeeze's own and no Authorization unless the response
//     is shareable (validatorKey).
//   - Identical concurrent misses are joined by a small in-flight map, not
//     golang.org/x/sync/singleflight: the work to share is not a function
//     the cache can call but the leader's whole response, fed by its
//     handler's writes over time, and the followers must go on with their
//     own handler when the leader stores nothing. It matters most for the
//     validator path, where many requests for one large ETag arrive at
//     once; for a body in hand the wait is one short encode.

// Cache keeps encoded responses so that each distinct body is compressed
// once, and re-encodes the entries that are hit often at the coding's best
// level in the background. Give it to [New] with [WithCache]; one Cache may
// be shared by several Middlewares and is safe for concurrent use.
// [Cache.Close] stops its upgrade worker.
//
// What is cached, and why it is safe: a body that ends within the buffer
// (see [WithBufferSize]) is found by a seeded hash of its bytes with its
// length, coding, level and dictionary, and a hit compares the bytes, so a
// response only ever carries the encoding of the bytes its own handler
// wrote, whatever its ETag, Vary, cookies or mount point say. A whole delta
// that lost to the coding without its dictionary leaves that coding's
// encoding, and under the delta's key the verdict that it lost, so the same
// request is not encoded twice again. Streams are not cached, unless
// [CacheTrustedETags] says that the handlers' strong ETags identify their
// bytes. Never stored: HEAD responses, statuses other than 200, responses
// with Set-Cookie, Cache-Control no-store or private, Vary: * or trailers,
// flushed streams, responses cut short (a panic, a write error, a length
// mismatch), and entries over an eighth of the cache.
type Cache struct {
	*cacheCore
}

// cacheCore is the Cache proper. The upgrade worker holds it, not the
// Cache, so that a Cache nobody holds any more becomes unreachable and its
// cleanup stops it.
type cacheCore struct {
	store *otter.Cache[cacheKey, *cacheEntry]
	// max is maxBytes; entryMax the largest weight one entry may have.
	max, entryMax int64

	// bytes is the weight of the stored entries plus what work in flight
	// claimed: stores about to be made, fills, and upgrades with their
	// encoders. It never exceeds max.
	bytes                                    atomic.Int64
	entries                                  atomic.Int64
	hits, misses, stores, evictions          atomic.Int64
	upgrades, upgradesDropped, storesSkipped atomic.Int64
	upgradesShared                           atomic.Int64

	// seed keys the content hash; see the top of this file.
	seed maphash.Seed

	mu      sync.Mutex
	flights map[cacheKey]*flight
	// patience is the longest a stream's follower waits for its leader:
	// streamPatience, but for tests.
	patience time.Duration

	jobs chan upgradeJob
	// pending counts the upgrades queued or under way.
	pending   atomic.Int64
	stop      chan struct{}
	closeOnce sync.Once
	workers   sync.WaitGroup
}

// CacheStats are a [Cache]'s counters, as [Cache.Stats] returns them.
type CacheStats struct {
	// Hits and Misses count the responses that looked for an entry: a hit
	// was served from the cache, a miss was encoded.
	Hits, Misses int64
	// Stores counts the entries added; StoresSkipped the misses that were
	// not stored because the entry exceeded the per-entry limit (an eighth
	// of MaxBytes) or the cache had no room left for stores in flight.
	Stores, StoresSkipped int64
	// Evictions counts the entries removed to make room.
	Evictions int64
	// Upgrades counts the entries replaced by a smaller encoding at the
	// coding's best level; UpgradesDropped the upgrades not attempted (the
	// queue full, the cache closed, or no room in the budget).
	Upgrades, UpgradesDropped int64
	// UpgradesShared counts the upgrades taken, verified, from
	// [WithSharedStore]; they are counted in Upgrades too.
	UpgradesShared int64
	// Entries and Bytes are what the cache holds now, Bytes counting work
	// in flight and bookkeeping too; it never exceeds MaxBytes.
	Entries, Bytes, MaxBytes int64
}

// Tuning. An entry is upgraded once it has been hit upgradeAfter times; at
// most upgradeQueue upgrades wait, and more are dropped.
const (
	entryFraction = 8
	upgradeAfter  = 3
	upgradeQueue  = 64
	// entryOverhead estimates the bookkeeping of an entry beyond its
	// bytes and key strings: the key and entry structs and otter's node.
	entryOverhead = 256
	// upgradeChunk is how much an upgrade encodes between checks for
	// Close.
	upgradeChunk = 64 << 10
)

// NewCache returns a Cache holding at most maxBytes of entries: encoded
// bodies, the plain bytes of those found by content, and their
// bookkeeping (see [CacheStats]), together with what the work in flight
// holds: the copies of streams being stored and the encoders of upgrades.
// maxBytes must be positive; one entry may take at most an eighth of it. It
// starts one upgrade worker, which [Cache.Close] stops.
func NewCache(maxBytes int64) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("squeeze: NewCache: maxBytes must be positive, got %d", maxBytes)
	}
	c := &cacheCore{
		max:      maxBytes,
		entryMax: min(maxBytes/entryFraction, math.MaxUint32), // otter weighs in uint32
		flights:  map[cacheKey]*flight{},
		patience: streamPatience,
		seed:     maphash.MakeSeed(),
		jobs:     make(chan upgradeJob, upgradeQueue),
		stop:     make(chan struct{}),
	}
	var err error
	c.store, err = otter.New(&otter.Options[cacheKey, *cacheEntry]{
		// The headroom above otter's bound is for stores in flight: see
		// reserve.
		MaximumWeight: uint64(max(1, maxBytes-c.entryMax)),
		Weigher:       func(_ cacheKey, e *cacheEntry) uint32 { return uint32(e.weight) },
		// Only atomic counters: this runs under otter's bucket lock.
		OnAtomicDeletion: func(ev otter.DeletionEvent[cacheKey, *cacheEntry]) {
			c.bytes.Add(-ev.Value.weight)
			if ev.Cause != otter.CauseReplacement {
				c.entries.Add(-1)
			}
			if ev.WasEvicted() {
				c.evictions.Add(1)
			}
		},
		// Maintenance on the calling goroutine: no goroutine to leak, and
		// eviction happens within the store that caused it.
		Executor: func(fn func()) { fn() },
	})
	if err != nil {
		return nil, fmt.Errorf("squeeze: NewCache(%d): %w", maxBytes, err)
	}
	// One worker, whatever the number of cores: each upgrade holds an
	// encoder of up to tens of megabytes, and two workers in a small
	// budget would only take the room each other needs.
	c.workers.Add(1)
	go c.work()
	cache := &Cache{c}
	runtime.AddCleanup(cache, func(c *cacheCore) { c.close() }, c)
	return cache, nil
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	return CacheStats{
		Hits:            c.hits.Load(),
		Misses:          c.misses.Load(),
		Stores:          c.stores.Load(),
		StoresSkipped:   c.storesSkipped.Load(),
		Evictions:       c.evictions.Load(),
		Upgrades:        c.upgrades.Load(),
		UpgradesDropped: c.upgradesDropped.Load(),
		UpgradesShared:  c.upgradesShared.Load(),
		Entries:         c.entries.Load(),
		Bytes:           c.bytes.Load(),
		MaxBytes:        c.max,
	}
}

// Close stops the upgrade worker and waits for it: an upgrade under way
// stops at its next 64 KiB. The cache goes on serving and storing entries,
// without upgrades. Close always returns nil; it may be called more than
// once.
func (c *Cache) Close() error {
	c.close()
	return nil
}

func (c *cacheCore) close() {
	c.closeOnce.Do(func() { close(c.stop) })
	c.workers.Wait()
}

// WithCache has the Middleware serve encoded bodies from c, and store the
// ones it encodes there (see [Cache] for which), as opts say. Without it
// nothing is cached.
func WithCache(c *Cache, opts ...CacheOption) Option {
	return func(cfg *config) error {
		if c == nil || c.cacheCore == nil {
			return errors.New("squeeze: WithCache(nil): needs a *Cache from NewCache")
		}
		cfg.cache = c
		for i, opt := range opts {
			if opt == nil {
				return fmt.Errorf("squeeze: WithCache: option %d of %d is nil", i+1, len(opts))
			}
			opt(cfg)
		}
		return nil
	}
}

// CacheOption tunes how [WithCache] uses its Cache.
type CacheOption func(*config)

// CacheTrustedETags has the Middleware serve a stream (a body longer than
// the buffer, see [WithBufferSize]) from its [Cache] by the response's
// strong ETag, and store such streams, as a shared cache would. A hit
// sends the stored encoding without encoding anything, and reads and
// discards the handler's body.
//
// Risk: squeeze cannot compare a stream with what it stored, so this
// relies on every handler changing a strong ETag whenever its bytes change
// (RFC 9110 §8.8.3): a tag that names a version of data rendered per user
// sends one client's stream to another. squeeze still keys an entry by
// Host and request-target, and never stores a stream that varies on other
// fields or answers Authorization unless public (RFC 9111 §3.5). Without
// this option only bodies that end within the buffer are cached.
func CacheTrustedETags() CacheOption {
	return func(cfg *config) { cfg.trustETags = true }
}

// cacheKey finds an entry: by content (uri empty) or by validator.
type cacheKey struct {
	// sum is the maphash of the plain body, length its length.
	sum    uint64
	length int
	// coding and level are those of the Middleware's offer.
	coding string
	level  int
	// dictionary is the SHA-256 of the dictionary a dcz or dcb encoding
	// was made against, so that bodies encoded against different
	// dictionaries never meet; "" for the other codings.
	dictionary string
	// host, uri and etag are the validator key: the request's Host and
	// RequestURI, and the response's strong ETag; site is the request's
	// Sec-Fetch-Site when the response varies on it (cacheFields.site).
	host, uri, etag, site string
	// file is the SHA-256 of a file's plain bytes in the key of a file
	// server's representation (fileReps), and empty in a response's: the
	// two keyspaces never meet.
	file string
}

// cacheEntry is immutable once stored: an upgrade stores a new entry.
type cacheEntry struct {
	body []byte // the encoded bytes
	// plain is the plain body of an entry found by content, which a hit
	// compares; nil for one found by validator.
	plain []byte
	// level is the level body was encoded at.
	level  int
	weight int64
	// final marks a file server's representation that no later encoding
	// is to improve (see fileReps).
	final bool
	hits  atomic.Int32
	// public is set once the body went out in a public response
	// (publicResponse): only then is its upgrade claimed in, or written
	// to, the fleet's store (shared_encodings.go).
	public atomic.Bool
	// lost is set, under a delta's key only and with body nil, when the
	// delta of plain was lost bytes long (or longer) and the coding
	// without the dictionary beat it: a verdict on the key's coding and
	// dictionary, not an encoding, which sends lookups to that coding's
	// own key (see storeBeaten). It is never a hit by itself nor upgraded.
	lost int
}

func newEntry(k *cacheKey, body, plain []byte, level int) *cacheEntry {
	w := int64(len(body) + len(plain) + entryOverhead + len(k.coding) + len(k.dictionary) +
		len(k.host) + len(k.uri) + len(k.etag) + len(k.site) + len(k.file))
	return &cacheEntry{body: body, plain: plain, level: level, weight: w}
}

// streamPatience is the longest a request waits for an identical stream
// being stored by another before it encodes its own.
const streamPatience = 2 * time.Second

// flight is a miss being encoded, which identical misses wait for.
type flight struct {
	done chan struct{}
	// stored is set, before done closes, when the flight left an entry
	// under its key. Followers of a flight that left none (no gain, an
	// entry too large, no room) encode for themselves at once rather than
	// look again: looking again, one of them would lead the same miss and
	// the rest wait for it, so that identical requests for a body that
	// does not compress would encode one after another.
	stored bool
	// stalled is set when a follower waited the patience out: the
	// followers that come after encode for themselves at once, so that a
	// leader that stalls for good delays only the first of its URL's
	// requests, not every one for as long as it stalls.
	stalled atomic.Bool
}

// lookup returns the entry for k, counting a hit, or, after counting a
// miss, nil and whether the caller leads the miss: then it must call end.
// An entry that holds a delta's lost verdict (cacheEntry.lost) is returned
// uncounted: the caller counts the lookup it makes next.
// A miss identical to one in flight waits for it (or for the request's
// end), and then looks again if the flight left an entry, or encodes for
// itself and stores nothing if it left none. With patience above zero it
// waits at most that long in all, then encodes for itself and stores
// nothing, and so do at once all later followers of that flight. A whole body's leader encodes in memory at once, so its
// followers wait; a stream's leader goes at its client's pace, and one
// slow reader, however steadily it reads, must not hold back every other
// client of the URL. plain is the body looked up by content, which the
// entry's must equal; src is what an upgrade of the entry needs beyond it
// (the dictionary of a delta, the fleet's store).
func (c *cacheCore) lookup(r *http.Request, k *cacheKey, plain []byte, best int, patience time.Duration, src upgradeSource) (e *cacheEntry, leader bool) {
	var deadline time.Time // of the wait in all, set when it begins
	for {
		if e, ok := c.store.GetIfPresent(*k); ok {
			if plain != nil && !bytes.Equal(e.plain, plain) {
				c.misses.Add(1) // a hash collision: the key is taken
				return nil, false
			}
			if e.lost > 0 {
				return e, false // counted by the caller, which looks further
			}
			c.hits.Add(1)
			if e.hits.Add(1) == upgradeAfter && e.level < best {
				c.enqueue(newUpgradeJob(k, e, best, src))
			}
			return e, false
		}
		c.mu.Lock()
		f := c.flights[*k]
		if f == nil {
			// The flight for k may have ended since GetIfPresent above:
			// end stores before it removes the flight under mu, so its
			// entry is visible now. Without this second look the caller
			// would lead, and encode, a response stored a moment ago.
			if _, ok := c.store.GetIfPresent(*k); ok {
				c.mu.Unlock()
				continue
			}
			c.flights[*k] = &flight{done: make(chan struct{})}
			c.mu.Unlock()
			c.misses.Add(1)
			return nil, true
		}
		c.mu.Unlock()
		if f.stalled.Load() {
			c.misses.Add(1)
			return nil, false
		}
		if patience > 0 && deadline.IsZero() {
			deadline = time.Now().Add(patience)
		}
		if !c.wait(r, f, deadline) || !f.stored {
			c.misses.Add(1)
			return nil, false
		}
	}
}

// wait waits for flight f to end, and reports whether it did: not when the
// request ends first, nor, with a deadline, when the deadline passes.
func (c *cacheCore) wait(r *http.Request, f *flight, deadline time.Time) bool {
	if deadline.IsZero() {
		select {
		case <-f.done:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-f.done:
		return true
	case <-r.Context().Done():
		return false
	case <-t.C:
		f.stalled.Store(true)
		return false // the leader is slow: encode without it
	}
}

// end ends the flight for k that lookup made the caller lead, storing body
// and plain (which the cache then owns) unless body is nil; public says
// the body went out in a public response.
func (c *cacheCore) end(k *cacheKey, body, plain []byte, level int, public bool) {
	c.endHeld(k, body, plain, level, 0, public)
}

// endHeld is end for a caller that holds held bytes of the budget, claimed
// for body as it grew: the entry's weight takes them over, and what it does
// not need, or all of them if nothing is stored, goes back.
func (c *cacheCore) endHeld(k *cacheKey, body, plain []byte, level int, held int64, public bool) {
	var e *cacheEntry
	if body != nil {
		e = newEntry(k, body, plain, level)
		e.public.Store(public)
	}
	c.endWith(k, e, held)
}

// endWith is endHeld with the entry to store, or nil to store none.
func (c *cacheCore) endWith(k *cacheKey, e *cacheEntry, held int64) {
	stored := false
	if e != nil {
		stored = c.add(k, e, held)
	} else {
		c.bytes.Add(-held)
	}
	c.mu.Lock()
	f := c.flights[*k]
	delete(c.flights, *k)
	c.mu.Unlock()
	f.stored = stored
	close(f.done)
}

// claim takes w bytes of the budget for work or a store about to be made,
// or reports that there is no room for them. Whoever claims gives back:
// c.bytes.Add(-w).
func (c *cacheCore) claim(w int64) bool {
	for {
		cur := c.bytes.Load()
		if cur+w > c.max {
			return false
		}
		if c.bytes.CompareAndSwap(cur, cur+w) {
			return true
		}
	}
}

// reserve claims w bytes for a store about to be made, or reports, counting
// a store skipped, that w is over the entry limit or there is no room.
func (c *cacheCore) reserve(w int64) bool {
	if w > c.entryMax || !c.claim(w) {
		c.storesSkipped.Add(1)
		return false
	}
	return true
}

// add stores e under k unless an entry is there already, and reports
// whether k has an entry now. The caller holds held bytes of the budget,
// which e's weight takes over: add claims the difference or gives back the
// excess, and gives all back if e is not stored. The deletion handler
// gives the weight back when otter removes the entry.
func (c *cacheCore) add(k *cacheKey, e *cacheEntry, held int64) bool {
	if e.weight > c.entryMax {
		c.storesSkipped.Add(1)
		c.bytes.Add(-held)
		return false
	}
	if more := e.weight - held; more > 0 {
		if !c.reserve(more) {
			c.bytes.Add(-held)
			return false
		}
	} else {
		c.bytes.Add(more) // the excess goes back
	}
	if _, stored := c.store.SetIfAbsent(*k, e); !stored {
		c.bytes.Add(-e.weight)
		return true // another's entry is there
	}
	c.entries.Add(1)
	c.stores.Add(1)
	return true
}

// upgradeJob re-encodes entry, stored under key, at level best; dict is
// the dictionary of a delta, held weakly so that a job waiting in the queue
// keeps no dictionary its store has dropped (newUpgradeJob).
type upgradeJob struct {
	key   cacheKey
	entry *cacheEntry
	best  int
	dict  weak.Pointer[dictionary]
	// shared is the fleet's store of the Middleware that queued the job,
	// nil without one (shared_encodings.go).
	shared *storeguard.Guard
}

// enqueue queues j unless the queue is full or the cache closed.
func (c *cacheCore) enqueue(j upgradeJob) {
	select {
	case <-c.stop:
		c.upgradesDropped.Add(1)
		return
	default:
	}
	c.pending.Add(1)
	select {
	case c.jobs <- j:
	default:
		c.pending.Add(-1)
		c.upgradesDropped.Add(1)
	}
}

// work runs upgrades until Close. It keeps the encoder of its last job, and
// the budget claimed for it, only while more jobs wait: a best-level
// encoder holds tens of megabytes.
func (c *cacheCore) work() {
	defer c.workers.Done()
	var enc upgradeEncoder
	defer enc.release(c)
	for {
		select {
		case <-c.stop:
			return
		case j := <-c.jobs:
			c.upgrade(j, &enc)
			if len(c.jobs) == 0 {
				enc.release(c) // idle
			}
			c.pending.Add(-1)
		}
	}
}

// upgradeEncoder is the encoder an upgrade worker holds, with the bytes of
// the budget claimed for it.
type upgradeEncoder struct {
	enc    writers.Encoder
	coding string
	level  int
	dict   [32]byte // the SHA-256 of a delta's dictionary
	held   int64
}

// get returns an encoder for coding at level, against d for dcz and dcb,
// claiming its estimated memory unless it is the one held; nil if there is
// no room for it.
func (u *upgradeEncoder) get(c *cacheCore, coding string, level int, d *dictionary) writers.Encoder {
	var dict [32]byte
	if d != nil {
		dict = d.hash
	}
	if u.enc != nil && u.coding == coding && u.level == level && u.dict == dict {
		return u.enc
	}
	u.release(c)
	w := upgradeEncoderMemory(coding, level, d)
	if !c.claim(w) {
		return nil
	}
	enc, err := newUpgradeEncoder(coding, level, d)
	if err != nil {
		c.bytes.Add(-w)
		return nil
	}
	*u = upgradeEncoder{enc: enc, coding: coding, level: level, dict: dict, held: w}
	return enc
}

// release drops the encoder held and gives its budget back.
func (u *upgradeEncoder) release(c *cacheCore) {
	c.bytes.Add(-u.held)
	*u = upgradeEncoder{}
}

// upgrade re-encodes j's entry at its best level, or the best level whose
// encoder the budget has room for, and replaces the entry with the result
// if it is smaller and the entry is still the one stored. Everything it
// holds is claimed against the budget first: the encoder, a decoder of an
// entry kept without its plain bytes, and room for the new encoding. It
// counts an upgrade dropped when there is no room.
func (c *cacheCore) upgrade(j upgradeJob, u *upgradeEncoder) {
	if e, ok := c.store.GetEntryQuietly(j.key); !ok || e.Value != j.entry || len(j.entry.body) < 2 {
		return // gone: its upgrade could not be kept
	}
	d := j.dict.Value()
	if d == nil && j.key.dictionary != "" {
		c.upgradesDropped.Add(1) // its dictionary is gone
		return
	}
	fleet, done := c.upgradeFromFleet(&j, d)
	if done {
		return
	}
	var enc writers.Encoder
	level := 0
	for _, l := range upgradeLevels(j.key.coding, j.best) {
		if l <= j.entry.level {
			break
		}
		if enc = u.get(c, j.key.coding, l, d); enc != nil {
			level = l
			break
		}
	}
	if enc == nil {
		c.upgradesDropped.Add(1)
		return
	}
	// The work: the encoding (less than the entry's, or it is no gain),
	// its copy that the new entry keeps, the buffer the plain bytes go
	// through, and a decoder if the entry has no plain bytes.
	held := 2*int64(len(j.entry.body)) + upgradeChunk
	var src io.Reader = bytes.NewReader(j.entry.plain)
	if j.entry.plain == nil {
		held += upgradeDecoderMemory(j.key.coding, d, c.entryMax)
	}
	if !c.claim(held) {
		c.upgradesDropped.Add(1)
		return
	}
	defer func() { c.bytes.Add(-held) }()
	if j.entry.plain == nil {
		dec, done, err := newUpgradeDecoder(j.key.coding, j.entry.body, d)
		if err != nil {
			return
		}
		defer done()
		src = dec
	}
	out := cappedBuffer{b: make([]byte, 0, len(j.entry.body)-1)} // an encoding no smaller is of no use
	enc.Reset(&out)
	defer enc.Reset(io.Discard)
	if !c.encodeAll(enc, src) || enc.Close() != nil {
		return
	}
	body := bytes.Clone(out.b)
	e := newEntry(&j.key, body, j.entry.plain, level)
	e.public.Store(j.entry.public.Load())
	// The new entry's weight takes over what the work held (the old
	// entry's goes back when it is replaced), and claims the rest: the
	// plain bytes both entries keep are counted twice until then.
	take := min(e.weight, held)
	if e.weight > take && !c.claim(e.weight-take) {
		c.upgradesDropped.Add(1)
		return
	}
	held -= take
	if !c.replace(&j, e) {
		return
	}
	c.upgrades.Add(1)
	if fleet != nil && level == j.best {
		fleet.publish(body)
	}
}

// replace puts e, the upgrade of job j, in place of j's entry if the store
// still holds that entry, and reports whether it did; if not, e's weight,
// which the caller claimed, goes back.
func (c *cacheCore) replace(j *upgradeJob, e *cacheEntry) bool {
	replaced := false
	c.store.ComputeIfPresent(j.key, func(old *cacheEntry) (*cacheEntry, otter.ComputeOp) {
		if old != j.entry {
			return old, otter.CancelOp
		}
		replaced = true
		return e, otter.WriteOp
	})
	if !replaced {
		c.bytes.Add(-e.weight)
	}
	return replaced
}

// encodeAll writes what src yields to enc in chunks of upgradeChunk,
// stopping early at Close; it reports whether src ended and enc took all.
func (c *cacheCore) encodeAll(enc writers.Encoder, src io.Reader) bool {
	buf := make([]byte, upgradeChunk)
	for {
		select {
		case <-c.stop:
			return false
		default:
		}
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if _, werr := enc.Write(buf[:n]); werr != nil {
				return false // no gain
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// The response writer's side.

// fillChunk is the least a fill claims of the budget at a time.
const fillChunk = 64 << 10

// cacheFill is a miss being stored as it goes out: the stream's encoder
// writes through it to the client, and it keeps a copy. The copy grows
// within bytes claimed against the cache's budget as it goes; when the
// budget has no room, the fill stops keeping and leaves the flight.
type cacheFill struct {
	c   *cacheCore
	key cacheKey
	dst io.Writer
	buf []byte
	// held is what the fill claimed of the budget, at least cap(buf).
	held int64
	// level is the offer's level; leading is set while the fill still
	// leads its flight.
	level   int
	leading bool
}

func (f *cacheFill) Write(p []byte) (int, error) {
	n, err := f.dst.Write(p)
	if f.leading {
		if err != nil || !f.keep(p[:n]) {
			f.drop()
		}
	}
	return n, err
}

// keep appends p to the copy, claiming budget for it as the copy grows,
// and reports whether it could: not past the entry limit, nor when the
// budget has no room.
func (f *cacheFill) keep(p []byte) bool {
	need := int64(len(f.buf) + len(p))
	if need > f.c.entryMax {
		f.c.storesSkipped.Add(1)
		return false
	}
	if need > int64(cap(f.buf)) {
		size := min(max(need, 2*int64(cap(f.buf)), 4<<10), f.c.entryMax)
		if size > f.held {
			more := min(max(size-f.held, fillChunk), f.c.entryMax-f.held)
			if !f.c.reserve(more) {
				return false
			}
			f.held += more
		}
		b := make([]byte, len(f.buf), size)
		copy(b, f.buf)
		f.buf = b
	}
	f.buf = append(f.buf, p...)
	return true
}

// drop ends the fill without storing, giving back what it claimed and
// letting identical misses go on.
func (f *cacheFill) drop() {
	if f != nil && f.leading {
		held := f.held
		f.leading, f.buf, f.held = false, nil, 0
		f.c.endHeld(&f.key, nil, nil, 0, held, false)
	}
}

// cacheFields is what a response's header says about storing it, read
// under any case of each field name: a handler that assigns to the map
// (h["cache-control"]) leaves the key as written, and net/http sends it.
type cacheFields struct {
	// never is set by Set-Cookie, Cache-Control no-store or private, and
	// Vary: *.
	never bool
	// shared is set by Cache-Control public, s-maxage or must-revalidate,
	// which let a shared cache reuse a response to a request with
	// Authorization (RFC 9111 §3.5).
	shared bool
	// public is set by Cache-Control public alone: what publicResponse
	// asks of a response to a request with credentials.
	public bool
	// varies is set by a Vary naming any field but Accept-Encoding,
	// Available-Dictionary and Sec-Fetch-Site, the ones squeeze's own
	// choice depends on.
	varies bool
	// site is set by a Vary naming Sec-Fetch-Site, which squeeze adds on
	// dictionary paths: a key by validator then holds the request's
	// Sec-Fetch-Site as sent, if it sent one, so that whoever named it,
	// responses to different values never meet.
	site bool
	// etag is the one ETag value, "" when there is none or more than one.
	etag  string
	etags int
}

// readCacheFields reads h for the cache, in one pass over its keys.
func readCacheFields(h http.Header) cacheFields {
	var cf cacheFields
	for k, v := range h {
		switch cacheFieldName(k) {
		case "Set-Cookie":
			cf.never = cf.never || len(v) > 0
		case "Cache-Control":
			for _, line := range v {
				for line != "" {
					var d string
					d, line = nextElement(line)
					if i := strings.IndexByte(d, '='); i >= 0 {
						d = d[:i] // private="Set-Cookie" is private too
					}
					switch d = trimOWS(d); {
					case equalFold(d, "no-store"), equalFold(d, "private"):
						cf.never = true
					case equalFold(d, "public"):
						cf.shared, cf.public = true, true
					case equalFold(d, "s-maxage"), equalFold(d, "must-revalidate"):
						cf.shared = true
					}
				}
			}
		case "Vary":
			star, other, site := varyNames(v)
			cf.never = cf.never || star
			cf.varies = cf.varies || other
			cf.site = cf.site || site
		case "Etag":
			cf.etags += len(v)
			if len(v) == 1 {
				cf.etag = trimOWS(v[0])
			}
		}
	}
	if cf.etags != 1 {
		cf.etag = ""
	}
	return cf
}

// cacheFieldName returns the canonical name of k when it is one of the
// fields readCacheFields looks at, under any case; any other key comes
// back as it is.
func cacheFieldName(k string) string {
	for _, name := range [...]string{"Set-Cookie", "Cache-Control", "Vary", "Etag"} {
		if len(k) == len(name) && (k == name || equalFold(k, name)) {
			return name
		}
	}
	return k
}

// varyNames reports whether the Vary field lines name "*", whether they
// name any field but Accept-Encoding, Available-Dictionary and
// Sec-Fetch-Site, and whether they name Sec-Fetch-Site.
func varyNames(lines []string) (star, other, site bool) {
	for _, line := range lines {
		for line != "" {
			var name string
			name, line = nextElement(line)
			switch name = trimOWS(name); {
			case name == "":
			case name == "*":
				star = true
			case equalFold(name, "Accept-Encoding"), equalFold(name, "Available-Dictionary"):
			case equalFold(name, "Sec-Fetch-Site"):
				site = true
			default:
				other = true
			}
		}
	}
	return star, other, site
}

// cacheable reads h and reports whether the response may be stored or
// served from the cache at all: not without a cache, nor for anything but
// a 200 to a request other than HEAD, a response with trailers, a stream
// decided at a flush, or one whose header says never (see cacheFields).
func (m *Middleware) cacheable(h http.Header, f *facts) (cacheFields, bool) {
	if m.cache == nil || f.status != http.StatusOK || f.head || f.trailers || f.event == atFlush || f.secret {
		return cacheFields{}, false
	}
	cf := readCacheFields(h)
	return cf, !cf.never
}

// cachedWhole looks up a body that ended within the buffer, by content
// whatever its ETag says: a handler's tag may name a version of data that
// it renders per user, language or tenant. It returns the stored encoding
// on a hit; on a miss that this response leads, store is set and k holds
// the key to give to storeWhole (or storeBeaten) once body is encoded. For
// a delta whose key holds the verdict that it lost to the coding without
// the dictionary (storeBeaten), it returns that verdict, lost, instead:
// the delta's length, which that coding must beat, and k to give to
// cachedBeaten. k is filled in place, not returned, which would copy the
// key twice on every response, with or without a cache. r is the request,
// o the response's offer.
func (m *Middleware) cachedWhole(r *http.Request, o *offer, h http.Header, f *facts, body []byte, k *cacheKey) (stored []byte, lost int, store bool) {
	if _, ok := m.cacheable(h, f); !ok || m.hiding.skipsCache(o.coding) {
		return nil, 0, false
	}
	*k = cacheKey{sum: maphash.Bytes(m.cache.seed, body), length: len(body), coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID()}
	return m.lookupWhole(r, o, h, body, k)
}

// lookupWhole is cachedWhole once the response is known to be cacheable in
// o's coding and k is o's key for body.
func (m *Middleware) lookupWhole(r *http.Request, o *offer, h http.Header, body []byte, k *cacheKey) (stored []byte, lost int, store bool) {
	e, leader := m.cache.lookup(r, k, body, upgradeLevel(k.coding), 0, upgradeSource{o.dict, m.shared})
	switch {
	case e == nil:
		return nil, 0, leader
	case e.lost > 0:
		return nil, e.lost, false
	}
	if m.shared != nil && !e.public.Load() && publicResponse(r.Header, h) {
		e.public.Store(true) // its upgrade may be shared now
	}
	return e.body, 0, false
}

// storeWhole stores out, the encoding of body looked up as k, with a copy
// of body for later hits to compare, or only ends the flight when out is
// nil (no gain). Both are copied: they live in pooled buffers. It does
// nothing unless store is set. r and h are the request and the response's
// header, which say whether the entry may be shared (publicResponse).
func (m *Middleware) storeWhole(r *http.Request, h http.Header, k *cacheKey, store bool, body, out []byte) {
	if !store {
		return
	}
	var plain []byte
	if out != nil && int64(len(out)+len(body)) <= m.cache.entryMax {
		out, plain = bytes.Clone(out), bytes.Clone(body)
	} else {
		out = nil
	}
	m.cache.end(k, out, plain, k.level, out != nil && m.shared != nil && publicResponse(r.Header, h))
}

// A whole delta goes out only when it is smaller than the coding it
// replaces (sendWhole), and the Cache keeps what went out, so that the
// same request costs no encoding the next time. When that coding won, the
// Cache keeps two entries, each exactly what its key says:
//
//   - under the coding's own key (its coding and level, no dictionary),
//     its encoding of the body: the entry any request for that coding
//     finds, with a dictionary or without one;
//   - under the delta's key (its coding, level and dictionary), not the
//     delta, which no request is to get while that entry stands, but the
//     verdict that the delta lost, with its length: a later request with
//     the same dictionary finds it, looks the coding without the
//     dictionary up (cachedBeaten) and, found and smaller than that
//     length, sends it without encoding anything.
//
// The verdict carries the delta's length, not the coding that beat it, as
// clients name different codings: one whose coding is not in the Cache, or
// not smaller than the delta, encodes it (capped below that length) and
// stores it, or sends the delta it did not beat, uncached. Both entries
// keep the plain bytes for hits to compare, one shared copy that each
// one's weight counts; the Cache's rules for what is stored are those of
// any whole body (cacheable), and br under WithLengthHiding, which bypasses
// the Cache, leaves no verdict either.

// storeBeaten ends the flight of k, a delta's key that lookup made this
// response lead, when fb's coding without the dictionary beat the delta,
// which was lost bytes long or more: it stores out, fb's encoding of body,
// under fb's key, and the verdict under k (see above). It does nothing
// unless store is set. r and h are as for storeWhole.
func (m *Middleware) storeBeaten(r *http.Request, h http.Header, k *cacheKey, store bool, body []byte, lost int, fb *offer, out []byte) {
	if !store {
		return
	}
	if m.hiding.skipsCache(fb.coding) || int64(len(out)+len(body)) > m.cache.entryMax {
		m.cache.end(k, nil, nil, 0, false)
		return
	}
	plain := bytes.Clone(body)
	kb := beatenKey(k, fb)
	e := newEntry(&kb, bytes.Clone(out), plain, kb.level)
	e.public.Store(m.shared != nil && publicResponse(r.Header, h))
	m.cache.add(&kb, e, 0) // beside any flight for kb: whichever stores first stands
	verdict := newEntry(k, nil, plain, k.level)
	verdict.lost = lost
	m.cache.endWith(k, verdict, 0)
}

// cachedBeaten looks up body in fb's coding without the dictionary, after
// cachedWhole found, under k, the verdict that the delta lost to that
// coding; it returns what lookupWhole does for fb's key, filled in kb. It
// counts a miss, and returns nothing, when fb's coding bypasses the Cache.
func (m *Middleware) cachedBeaten(r *http.Request, fb *offer, h http.Header, body []byte, k, kb *cacheKey) (stored []byte, store bool) {
	if m.hiding.skipsCache(fb.coding) {
		m.cache.misses.Add(1)
		return nil, false
	}
	*kb = beatenKey(k, fb)
	stored, _, store = m.lookupWhole(r, fb, h, body, kb) // no verdict without a dictionary
	return stored, store
}

// beatenKey returns the key of the body that k, a delta's key, finds, in
// fb's coding without the dictionary.
func beatenKey(k *cacheKey, fb *offer) cacheKey {
	return cacheKey{sum: k.sum, length: k.length, coding: fb.coding, level: fb.encoders.Level(), dictionary: fb.dictionaryID()}
}

// validatorKey returns the key of a streamed response by its strong ETag,
// when the Middleware trusts its handlers' tags ([CacheTrustedETags]) and
// the response may be shared with every request of its key: a GET whose
// Vary names nothing but the fields squeeze's own choice depends on (the
// offer's coding and dictionary are in the key), and, for a request with
// Authorization, a response that allows a shared cache to reuse it (RFC
// 9111 §3.5). The key holds the Host and the request-target as the client
// sent it: a handler mounted under http.StripPrefix sees a stripped, and
// decoded, URL.Path, which other mounts and other escapings share; and the
// request's Sec-Fetch-Site when Vary names it. A request without a
// RequestURI (built by hand, not by net/http's server)
// gets no key, as its original target is unknown.
func (m *Middleware) validatorKey(r *http.Request, o *offer, cf *cacheFields) (cacheKey, bool) {
	if !m.trustETags || r.Method != http.MethodGet || r.RequestURI == "" || !isStrongETag(cf.etag) ||
		cf.varies || (!cf.shared && hasAuthorization(r.Header)) {
		return cacheKey{}, false
	}
	k := cacheKey{
		coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID(),
		host: r.Host, uri: r.RequestURI, etag: cf.etag,
	}
	if lines := r.Header["Sec-Fetch-Site"]; cf.site && len(lines) > 0 {
		// Each line as sent, in order: equal keys only for requests
		// that sent the same field. A request without it keys as for a
		// response that does not vary on it, so that a Middleware with
		// dictionaries and one without, sharing a Cache, share entries.
		k.site = "\x00" + strings.Join(lines, "\x00")
	}
	return k, true
}

// hasAuthorization reports whether a request header has Authorization,
// under any case.
func hasAuthorization(h http.Header) bool {
	if len(h["Authorization"]) > 0 {
		return true
	}
	for k, v := range h {
		if len(v) > 0 && equalFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// cachedStream looks an encoded stream up by validator, only with
// [CacheTrustedETags]: nothing else can show that a stored encoding holds
// the bytes this handler is about to write. r is the request, o the
// response's offer. It returns the stored encoding on a hit; on a miss of
// a response it may store, it returns a fill that tees the stream, on its
// way to dst, into the cache, and that follows the response as its hook.
func (m *Middleware) cachedStream(r *http.Request, o *offer, h http.Header, f *facts, dst io.Writer) ([]byte, *cacheFill) {
	if !m.trustETags || m.hiding.skipsCache(o.coding) {
		return nil, nil
	}
	cf, ok := m.cacheable(h, f)
	if !ok {
		return nil, nil
	}
	k, ok := m.validatorKey(r, o, &cf)
	if !ok {
		return nil, nil
	}
	e, leader := m.cache.lookup(r, &k, nil, upgradeLevel(k.coding), m.cache.patience, upgradeSource{dict: o.dict})
	if e != nil {
		return e.body, nil
	}
	if leader {
		return nil, &cacheFill{c: m.cache.cacheCore, key: k, dst: dst, level: k.level, leading: true}
	}
	return nil, nil
}

// The fill follows its response as a responseHook: it wants no plain body
// (it is the encoder's destination), a flushed stream is not stored, and
// at the end it stores what it kept.
func (f *cacheFill) committed(http.Header, facts) bool { return false }
func (f *cacheFill) plain([]byte) bool                 { return false }
func (f *cacheFill) flushed()                          { f.drop() }

// ended stores the stream the fill kept if the response completed and its
// stream ended whole, and otherwise drops it. The entry keeps an exact
// copy, not the fill's buffer with its spare capacity, and its weight takes
// over what the fill claimed.
func (f *cacheFill) ended(end responseEnd) {
	if !end.completed || !end.closed || !f.leading || end.secret {
		f.drop()
		return
	}
	body := f.buf
	if cap(body) > len(body) {
		body = make([]byte, len(f.buf))
		copy(body, f.buf)
	}
	f.leading, f.buf = false, nil
	f.c.endHeld(&f.key, body, nil, f.level, f.held, false)
}

// upgradeSource is what an upgrade of an entry needs beyond the entry: the
// dictionary of a dcz or dcb key, and the fleet's store of the Middleware
// that found the entry, each nil when there is none.
type upgradeSource struct {
	dict   *dictionary
	shared *storeguard.Guard
}

// newUpgradeJob returns the job of upgrading e, stored under k, at level
// best, with what src holds.
func newUpgradeJob(k *cacheKey, e *cacheEntry, best int, src upgradeSource) upgradeJob {
	j := upgradeJob{key: *k, entry: e, best: best, shared: src.shared}
	if src.dict != nil && k.dictionary != "" {
		j.dict = weak.Make(src.dict)
	}
	return j
}
