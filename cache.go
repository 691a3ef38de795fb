package squeeze

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
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
//     goroutine but its upgrade worker.
//   - The upgrade worker runs only while upgrades wait, as background work
//     of the Middleware whose upgrade found none running (internal/lifetime):
//     that Middleware's Close stops it, and an idle Cache runs nothing.
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
//     them. A stream cannot be hashed before it is sent, so it is found by
//     its request (Host, RequestURI, coding), whose last stream is a
//     candidate its bytes are compared with as they pass, held back
//     (streamByContent); or by its strong ETag, when the Middleware was
//     told to trust them (CacheTrustedETags), and then only with no Vary
//     but squeeze's own and no Authorization unless the response is
//     shareable (validatorKey).
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
//
// What is cached, and why it is safe: a body that ends within the buffer
// (see [WithBufferSize]) is found by a seeded hash of its bytes with its
// length, coding, level and dictionary, and a hit compares the bytes, so a
// response only ever carries the encoding of the bytes its own handler
// wrote, whatever its ETag, Vary, cookies or mount point say. A whole delta
// that lost to the coding without its dictionary leaves that coding's
// encoding, and under the delta's key the verdict that it lost, so the same
// request is not encoded twice again. A stream is held back while its bytes
// are those its request's last one stored, sent stored if they are all,
// unless [CacheTrustedETags]. Never stored: HEADs, statuses but 200, responses
// with Set-Cookie, Cache-Control no-store or private, Vary: * or trailers,
// flushed streams, responses cut short (a panic, a write error, a length
// mismatch), and entries over an eighth of the cache.
type Cache struct {
	*cacheCore
}

// cacheCore is the Cache proper.
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
	pending atomic.Int64
	// workMu guards working (a worker runs), closed (Close was called)
	// and the sends to jobs; stop is closed by Close; workers counts the
	// workers running, at most one.
	workMu          sync.Mutex
	working, closed bool
	stop            chan struct{}
	workers         sync.WaitGroup
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
// maxBytes must be positive; one entry may take at most an eighth of it.
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
	return &Cache{c}, nil
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

// Close stops the upgrades of every Middleware that uses c (see
// [Middleware.Close]) and waits; c still serves. It always returns nil.
func (c *Cache) Close() error {
	c.close()
	return nil
}

func (c *cacheCore) close() {
	c.workMu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.workMu.Unlock()
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
// discards the handler's body, which it does not compare.
//
// Risk: squeeze does not compare such a stream with what it stored: this
// relies on every handler changing a strong ETag whenever its bytes change
// (RFC 9110 §8.8.3): a tag that names a version of data rendered per user
// sends one client's stream to another. squeeze still keys an entry by
// Host and request-target, and never stores a stream that varies on other
// fields or answers Authorization unless public (RFC 9111 §3.5). Without
// this option a stream is found by content (see [Cache]), at its end.
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
	// With uri set and etag empty, the key is a request's (byRequest): it
	// finds the stream its last response stored, whose bytes the next
	// response's are compared with (streamByContent).
	host, uri, etag, site string
	// file is the SHA-256 of a file's plain bytes in the key of a file
	// server's representation (fileReps), and empty in a response's: the
	// two keyspaces never meet.
	file string
}

// byRequest reports whether k is a request's key, under which a stream
// found by content is kept (streamByContent).
func (k *cacheKey) byRequest() bool { return k.uri != "" && k.etag == "" }

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
				c.enqueue(newUpgradeJob(k, e, best, src), src.life)
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
	if k.byRequest() {
		// A stream's bytes compared under its request's key: the last
		// body stands, the one the next response most likely carries.
		// The entry replaced gives its weight back as it goes.
		if _, added := c.store.Set(*k, e); added {
			c.entries.Add(1)
		}
		c.stores.Add(1)
		return true
	}
	if _, stored := c.store.SetIfAbsent(*k, e); !stored {
		c.bytes.Add(-e.weight)
		return true // another's entry is there
	}
	c.entries.Add(1)
	c.stores.Add(1)
	return true
}

// lead makes the caller lead the flight for k, a request's key
// (cacheKey.byRequest), unless a flight for it is under way: one fill of a
// key at a time, and nobody waits for it. The leader ends it with endHeld.
func (c *cacheCore) lead(k *cacheKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[*k] != nil {
		return false
	}
	c.flights[*k] = &flight{done: make(chan struct{})}
	return true
}
