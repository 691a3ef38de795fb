package squeeze

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/lru"
)

// This file holds the client side of Compression Dictionary Transport (RFC
// 9842) for Transport: which response becomes a dictionary, the store of
// dictionaries (LRU within a byte budget, keyed by origin and match
// pattern) and the capture of a response that becomes one. The fields, the
// match patterns and the framing are parsed and serialised in internal/cdt;
// internal/decode undoes dcz and dcb with a dictionary.

// maxDictionariesPerOrigin is the most dictionaries the client keeps for
// one origin; another one drops that origin's least recently used. It bounds
// the dictionaries each request looks through, while leaving an origin room
// for a dictionary per bundle or endpoint it serves.
const maxDictionariesPerOrigin = 64

// dictEntryOverhead is what the store charges each dictionary on top of the
// bytes of its data and strings: the memory of its bookkeeping, on 64-bit
// platforms. The clientDict takes a 144-byte size class and the record
// internal/lru keeps for it (its key, a pointer, its weight and two links)
// a 64-byte one. It has a slot in that cache's map (a 32-byte key and an
// 8-byte pointer, with a control byte) and, when it is the only one of its
// origin, a slot of its own in the origins map (a string and a slice, with
// a control byte), each in a table between 7/16 and 7/8 full: up to 93
// bytes each. Its pointer in its origin's slice, grown by doubling, takes
// up to 16: 410 bytes. Under churn, with entries dropped as fast as new
// origins come, the tables also hold deleted slots, which the heap measured
// under churn fits within 512 (the figures are in
// docs/internals.md#the-clients-dictionary-store).
// TestClientDictEntryOverheadCoversItsMemory checks the sum and measures
// the heap of 64 dictionaries an origin.
const dictEntryOverhead = 512

// clientDict is one stored dictionary. Everything but used is immutable
// once stored, so a response being decoded may keep using it after the
// store has dropped it.
type clientDict struct {
	origin  string
	pattern string // a path pattern: literal bytes and '*' wildcards
	id      string
	data    []byte
	hash    [sha256.Size]byte
	expires time.Time
	used    uint64 // the store's clock when it was last added or offered
}

// cost returns what d is charged against the store's budget: every byte it
// holds, its data's capacity included, and dictEntryOverhead.
func (d *clientDict) cost() int64 {
	return int64(cap(d.data)+len(d.origin)+len(d.pattern)+len(d.id)) + dictEntryOverhead
}

// availableDictionary formats d's hash as the Available-Dictionary field
// value, an RFC 8941 byte sequence.
func (d *clientDict) availableDictionary() string {
	return cdt.AvailableDictionary(d.hash)
}

// clientDictStore holds a Transport's dictionaries within a byte budget,
// each charged its cost, at most maxDictionariesPerOrigin for an origin, the
// least recently used dropped first. The budget also holds the captures in
// flight: the buffers of response bodies being read to become dictionaries,
// each reserved as it grows (see dictCapture), so that stored and captured
// bytes together never exceed it.
type clientDictStore struct {
	maxCapture int64         // the longest body kept: a quarter of the budget
	maxAge     time.Duration // the longest a dictionary is kept, however fresh

	// matches is cdt.MatchPath; a test may replace it, before the store is
	// used, to watch a match in progress.
	matches func(pattern, path string) bool

	mu sync.Mutex
	// lru holds the dictionaries, each weighing its cost, and reserves the
	// captures in flight.
	lru     *lru.Cache[dictKey, *clientDict]
	clock   uint64                   // counts adds and offers, for clientDict.used
	origins map[string][]*clientDict // each origin's entries, in no order
}

// dictKey is what a stored dictionary is found by: a later one with the
// same origin and pattern replaces it.
type dictKey struct{ origin, pattern string }

func newClientDictStore(budget int64, maxAge time.Duration) *clientDictStore {
	s := &clientDictStore{
		maxCapture: budget / 4,
		maxAge:     maxAge,
		matches:    cdt.MatchPath,
		origins:    map[string][]*clientDict{},
	}
	s.lru = lru.New(budget, func(_ dictKey, d *clientDict) { s.dropOrigin(d) })
	return s
}

// candidate is a stored dictionary as match saw it under the lock.
type candidate struct {
	d    *clientDict
	used uint64
}

// match returns the fresh dictionary of req's origin whose pattern matches
// req's path, the longest pattern winning and then the most recently used
// (RFC 9842 §2.2.2), or nil. It looks through that origin's dictionaries
// only, and drops those that have expired. The patterns are matched outside
// the lock, on a copy of the origin's list taken under it, so a slow match
// (a peer's patterns against a long path) holds up no other request; a path
// longer than cdt.MaxPath matches nothing.
func (s *clientDictStore) match(req *http.Request, now time.Time) *clientDict {
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if len(path) > cdt.MaxPath {
		return nil
	}
	origin := requestOrigin(req)
	var buf [maxDictionariesPerOrigin]candidate
	cands := s.candidates(origin, now, buf[:0])
	best := -1
	for i, c := range cands {
		if best >= 0 {
			b := cands[best]
			if len(c.d.pattern) < len(b.d.pattern) || len(c.d.pattern) == len(b.d.pattern) && c.used < b.used {
				continue
			}
		}
		if s.matches(c.d.pattern, path) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	d := cands[best].d
	s.mu.Lock()
	if cur, ok := s.lru.Peek(dictKey{d.origin, d.pattern}); ok && cur == d {
		s.lru.Get(dictKey{d.origin, d.pattern})
		s.clock++
		d.used = s.clock
	}
	s.mu.Unlock()
	// A dictionary dropped meanwhile is still offered: it is immutable.
	return d
}

// candidates appends origin's fresh dictionaries to dst, dropping the
// expired ones.
func (s *clientDictStore) candidates(origin string, now time.Time, dst []candidate) []candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := s.origins[origin]
	for i := 0; i < len(ds); {
		d := ds[i]
		if !now.Before(d.expires) {
			s.removeLocked(d) // moves the last entry to i
			ds = s.origins[origin]
			continue
		}
		i++
		dst = append(dst, candidate{d, d.used})
	}
	return dst
}

// reserve takes n bytes of the budget for a capture in flight that will
// replace the dictionary stored under key, if any. It makes room by
// dropping that dictionary first, then the least recently used ones. It
// reports false, taking nothing, when the captures in flight would hold
// more than the budget.
func (s *clientDictStore) reserve(key dictKey, n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lru.Reserved()+n > s.lru.Budget() {
		return false
	}
	if old, ok := s.lru.Peek(key); ok && s.lru.Used()+s.lru.Reserved()+n > s.lru.Budget() {
		s.removeLocked(old)
	}
	return s.lru.Reserve(n)
}

// unreserve gives back n bytes reserve took.
func (s *clientDictStore) unreserve(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.lru.Release(n)
	s.mu.Unlock()
}

// add stores d, replacing a dictionary with the same origin and pattern,
// dropping its origin's least recently used one when the origin has
// maxDictionariesPerOrigin, and dropping the least recently used ones until
// the budget holds it. A dictionary that costs more than the budget less
// the captures in flight is not stored. held is what a capture reserved
// for d's data: it is given back as d is charged, under the one lock, so
// the two are never counted at once.
func (s *clientDictStore) add(d *clientDict, held int64) {
	cost := d.cost()
	key := dictKey{d.origin, d.pattern}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lru.Release(held)
	if cost > s.lru.Budget() || len(d.data) == 0 {
		return
	}
	if old, ok := s.lru.Peek(key); ok {
		s.removeLocked(old)
	}
	if ds := s.origins[d.origin]; len(ds) >= maxDictionariesPerOrigin {
		oldest := ds[0]
		for _, e := range ds[1:] {
			if e.used < oldest.used {
				oldest = e
			}
		}
		s.removeLocked(oldest)
	}
	if !s.lru.Add(key, d, cost) {
		return // the captures in flight hold the room
	}
	s.clock++
	d.used = s.clock
	s.origins[d.origin] = append(s.origins[d.origin], d)
}

// removeLocked drops d from the store.
func (s *clientDictStore) removeLocked(d *clientDict) {
	s.lru.Remove(dictKey{d.origin, d.pattern})
	s.dropOrigin(d)
}

// dropOrigin takes d out of its origin's entries, as it leaves the store.
func (s *clientDictStore) dropOrigin(d *clientDict) {
	ds := s.origins[d.origin]
	for i, e := range ds {
		if e == d {
			last := len(ds) - 1
			ds[i], ds[last] = ds[last], nil
			ds = ds[:last]
			break
		}
	}
	if len(ds) == 0 {
		delete(s.origins, d.origin)
	} else {
		s.origins[d.origin] = ds
	}
}

// requestOrigin returns the origin req is for, as scheme://host[:port]: the
// host is the one the request names, req.Host when it is set (a virtual
// host reached through another address) and the URL's otherwise, so a
// dictionary is offered only to the origin that served it (RFC 9842 §2.2).
func requestOrigin(req *http.Request) string {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	return cdt.Origin(req.URL.Scheme, host)
}

// dictOffer describes the dictionary a response asks to become: what
// Use-As-Dictionary said, resolved against the response's URL, and until
// when it is kept: while fresh, for maxAge at most.
type dictOffer struct {
	origin  string
	pattern string
	id      string
	expires time.Time
}

// offerOf returns what resp, the answer to req, asks to be stored as, or
// false when it asks for nothing, asks with an invalid or unsupported
// Use-As-Dictionary or with a match pattern longer than cdt.MaxPattern
// once resolved, is not a 200, or is not fresh (RFC 9842 §2.1: the
// dictionary lives as long as the response is fresh). It is kept for maxAge
// at most, however long the response says it stays fresh: a dictionary
// identifies the client to its origin as a cookie would (see
// Transport.DictionaryMaxAge).
func offerOf(req *http.Request, resp *http.Response, now time.Time, maxAge time.Duration) (dictOffer, bool) {
	values := resp.Header.Values("Use-As-Dictionary")
	if len(values) == 0 || resp.StatusCode != http.StatusOK || req.URL == nil {
		return dictOffer{}, false
	}
	u, ok := cdt.ParseUseAsDictionary(strings.Join(values, ", "))
	if !ok {
		return dictOffer{}, false
	}
	origin := requestOrigin(req)
	pattern, ok := cdt.ResolvePattern(u.Match, origin, req.URL.EscapedPath())
	if !ok || len(pattern) > cdt.MaxPattern {
		return dictOffer{}, false
	}
	life, ok := freshness(resp.Header, now)
	if !ok {
		return dictOffer{}, false
	}
	return dictOffer{origin: origin, pattern: pattern, id: u.ID, expires: now.Add(min(life, maxAge))}, true
}

// freshness returns how long a response with header h stays fresh for a
// private cache (RFC 9111 §4.2): max-age, else Expires minus Date, less
// Age. no-store and no-cache responses, and those with neither max-age nor
// Expires, are not fresh: a client that stores dictionaries does not
// revalidate them, and applies no heuristic freshness.
func freshness(h http.Header, now time.Time) (time.Duration, bool) {
	cc := h.Values("Cache-Control")
	if headerHasToken(cc, "no-store") || headerHasToken(cc, "no-cache") {
		return 0, false
	}
	var life time.Duration
	found := false
	for _, line := range cc {
		for line != "" {
			var elem string
			elem, line = nextElement(line)
			name, value, _ := strings.Cut(trimOWS(elem), "=")
			if !strings.EqualFold(trimOWS(name), "max-age") {
				continue
			}
			secs, err := strconv.ParseInt(strings.Trim(trimOWS(value), `"`), 10, 64)
			if err != nil || secs < 0 {
				return 0, false
			}
			life, found = time.Duration(min(secs, 1<<31))*time.Second, true
		}
	}
	if !found {
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return 0, false
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = now
		}
		life = exp.Sub(date)
	}
	if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 {
		life -= time.Duration(min(age, 1<<31)) * time.Second
	}
	return life, life > 0
}

// dictCapture keeps the decoded bytes of a response that asked to become a
// dictionary, and stores them when the body has been read to its end. Its
// buffer is reserved from the store's budget as it grows, by doubling; a
// body longer than the store's maxCapture, or one that finds no room, is
// no longer captured (the response itself is read as usual), and neither
// is one cut short or failed. Read and Close may race, so a mutex guards
// it.
type dictCapture struct {
	store *clientDictStore
	offer dictOffer
	size  int64 // the body's length when known, else -1

	mu   sync.Mutex
	buf  []byte
	held int64 // the bytes reserved for buf: its capacity
	done bool  // stored or given up: capture nothing more
}

// minCaptureBuffer is the first buffer a capture reserves: a dictionary is
// seldom smaller.
const minCaptureBuffer = 4 << 10

func (c *dictCapture) write(p []byte) {
	if len(p) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	need := int64(len(c.buf)) + int64(len(p))
	if need > int64(cap(c.buf)) {
		if need > c.store.maxCapture {
			c.abandonLocked()
			return
		}
		size := min(max(need, 2*int64(cap(c.buf)), minCaptureBuffer), c.store.maxCapture)
		if c.size >= need && c.size <= c.store.maxCapture {
			size = c.size // the whole body at once
		}
		if !c.store.reserve(dictKey{c.offer.origin, c.offer.pattern}, size-c.held) {
			c.abandonLocked()
			return
		}
		grown := make([]byte, len(c.buf), size)
		copy(grown, c.buf)
		c.buf, c.held = grown, size
	}
	c.buf = append(c.buf, p...)
}

// abandon stops the capture and gives its reservation back; it is what
// Close, a failed Read and the cleanup of a body dropped unclosed call.
func (c *dictCapture) abandon() {
	c.mu.Lock()
	c.abandonLocked()
	c.mu.Unlock()
}

func (c *dictCapture) abandonLocked() {
	c.done, c.buf = true, nil
	c.store.unreserve(c.held)
	c.held = 0
}

// finish stores what was captured, at the end of the body.
func (c *dictCapture) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || len(c.buf) == 0 {
		c.abandonLocked()
		return
	}
	data := c.buf
	if cap(data)-len(data) > len(data)/8 {
		// The room doubling left is charged too: copy it away when large.
		data = bytes.Clone(data)
	}
	// The strings are cloned: each may be a substring of a longer one (a
	// match given as a full URL keeps only its path, after a user part an
	// attacker may make 2 KiB long), which the store would otherwise keep
	// whole while charging only the substring.
	d := &clientDict{
		origin:  strings.Clone(c.offer.origin),
		pattern: strings.Clone(c.offer.pattern),
		id:      strings.Clone(c.offer.id),
		data:    data,
		hash:    sha256.Sum256(data),
		expires: c.offer.expires,
	}
	held := c.held
	c.buf, c.held, c.done = nil, 0, true
	c.store.add(d, held)
}
