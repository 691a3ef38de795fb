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

	"github.com/maypok86/otter/v2"

	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the cache of encoded representations: what it keeps, how
// a response finds its entry, and the background upgrades. The response
// writer calls it at three points only: sendWhole (a body that ended in the
// buffer), the start of an encoded stream in commit, and finish.
//
// Choices, and the measurements behind them (BENCHMARKS.md, "Cache"):
//
//   - Eviction is github.com/maypok86/otter/v2: weight-bounded W-TinyLFU,
//     which keeps hot entries through scans of one-hit wonders. On a Zipf
//     trace with scans its hit ratio beat plain LRU at every size measured,
//     and a hit allocates nothing in it. Its maintenance runs on the
//     calling goroutine (a synchronous Executor), so the cache starts no
//     goroutine but its own upgrade workers.
//   - Bytes <= maxBytes holds at all times, not only after otter's
//     maintenance: every store first reserves its weight against maxBytes
//     in Cache.bytes, and otter is bounded at maxBytes less one entry's
//     limit, which leaves the headroom for stores in flight. A store that
//     finds no room is skipped, never admitted over the bound.
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
//     alternative, SHA-256, needs no plain copy but costs 6x maphash
//     (BenchmarkContentHash: 16 KiB in ~10 µs with SHA-NI against ~1.7
//     µs), which held a hit at 16 KiB to 6x the speed of a fresh zstd
//     encode, against 22x with maphash; the plain copy costs memory instead,
//     counted in Bytes, and only for bodies within the buffer (32 KiB by
//     default). It also spares upgrades a decode.
//   - A body that ends within the buffer is found by content whatever
//     its ETag: real handlers send one tag over per-user, per-language or
//     per-tenant bytes, and were correct before a cache stood in front of
//     them. A stream cannot be compared before it is sent, so it is found
//     by its strong ETag only when the Middleware was told to trust them
//     (WithTrustedETags), and then only under Host and RequestURI, with
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
// [Cache.Close] stops its upgrade workers.
//
// What is cached, and why it is safe: a body that ends within the buffer
// (see [WithBufferSize]) is found by a seeded hash of its bytes with its
// length, coding, level and dictionary, and a hit compares the bytes, so a
// response only ever carries the encoding of the bytes its own handler
// wrote, whatever its ETag, Vary, cookies or mount point say. Streams are
// not cached, unless [WithTrustedETags] says that the handlers' strong
// ETags identify their bytes. Never stored: HEAD responses, statuses other
// than 200, responses with Set-Cookie, Cache-Control no-store or private,
// Vary: * or trailers, flushed streams, responses cut short (a panic, a
// write error, a length mismatch), and entries over an eighth of the
// cache.
type Cache struct {
	*cacheCore
}

// cacheCore is the Cache proper. The upgrade workers hold it, not the
// Cache, so that a Cache nobody holds any more becomes unreachable and its
// cleanup stops them.
type cacheCore struct {
	store *otter.Cache[cacheKey, *cacheEntry]
	// max is maxBytes; entryMax the largest weight one entry may have.
	max, entryMax int64

	// bytes is the weight of the stored entries plus that of the stores
	// reserved and not yet made; it never exceeds max.
	bytes                                    atomic.Int64
	entries                                  atomic.Int64
	hits, misses, stores, evictions          atomic.Int64
	upgrades, upgradesDropped, storesSkipped atomic.Int64

	// seed keys the content hash; see the top of this file.
	seed maphash.Seed

	mu      sync.Mutex
	flights map[cacheKey]*flight
	// patience is how long a stream's follower waits for a leader that
	// makes no progress: streamPatience, but for tests.
	patience time.Duration

	jobs      chan upgradeJob
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
	// coding's best level; UpgradesDropped the upgrades not attempted
	// because the queue was full or the cache closed.
	Upgrades, UpgradesDropped int64
	// Entries and Bytes are what the cache holds now. Bytes counts the
	// encoded bytes, the plain bytes that entries found by content keep,
	// and an estimate of each entry's bookkeeping; it never exceeds
	// MaxBytes.
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
// bookkeeping (see [CacheStats]). maxBytes must be positive; one entry may
// take at most an eighth of it. It starts one upgrade worker per two cores
// (at least one), which [Cache.Close] stops.
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
	for range max(1, runtime.GOMAXPROCS(0)/2) {
		c.workers.Add(1)
		go c.work()
	}
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
		Entries:         c.entries.Load(),
		Bytes:           c.bytes.Load(),
		MaxBytes:        c.max,
	}
}

// Close stops the upgrade workers and waits for them: an upgrade under way
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
// ones it encodes there (see [Cache] for which). Without it nothing is
// cached.
func WithCache(c *Cache) Option {
	return func(cfg *config) error {
		if c == nil || c.cacheCore == nil {
			return errors.New("squeeze: WithCache(nil): needs a *Cache from NewCache")
		}
		cfg.cache = c
		return nil
	}
}

// WithTrustedETags has the Middleware serve a stream (a body longer than
// the buffer, see [WithBufferSize]) from its [Cache] by the response's
// strong ETag, and store such streams, as a shared cache would. A hit
// sends the stored encoding without encoding anything, and reads and
// discards the handler's body.
//
// Risk: squeeze cannot compare a stream with what it stored, so this
// relies on every handler behind the Middleware changing a strong ETag
// whenever its bytes change (RFC 9110 §8.8.3). A tag that names a version
// of data rendered per user, language, tenant or build (a row counter, a
// deploy id) sends one client's stream to another. Even so, squeeze keys
// an entry by Host and the request-target as sent, and never stores or
// serves a stream whose Vary names a field other than Accept-Encoding and
// Available-Dictionary, nor one for a request with Authorization unless
// the response says public, s-maxage or must-revalidate (RFC 9111 §3.5).
// Without this option only bodies that end within the buffer are cached,
// found by their content. It needs [WithCache].
func WithTrustedETags() Option {
	return func(cfg *config) error {
		cfg.trustETags = true
		return nil
	}
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
	// RequestURI, and the response's strong ETag.
	host, uri, etag string
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
}

func newEntry(k *cacheKey, body, plain []byte, level int) *cacheEntry {
	w := int64(len(body) + len(plain) + entryOverhead + len(k.coding) + len(k.dictionary) +
		len(k.host) + len(k.uri) + len(k.etag))
	return &cacheEntry{body: body, plain: plain, level: level, weight: w}
}

// streamPatience is how long a request waits for an identical stream being
// stored by another to make progress before it encodes its own.
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
	// progress counts the bytes a stream's leader has taken from its
	// handler or sent to its client: followers wait for a leader that makes
	// progress, not for a stalled one.
	progress atomic.Int64
}

// lookup returns the entry for k, counting a hit, or, after counting a
// miss, nil and whether the caller leads the miss: then it must call end.
// A miss identical to one in flight waits for it (or for the request's
// end), and then looks again if the flight left an entry, or encodes for
// itself and stores nothing if it left none. With patience above zero it
// waits only while the leader sends something at least that often, then
// encodes for itself and stores nothing. A whole body's leader encodes in
// memory at once, so its followers wait; a stream's leader goes at its
// client's pace, and one stalled reader must not hold back every other
// client of the URL. plain is the body looked up by content, which the
// entry's must equal.
func (c *cacheCore) lookup(r *http.Request, k *cacheKey, plain []byte, best int, patience time.Duration) (e *cacheEntry, leader bool) {
	for {
		if e, ok := c.store.GetIfPresent(*k); ok {
			if plain != nil && !bytes.Equal(e.plain, plain) {
				c.misses.Add(1) // a hash collision: the key is taken
				return nil, false
			}
			c.hits.Add(1)
			if e.hits.Add(1) == upgradeAfter && e.level < best {
				c.enqueue(upgradeJob{key: *k, entry: e, best: best})
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
		if !c.wait(r, f, patience) || !f.stored {
			c.misses.Add(1)
			return nil, false
		}
	}
}

// wait waits for flight f to end, and reports whether it did: not when the
// request ends first, nor, with patience above zero, when the leader sends
// nothing for that long.
func (c *cacheCore) wait(r *http.Request, f *flight, patience time.Duration) bool {
	if patience <= 0 {
		select {
		case <-f.done:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	t := time.NewTimer(patience)
	defer t.Stop()
	for {
		last := f.progress.Load()
		select {
		case <-f.done:
			return true
		case <-r.Context().Done():
			return false
		case <-t.C:
			if f.progress.Load() == last {
				return false // the leader is stalled
			}
			t.Reset(patience)
		}
	}
}

// flightOf returns the flight for k, which the caller leads.
func (c *cacheCore) flightOf(k *cacheKey) *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flights[*k]
}

// end ends the flight for k that lookup made the caller lead, storing body
// and plain (which the cache then owns) unless body is nil.
func (c *cacheCore) end(k *cacheKey, body, plain []byte, level int) {
	stored := body != nil && c.add(k, newEntry(k, body, plain, level))
	c.mu.Lock()
	f := c.flights[*k]
	delete(c.flights, *k)
	c.mu.Unlock()
	f.stored = stored
	close(f.done)
}

// reserve claims w bytes of the budget for a store about to be made, or
// reports that there is no room for it.
func (c *cacheCore) reserve(w int64) bool {
	for {
		cur := c.bytes.Load()
		if w > c.entryMax || cur+w > c.max {
			c.storesSkipped.Add(1)
			return false
		}
		if c.bytes.CompareAndSwap(cur, cur+w) {
			return true
		}
	}
}

// add stores e under k unless an entry is there already, and reports
// whether k has an entry now. The deletion handler gives its weight back
// when otter removes it.
func (c *cacheCore) add(k *cacheKey, e *cacheEntry) bool {
	if !c.reserve(e.weight) {
		return false
	}
	if _, stored := c.store.SetIfAbsent(*k, e); !stored {
		c.bytes.Add(-e.weight)
		return true // another's entry is there
	}
	c.entries.Add(1)
	c.stores.Add(1)
	return true
}

// upgradeJob re-encodes entry, stored under key, at level best.
type upgradeJob struct {
	key   cacheKey
	entry *cacheEntry
	best  int
}

// enqueue queues j unless the queue is full or the cache closed.
func (c *cacheCore) enqueue(j upgradeJob) {
	select {
	case <-c.stop:
		c.upgradesDropped.Add(1)
		return
	default:
	}
	select {
	case c.jobs <- j:
	default:
		c.upgradesDropped.Add(1)
	}
}

// work runs upgrades until Close. Each worker keeps one encoder and one
// decoder per coding it met: best-level encoders hold megabytes, and they
// are used only here.
func (c *cacheCore) work() {
	defer c.workers.Done()
	encoders := map[string]writers.Encoder{}
	decoders := map[string]writers.Decoder{}
	for {
		select {
		case <-c.stop:
			return
		case j := <-c.jobs:
			c.upgrade(j, encoders, decoders)
		}
	}
}

// upgrade re-encodes j's entry at its best level and replaces the entry
// with the result if it is smaller and the entry is still the one stored.
func (c *cacheCore) upgrade(j upgradeJob, encoders map[string]writers.Encoder, decoders map[string]writers.Decoder) {
	coding := j.key.coding
	dec, enc := decoders[coding], encoders[coding]
	var err error
	if dec == nil {
		if dec, err = writers.NewDecoder(coding); err != nil {
			return
		}
		decoders[coding] = dec
	}
	if enc == nil {
		if enc, err = writers.NewEncoder(coding, j.best); err != nil {
			return
		}
		encoders[coding] = enc
	}
	plain := j.entry.plain
	if plain == nil {
		if err := dec.Reset(bytes.NewReader(j.entry.body)); err != nil {
			return
		}
		plain, err = io.ReadAll(io.LimitReader(dec, c.max))
		_ = dec.Reset(nil)
		if err != nil {
			return
		}
	}
	out := capped{max: len(j.entry.body) - 1}
	enc.Reset(&out)
	defer enc.Reset(io.Discard)
	for p := plain; len(p) > 0; {
		select {
		case <-c.stop:
			return
		default:
		}
		n := min(len(p), upgradeChunk)
		if _, err := enc.Write(p[:n]); err != nil {
			return // no gain
		}
		p = p[n:]
	}
	if enc.Close() != nil {
		return
	}
	body := bytes.Clone(out.b)
	e := newEntry(&j.key, body, j.entry.plain, j.best)
	if !c.reserve(e.weight) {
		return
	}
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
		return
	}
	c.upgrades.Add(1)
}

// capped collects up to max bytes and fails beyond: an encoding that is not
// smaller is of no use.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if len(c.b)+len(p) > c.max {
		return 0, errNoGain
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// The response writer's side.

// cacheFill is a miss being stored as it goes out: the stream's encoder
// writes through it to the client, and it keeps a copy.
type cacheFill struct {
	c   *cacheCore
	key cacheKey
	dst io.Writer
	buf []byte
	// level is the offer's level; closed is set once the stream ended
	// whole; leading that the fill still leads its flight.
	level   int
	closed  bool
	leading bool
	// fl is the flight the fill leads, whose progress followers watch.
	fl *flight
}

// advance records that the leading stream took n more plain bytes.
func (f *cacheFill) advance(n int) {
	if f != nil && f.fl != nil {
		f.fl.progress.Add(int64(n))
	}
}

func (f *cacheFill) Write(p []byte) (int, error) {
	n, err := f.dst.Write(p)
	f.advance(n) // bytes reaching the client are progress too
	if f.leading {
		if err != nil || int64(len(f.buf)+n) > f.c.entryMax {
			f.drop()
		} else {
			f.buf = append(f.buf, p[:n]...)
		}
	}
	return n, err
}

// drop ends the fill without storing, letting identical misses go on.
func (f *cacheFill) drop() {
	if f != nil && f.leading {
		f.leading, f.buf = false, nil
		f.c.end(&f.key, nil, nil, 0)
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
	// varies is set by a Vary naming any field but Accept-Encoding and
	// Available-Dictionary, the two squeeze's own choice depends on.
	varies bool
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
					case equalFold(d, "public"), equalFold(d, "s-maxage"), equalFold(d, "must-revalidate"):
						cf.shared = true
					}
				}
			}
		case "Vary":
			star, other := varyNames(v)
			cf.never = cf.never || star
			cf.varies = cf.varies || other
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

// varyNames reports whether the Vary field lines name "*", and whether
// they name any field but Accept-Encoding and Available-Dictionary.
func varyNames(lines []string) (star, other bool) {
	for _, line := range lines {
		for line != "" {
			var name string
			name, line = nextElement(line)
			switch name = trimOWS(name); {
			case name == "":
			case name == "*":
				star = true
			case equalFold(name, "Accept-Encoding"), equalFold(name, "Available-Dictionary"):
			default:
				other = true
			}
		}
	}
	return star, other
}

// cacheable reads h and reports whether the response may be stored or
// served from the cache at all: not without a cache, nor for anything but
// a 200 to a request other than HEAD, a response with trailers, a stream
// decided at a flush, or one whose header says never (see cacheFields).
func (cw *responseWriter) cacheable(h http.Header, f *facts) (cacheFields, bool) {
	if cw.m.cache == nil || f.status != http.StatusOK || cw.head || f.trailers || f.event == atFlush {
		return cacheFields{}, false
	}
	cf := readCacheFields(h)
	return cf, !cf.never
}

// cachedWhole looks up a body that ended within the buffer, by content
// whatever its ETag says: a handler's tag may name a version of data that
// it renders per user, language or tenant. It returns the stored encoding
// on a hit; on a miss that this response leads, store is set and k holds
// the key to give to storeWhole once body is encoded. k is filled in
// place, not returned, which would copy the key twice on every response,
// with or without a cache.
func (cw *responseWriter) cachedWhole(h http.Header, f *facts, body []byte, k *cacheKey) (stored []byte, store bool) {
	if _, ok := cw.cacheable(h, f); !ok {
		return nil, false
	}
	o := cw.offer
	*k = cacheKey{sum: maphash.Bytes(cw.m.cache.seed, body), length: len(body), coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID()}
	e, leader := cw.m.cache.lookup(cw.req, k, body, bestLevel(k.coding), 0)
	if e != nil {
		return e.body, false
	}
	return nil, leader
}

// storeWhole stores out, the encoding of body looked up as k, with a copy
// of body for later hits to compare, or only ends the flight when out is
// nil (no gain). Both are copied: they live in pooled buffers. It does
// nothing unless store is set.
func (cw *responseWriter) storeWhole(k *cacheKey, store bool, body, out []byte) {
	if !store {
		return
	}
	var plain []byte
	if out != nil && int64(len(out)+len(body)) <= cw.m.cache.entryMax {
		out, plain = bytes.Clone(out), bytes.Clone(body)
	} else {
		out = nil
	}
	cw.m.cache.end(k, out, plain, k.level)
}

// validatorKey returns the key of a streamed response by its strong ETag,
// when the Middleware trusts its handlers' tags ([WithTrustedETags]) and
// the response may be shared with every request of its key: a GET whose
// Vary names nothing but the fields squeeze's own choice depends on (the
// offer's coding and dictionary are in the key), and, for a request with
// Authorization, a response that allows a shared cache to reuse it (RFC
// 9111 §3.5). The key holds the Host and the request-target as the client
// sent it: a handler mounted under http.StripPrefix sees a stripped, and
// decoded, URL.Path, which other mounts and other escapings share. A
// request without a RequestURI (built by hand, not by net/http's server)
// gets no key, as its original target is unknown.
func (cw *responseWriter) validatorKey(cf *cacheFields) (cacheKey, bool) {
	r := cw.req
	if !cw.m.trustETags || r.Method != http.MethodGet || r.RequestURI == "" || !isStrongETag(cf.etag) ||
		cf.varies || (!cf.shared && hasAuthorization(r.Header)) {
		return cacheKey{}, false
	}
	o := cw.offer
	return cacheKey{
		coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID(),
		host: r.Host, uri: r.RequestURI, etag: cf.etag,
	}, true
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
// [WithTrustedETags]: nothing else can show that a stored encoding holds
// the bytes this handler is about to write. It returns the stored encoding
// on a hit; on a miss of a response it may store, it sets cw.storing to
// tee the stream into the cache, and returns nil.
func (cw *responseWriter) cachedStream(h http.Header, f *facts) []byte {
	if !cw.m.trustETags {
		return nil
	}
	cf, ok := cw.cacheable(h, f)
	if !ok {
		return nil
	}
	k, ok := cw.validatorKey(&cf)
	if !ok {
		return nil
	}
	e, leader := cw.m.cache.lookup(cw.req, &k, nil, bestLevel(k.coding), cw.m.cache.patience)
	if e != nil {
		return e.body
	}
	if leader {
		cw.storing = &cacheFill{c: cw.m.cache.cacheCore, key: k, dst: (*wire)(cw), level: k.level, leading: true, fl: cw.m.cache.flightOf(&k)}
	}
	return nil
}

// streamTo returns where an encoded stream writes: through the fill, if
// the response is being stored, or to the client.
func (cw *responseWriter) streamTo() io.Writer {
	if cw.storing != nil {
		return cw.storing
	}
	return (*wire)(cw)
}

// endFill stores the stream the fill kept if the response completed and
// its stream ended whole, and otherwise drops it.
func (cw *responseWriter) endFill(completed bool) {
	f := cw.storing
	if f == nil {
		return
	}
	cw.storing = nil
	if !completed || !f.closed || !f.leading {
		f.drop()
		return
	}
	f.leading = false
	f.c.end(&f.key, f.buf, nil, f.level)
}

// bestLevel is the level upgrades encode at: the coding's highest (br 11,
// gzip 9, zstd 22, which klauspost/compress runs as its best).
func bestLevel(coding string) int {
	r, err := writers.Levels(coding)
	if err != nil {
		return 0
	}
	return r.Max
}

// fileReps is a Cache as the store of a file server's representations
// (filestore.go): a Middleware with a Cache keeps what its FileServer
// encodes there, under the same budget and eviction as its responses. An
// entry is keyed by the SHA-256 of the plain bytes, under a host no request
// can name, so it never meets a response's; its level is the coding's best,
// so the cache's own upgrades leave it to the file server's.
type fileReps struct{ c *cacheCore }

func (f fileReps) key(k repKey) cacheKey {
	ck := cacheKey{coding: k.coding, host: "\x00file", etag: string(k.plain[:])}
	if k.dict != ([32]byte{}) {
		ck.dictionary = string(k.dict[:])
	}
	return ck
}

func (f fileReps) load(k repKey) (rep, bool) {
	e, ok := f.c.store.GetIfPresent(f.key(k))
	if !ok {
		f.c.misses.Add(1)
		return rep{}, false
	}
	f.c.hits.Add(1)
	return rep{data: e.body, best: e.final}, true
}

func (f fileReps) store(k repKey, r rep) {
	ck := f.key(k)
	e := newEntry(&ck, r.data, nil, bestLevel(k.coding))
	e.final = r.best
	if !f.c.reserve(e.weight) {
		return
	}
	if _, added := f.c.store.Set(ck, e); added {
		f.c.entries.Add(1)
		f.c.stores.Add(1) // Stores counts entries added, not replaced
	}
}
