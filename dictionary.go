package squeeze

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/lru"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/internal/storeguard"
	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the server side of Compression Dictionary Transport (RFC
// 9842): the store of remembered dictionaries, the dcz and dcb encoders,
// the headers of a response on a dictionary path, and the per-response
// state that remembers a body and offers a delta against one. The response
// writer calls in when it starts (follow, which may make a dictionary offer
// the response's), and through the responseHook that follow returns: at the
// verdict (the header edits), with the plain body (collected to remember),
// and at the end (remembered). The match patterns, the fields and the
// framing are parsed and serialised in internal/cdt.

// Content-coding names of RFC 9842, the dictionary-compressed codings: a
// zstd frame or a brotli stream made with a dictionary the client already
// holds, behind a header naming that dictionary.
const (
	DCZ = "dcz"
	DCB = "dcb"
)

// defaultDictionaryStoreSize is the byte budget of remembered dictionaries
// when [WithDictionaryStoreSize] is not given: 64 MiB. A versioned script or
// stylesheet is tens to hundreds of kilobytes, so this keeps some hundreds of
// them, each with a few versions, while a body of up to 16 MiB (a quarter of
// the budget) can still be remembered. The budget holds the tables a dcb
// encoder prepares for a dictionary too (see [WithDictionaryStoreSize]); the
// encoders built for a dictionary are pooled per dictionary and released
// with it (see docs/internals.md#the-dictionary-store).
const defaultDictionaryStoreSize = 64 << 20

// dcbWindowBits is the br window squeeze uses for dcb, as for plain br:
// the dictionary is reached beyond the window, so a larger window would
// only hold more memory per response.
const dcbWindowBits = 18

// --- patterns ---------------------------------------------------------------

// parseMatchPattern checks a pattern of WithDictionaryMatch or WithDictionary
// (see cdt.CheckPattern); the error names the option, call.
func parseMatchPattern(call, p string) (string, error) {
	if err := cdt.CheckPattern(p); err != nil {
		return "", fmt.Errorf("squeeze: %s: pattern %q %w", call, p, err)
	}
	return p, nil
}

// useAsDictionary returns the Use-As-Dictionary field value for a pattern:
// an RFC 8941 dictionary with the one member match (RFC 9842 §2.1).
func useAsDictionary(pattern string) string {
	s, ok := cdt.UseAsDictionary(pattern)
	if !ok {
		// parseMatchPattern lets no such pattern through.
		panic("squeeze: pattern " + pattern + " is not an sf-string")
	}
	return s
}

// --- the store --------------------------------------------------------------

// dictionary is one dictionary squeeze holds: a remembered response body or
// a standalone dictionary of WithDictionary. Its encoders are built on first
// use and dropped with it.
type dictionary struct {
	hash    [32]byte
	data    []byte
	pattern string // the match pattern it was stored or registered under
	static  bool   // registered with WithDictionary: never evicted
	// learned is set on a dictionary of WithLearnedDictionary (learned.go):
	// the fleet's store has it from the replica that trained it, and, as
	// for a remembered one, only public responses go out as deltas
	// against it. One of a route's live dictionaries is outside the
	// remembered store and not charged to its budget.
	learned bool
	// codings are the delta codings offered against a learned dictionary,
	// preferred first, as the route's last round chose them on samples
	// the dictionary was not trained on (learned_codings.go); nil for the
	// store's codings, in its order, as for every other dictionary.
	codings atomic.Pointer[[]string]

	dcz, dcb lazyOffer
	// wins are the bodies whose deltas beat the coding they replace
	// (delta_wins.go).
	wins deltaWins
	// fleet is what a remembered dictionary has earned of the fleet's
	// store (shared_admission.go); unused without one.
	fleet storeguard.Candidate
	// servedAt is the URL of a public response this replica sent with
	// these bytes, nil if none was (a dictionary taken from the fleet's
	// store and not served since) or its URL is over liveURLMax: a client
	// naming the dictionary makes that URL live (dictStore.live). Unused
	// without a fleet's store.
	servedAt atomic.Pointer[string]
	// refreshed is when the dictionary's key in the fleet's store was
	// last kept fresh, written or read, in nanoseconds since the epoch
	// (dictStore.keepFresh).
	refreshed atomic.Int64
}

// dictOrigin says how a dictionary came to be remembered, or seen again:
// what it earns of the fleet's store (see dictStore.seen).
type dictOrigin uint8

const (
	// fromResponse: the body of a public response sent with
	// Use-As-Dictionary; it earns its place in the store by being sent
	// again, or asked for by hash.
	fromResponse dictOrigin = iota
	// fromFile: a FileServer's file sent in a public response with
	// Use-As-Dictionary: the operator's own, which has earned its place.
	fromFile
	// byHash: a client named it in Available-Dictionary (a file the
	// FileServer found by that hash, or one held already): earned, but
	// public only once it goes out in a public response.
	byHash
	// fromEarnedResponse: the body of a public response sent with
	// Use-As-Dictionary that has earned its place at once: its request
	// named these very bytes (the client holds them, from another
	// replica), or its URL is live, one whose earlier bodies clients
	// named (see responseServed).
	fromEarnedResponse
)

// lazyOffer is the offer of one dictionary coding for one dictionary, built
// the first time a client asks for it. o is nil if it could not be built.
type lazyOffer struct {
	once sync.Once
	o    *offer
}

// dictStore holds the dictionary configuration of a Middleware and the
// dictionaries it knows. Remembered dictionaries are keyed by SHA-256 and
// evicted least recently used first once their cost passes the budget
// (internal/lru): the bytes, dictEntryBytes each, and the dcb tables of
// those a client asked for dcb against (dcbTableBytes). The mutex guards
// the remembered ones only; hashing, copying and building encoders happen
// outside it.
type dictStore struct {
	patterns []string // WithDictionaryMatch, in order
	useAs    []string // the Use-As-Dictionary value of each pattern
	codings  []string // DCZ and DCB in preference order; empty: none offered
	zstdLevel,
	brLevel int
	maxBody int64 // the largest body remembered: a quarter of the budget
	// capturing is what the bodies being collected to remember hold of
	// the budget (reserve), at most twice maxBody: half the budget, so that
	// slow clients can never evict more than half the dictionaries held.
	// Guarded by mu.
	capturing int64

	standalone map[string]*standaloneDictionary // by path
	links      []string                         // Link values for text/html
	// linkHook follows the responses to paths that match no pattern,
	// adding links; nil when there are none.
	linkHook *dictLinks
	// standaloneMatch holds the match patterns of the standalone
	// dictionaries: their responses vary on Available-Dictionary too.
	standaloneMatch []string

	// static holds the dictionaries of WithDictionary by hash; it does not
	// change once the store is built.
	static map[[32]byte]*dictionary

	// shared is the fleet's store (shared_dict.go), nil without one;
	// live, with it, the URLs whose dictionaries clients name
	// (responseServed).
	shared *storeguard.Guard
	live   *storeguard.RecentKeys

	// learner holds the routes of WithLearnedDictionary and their
	// training (learner.go): the store asks it for live learned
	// dictionaries, and reports and logs through it.
	learner *learner
	// routes are the patterns' routes for registrable's log, in order.
	routes []dictRoute

	mu         sync.Mutex
	remembered *lru.Cache[[32]byte, *dictionary] // weighing what each costs
	// known finds a body remembered before without its SHA-256: by a
	// seeded maphash of its bytes, to a weak pointer to the dictionary,
	// whose bytes then decide (knownBody). A dictionary path sends the
	// same body to every client, so each response after the first costs
	// a maphash and a comparison, several times cheaper than SHA-256
	// (BenchmarkDictStore/remember-known). At most maxKnownBodies
	// entries, emptied when full: bookkeeping bounded by a constant.
	// Guarded by mu.
	known     map[uint64]weak.Pointer[dictionary]
	knownSeed maphash.Seed
	// expect is the body each dictionary path last sent, to compare the
	// next with rather than copy (expected_bodies.go). Guarded by mu.
	expect expectedBodies
}

// maxKnownBodies bounds dictStore.known: 256 entries of about 40 bytes.
const maxKnownBodies = 256

// dictEntryBytes is what a remembered dictionary costs the budget besides
// its bytes: the dictionary, its list element and map entry and the fixed
// part of its two offers, the offer, its encoder pool and closure (dcb's is
// in dcbTableBytes), with room to spare (the measurements are in
// docs/internals.md#the-dictionary-store). Charged when the body is
// remembered, it keeps a flood of tiny distinct bodies within the budget as
// well.
const dictEntryBytes = 1 << 10

// dcbTableBytes returns what go-brrr (v1.3.1) keeps in the PreparedDictionary
// it builds for a dictionary of n bytes, which every dcb encoder of the
// dictionary shares for as long as the store holds the dictionary: a 2-byte
// head per hash bucket (2^17 buckets, doubling while the dictionary is more
// than 16 bytes per bucket, up to 2^22), a 4-byte offset per slot (2^7,
// doubling with them) and a 4-byte item per position. The items are the
// most there can be: a bucket keeps at most 32 positions, so repetitive
// text needs fewer. It is an upper bound on what the heap holds, checked
// against runtime.MemStats (docs/internals.md#the-dictionary-store): the
// tables, not the dictionary, dominate a small dictionary's cost.
func dcbTableBytes(n int) int64 {
	const handle = 256 // the PreparedDictionary, its handle and rounding
	if n < 8 {
		return handle // go-brrr builds no tables for fewer than 8 bytes
	}
	bucketBits, slotBits := 17, 7
	for 16<<bucketBits < n && bucketBits < 22 {
		bucketBits++
		slotBits++
	}
	return handle + 2<<bucketBits + 4<<slotBits + 4*int64(n-7)
}

// newDictStore builds the store from the configuration. It returns nil when
// no dictionary is configured, which keeps every dictionary hook off the
// path of a response.
func newDictStore(c *config, zstdLevel, brLevel int) (*dictStore, error) {
	if len(c.dictMatch) == 0 && len(c.standalone) == 0 && len(c.learned) == 0 {
		return nil, nil
	}
	s := &dictStore{
		patterns:  c.dictMatch,
		codings:   c.dictCodings,
		zstdLevel: zstdLevel,
		// go-brrr takes a compound dictionary from quality 2 up.
		brLevel:    max(brLevel, 2),
		maxBody:    c.dictStoreSize / 4,
		standalone: map[string]*standaloneDictionary{},
		static:     map[[32]byte]*dictionary{},
		remembered: lru.New[[32]byte, *dictionary](c.dictStoreSize, nil),
		known:      map[uint64]weak.Pointer[dictionary]{},
		knownSeed:  maphash.MakeSeed(),
		expect:     newExpectedBodies(),
	}
	s.routes = make([]dictRoute, len(s.patterns))
	for i, p := range s.patterns {
		s.useAs = append(s.useAs, useAsDictionary(p))
		s.routes[i].kind, s.routes[i].name = "dictionary pattern", p
	}
	for _, sd := range c.standalone {
		d := &dictionary{hash: sha256.Sum256(sd.data), data: sd.data, pattern: sd.match, static: true}
		if _, dup := s.static[d.hash]; !dup {
			s.static[d.hash] = d
		}
		s.standalone[sd.path] = &standaloneDictionary{
			d:           s.static[d.hash],
			etag:        `"` + base64.RawURLEncoding.EncodeToString(d.hash[:]) + `"`,
			useAs:       useAsDictionary(sd.match),
			contentType: http.DetectContentType(sd.data),
			s:           s,
			route:       &dictRoute{kind: "dictionary", name: sd.path},
		}
		s.links = append(s.links, "<"+sd.path+`>; rel="compression-dictionary"`)
		s.standaloneMatch = append(s.standaloneMatch, sd.match)
	}
	s.learner = newLearner(c, s)
	if len(s.links) > 0 || len(s.learner.routes) > 0 {
		s.linkHook = &dictLinks{links: s.links, s: s}
	}
	return s, nil
}

// lookup returns the dictionary with this hash, marking it used, or nil.
func (s *dictStore) lookup(hash [32]byte) *dictionary {
	if d := s.static[hash]; d != nil {
		return d
	}
	if d := s.learner.lookup(hash); d != nil {
		return d
	}
	s.mu.Lock()
	d, _ := s.remembered.Get(hash)
	s.mu.Unlock()
	return d
}

// remember stores body as a dictionary for pattern, unless it is empty,
// larger than a quarter of the budget, or held already (then it only counts
// as seen again), and returns the dictionary held, nil if none is. owned
// says body may be kept as it is; otherwise it is
// copied. It costs the budget the capacity of the slice kept, which is
// what the heap holds, and dictEntryBytes. from says where body came from:
// a body that is not public is never remembered, except a FileServer's
// file found by hash (byHash), which is shared only once it goes out in a
// public response. reserved is what the caller reserved of the budget
// while it collected body (see reserve); remember gives it back on every
// path, under the same lock as it stores the dictionary when it does, so
// the bytes are counted once and at every moment.
func (s *dictStore) remember(body []byte, pattern string, owned bool, from dictOrigin, reserved int64) *dictionary {
	if len(body) == 0 || int64(len(body)) > s.maxBody {
		s.release(reserved)
		return nil
	}
	sum := maphash.Bytes(s.knownSeed, body)
	if held := s.knownBody(sum, body); held != nil {
		s.release(reserved)
		s.seen(held, from)
		return held
	}
	hash := sha256.Sum256(body)
	if held := s.lookup(hash); held != nil {
		s.release(reserved)
		s.noteBody(sum, held)
		s.seen(held, from)
		return held
	}
	if !owned {
		body = bytes.Clone(body)
	}
	d := &dictionary{hash: hash, data: body, pattern: pattern}
	held := s.insert(d, int64(cap(body))+dictEntryBytes, reserved)
	s.noteBody(sum, held)
	s.seen(held, from)
	return held
}

// knownBody returns the dictionary held whose bytes are body, found by
// sum, body's maphash, or nil. The comparison, not the hash, decides: a
// collision is a miss. The dictionary must still be held (lookup, which
// marks it used as the SHA-256 path does).
func (s *dictStore) knownBody(sum uint64, body []byte) *dictionary {
	s.mu.Lock()
	wp, ok := s.known[sum]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	d := wp.Value()
	if d == nil || !bytes.Equal(d.data, body) {
		return nil
	}
	return s.lookup(d.hash) // d.hash is the SHA-256 of d.data, so of body
}

// noteBody records that the body whose maphash is sum is held as d.
func (s *dictStore) noteBody(sum uint64, d *dictionary) {
	s.mu.Lock()
	if len(s.known) >= maxKnownBodies {
		clear(s.known)
	}
	s.known[sum] = weak.Make(d)
	s.mu.Unlock()
}

// rememberServed is remember for the body of a public response sent with
// Use-As-Dictionary to r (fromResponse), which records, with a fleet's
// store, what r tells of it (responseServed).
func (s *dictStore) rememberServed(body []byte, pattern string, owned bool, reserved int64, r *http.Request) *dictionary {
	if s.shared == nil {
		return s.remember(body, pattern, owned, fromResponse, reserved)
	}
	if len(body) == 0 || int64(len(body)) > s.maxBody {
		s.release(reserved)
		return nil
	}
	hash := sha256.Sum256(body)
	d := s.lookup(hash)
	if d != nil {
		s.release(reserved)
	} else {
		if !owned {
			body = bytes.Clone(body)
		}
		d = s.insert(&dictionary{hash: hash, data: body, pattern: pattern}, int64(cap(body))+dictEntryBytes, reserved)
	}
	s.responseServed(d, r)
	return d
}

// reserve takes n bytes of the budget for a body collected to remember,
// evicting the least recently used dictionaries to make room; it reports
// false, taking nothing, when the reservations would pass the budget or
// the bodies being collected would hold more than half of it.
func (s *dictStore) reserve(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing+n > 2*s.maxBody || !s.remembered.Reserve(n) {
		return false
	}
	s.capturing += n
	return true
}

// release gives back n bytes that reserve took.
func (s *dictStore) release(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.remembered.Release(n)
	s.capturing -= n
	s.mu.Unlock()
}

// seen records that d, a dictionary held, went out again or was named as
// from says, and writes it to the fleet's store once it has earned it
// (shared_admission.go): public, and asked for by hash, sent
// SharedAdmitAfter times, or a FileServer's file.
func (s *dictStore) seen(d *dictionary, from dictOrigin) {
	if s.shared == nil || d.static || d.learned {
		return
	}
	switch from {
	case fromResponse:
		d.fleet.MarkPublic()
		d.fleet.Served(s.shared.AdmitAfter())
	case fromFile, fromEarnedResponse:
		d.fleet.MarkPublic()
		d.fleet.Earn()
	case byHash:
		d.fleet.Earn()
		if u := d.servedAt.Load(); u != nil {
			s.live.Note(*u)
		}
	}
	s.share(d)
	s.keepFresh(d)
}

// insert adds d, a remembered dictionary costing weight, to the store and
// returns it, or returns the dictionary of the same hash stored meanwhile
// by another response. reserved, the bytes reserved while d's body was
// collected, is given back first, under the same lock. Its encoder pools and prepared tables go with it
// when it is evicted: responses still using one put their encoders back
// into a pool nothing else reaches.
func (s *dictStore) insert(d *dictionary, weight, reserved int64) *dictionary {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remembered.Release(reserved)
	s.capturing -= reserved
	if held, ok := s.remembered.Peek(d.hash); ok {
		return held
	}
	s.remembered.Add(d.hash, d, weight)
	return d
}

// charge adds n bytes of encoder state about to be built for d to d's cost,
// evicting the least recently used dictionaries while the store is over
// budget. It reports false when d is no longer in the store, would not fit
// the budget alone (then nothing is charged), or is itself evicted to make
// room (its cost leaves with it): then the state is not to be built. A
// static dictionary, or a live learned one, is not charged.
func (s *dictStore) charge(d *dictionary, n int64) bool {
	if d.static || d.learned && s.learner.holds(d) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.remembered.Peek(d.hash); !ok || cur != d {
		return false
	}
	return s.remembered.Charge(d.hash, n)
}

// uncharge gives back n bytes charged for d whose state could not be built.
func (s *dictStore) uncharge(d *dictionary, n int64) {
	if d.static || d.learned && s.learner.holds(d) {
		return // not charged
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.remembered.Peek(d.hash); ok && cur == d {
		s.remembered.Charge(d.hash, -n)
	} // else its cost left the store with it
}

// matchIndex returns the index of the first pattern path matches, or -1.
func (s *dictStore) matchIndex(path string) int {
	for i, p := range s.patterns {
		if cdt.MatchPath(p, path) {
			return i
		}
	}
	return -1
}

// offerFor returns the offer of coding (DCZ or DCB) with d, built on first
// use, or nil if its encoder cannot be built. The dcb offer's prepared
// tables are charged to the budget before they are built (see charge): a
// remembered dictionary whose tables do not fit, or that is evicted to make
// room, gets no dcb offer. dcz keeps no state beyond its pooled encoders,
// whose fixed part dictEntryBytes counts.
func (s *dictStore) offerFor(d *dictionary, coding string) *offer {
	lo, build, state := &d.dcz, s.newDCZ, int64(0)
	if coding == DCB {
		lo, build, state = &d.dcb, s.newDCB, dcbTableBytes(len(d.data))
	}
	lo.once.Do(func() {
		if state > 0 && !s.charge(d, state) {
			return
		}
		encoders, err := build(d)
		if err != nil {
			if state > 0 {
				s.uncharge(d, state)
			}
			return
		}
		lo.o = &offer{coding: coding, encoders: encoders, dict: d}
	})
	return lo.o
}

// dczWindow returns the zstd window for a dictionary of n bytes: a power of
// two covering the dictionary and 64 KiB of response beyond it where RFC
// 9842 lets clients refuse no less, else the largest power of two within
// that limit (offsets then reach only the dictionary's tail).
func dczWindow(n int) int {
	limit := int(cdt.ZstdWindow(n))
	want := 1 << bits.Len(uint(n+64<<10-1))
	if want > limit {
		want = 1 << (bits.Len(uint(limit)) - 1)
	}
	return max(want, zstd.MinWindowSize)
}

// level returns the level the store builds the encoders of coding at: its
// zstd level for dcz, its br level for dcb.
func (s *dictStore) level(coding string) int {
	if coding == DCB {
		return s.brLevel
	}
	return s.zstdLevel
}

// newDCZ returns the pool of dcz encoders for d: zstd at the middleware's
// zstd level with d as raw content dictionary, a learned one's last
// dczHistoryMax bytes only (dczHistory), behind the dcz header. A live
// learned dictionary's pool keeps one encoder however often the garbage
// collector runs: each new encoder hashes the dictionary into tables of
// its own and allocates them, which costs a response many times what it
// encodes, and a route's pages, served among others', came each to a new
// one (bench/measured/learned-delta-cost.md). A route holds few live
// dictionaries (LearnedKeep), which the budget does not charge (charge);
// the others, remembered in numbers and charged, keep none.
func (s *dictStore) newDCZ(d *dictionary) (*pool.Encoders, error) {
	header := cdt.Header(DCZ, d.hash)
	history := dczHistory(d)
	window := dczWindow(len(history))
	level := s.zstdLevel
	newPool := pool.NewEncodersFunc
	if d.learned && s.learner.holds(d) {
		newPool = pool.NewEncodersFuncKeepingOne
	}
	return newPool(DCZ, func() (writers.Encoder, error) {
		zw, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(window),
			zstd.WithLowerEncoderMem(true),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderDictRaw(0, history),
		)
		if err != nil {
			return nil, err
		}
		return newFramedEncoder(header, zw), nil
	})
}

// newDCB returns the pool of dcb encoders for d: brotli at the middleware's
// br level (at least 2) with d as raw compound dictionary, prepared once and
// shared by every encoder, behind the dcb header.
func (s *dictStore) newDCB(d *dictionary) (*pool.Encoders, error) {
	prepared, err := brrr.PrepareDictionary(d.data)
	if err != nil {
		return nil, err
	}
	header := cdt.Header(DCB, d.hash)
	level := s.brLevel
	return pool.NewEncodersFunc(DCB, func() (writers.Encoder, error) {
		bw, err := brrr.NewWriterOptions(nil, level, brrr.WriterOptions{
			Dictionaries: []*brrr.PreparedDictionary{prepared},
			LGWin:        dcbWindowBits,
		})
		if err != nil {
			return nil, err
		}
		return newFramedEncoder(header, bw), nil
	})
}
