package squeeze

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"log"
	"math/bits"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"
	"golang.org/x/sync/semaphore"

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

	// learned holds the routes of WithLearnedDictionary (learned.go);
	// training lets one of their trainings run at a time, jobs counts
	// their background work, and observe is the Middleware's observer.
	learned  []*learnedRoute
	training *semaphore.Weighted
	jobs     sync.WaitGroup
	observe  func(LearnedInfo)
	// logf logs what an operator must hear of once (learned.go).
	logf func(format string, args ...any)
	// routes are the patterns' routes for registrable's log, in order.
	routes []dictRoute
	// offers are the Middleware's offers without a dictionary: a learned
	// route measures its streamed deltas against them (learned.go).
	offers []offer
	// pollEvery is the least time between two reads of a learned route's
	// pointer in the fleet's store (shared_learned.go).
	pollEvery time.Duration

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

// standaloneDictionary is a dictionary of WithDictionary and what serves it.
type standaloneDictionary struct {
	d                        *dictionary
	etag, useAs, contentType string
	s                        *dictStore // for its reports
	route                    *dictRoute // for registrable's log
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
		training:   semaphore.NewWeighted(1),
		observe:    c.observer.Learned,
		logf:       log.Printf,
		pollEvery:  learnedPollEvery,
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
	s.learned = newLearnedRoutes(s, c.learned)
	if len(s.links) > 0 || len(s.learned) > 0 {
		s.linkHook = &dictLinks{links: s.links, s: s}
	}
	return s, nil
}

// lookup returns the dictionary with this hash, marking it used, or nil.
func (s *dictStore) lookup(hash [32]byte) *dictionary {
	if d := s.static[hash]; d != nil {
		return d
	}
	if d := s.lookupLearned(hash); d != nil {
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
	if d.static || d.learned && s.liveLearned(d) {
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
	if d.static || d.learned && s.liveLearned(d) {
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
// dczHistoryMax bytes only (dczHistory), behind the dcz header.
func (s *dictStore) newDCZ(d *dictionary) (*pool.Encoders, error) {
	header := cdt.Header(DCZ, d.hash)
	history := dczHistory(d)
	window := dczWindow(len(history))
	level := s.zstdLevel
	return pool.NewEncodersFunc(DCZ, func() (writers.Encoder, error) {
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

// --- one response -----------------------------------------------------------

// dictResponse is the dictionary state of one response to a path that
// matches a pattern, and the hook that follows it.
type dictResponse struct {
	s *dictStore
	// req is the request the response answers.
	req *http.Request
	// pattern is the index of the WithDictionaryMatch pattern the path
	// matched, plus one; 0 when the path matches only the pattern of a
	// standalone dictionary. Either way the response varies on
	// Available-Dictionary. An int32, so that it and remember share a
	// word: the struct fits the 48-byte size class.
	pattern int32
	// remember is set when the response carries Use-As-Dictionary from
	// squeeze and is a GET: its plain body is collected in body, whose
	// capacity is reserved of the store's budget (dictStore.reserve)
	// until ended hands it to the dictionary or gives it back.
	remember bool
	body     []byte
	// expect, when set, is the dictionary the body is expected to equal
	// (dictStore.expected): its first matched bytes have, and body is
	// empty; its length is what is reserved. The first byte that differs
	// starts body from the bytes that matched.
	expect  *dictionary
	matched int
	// validators are the response's ETag and Last-Modified, as
	// expectedBodies keys them.
	validators uint64
}

// captureChunk is the least a body collected to remember grows by: the
// reservation grows with the capacity, doubling from it, so a body takes
// the store's lock a few times, not once per write.
const captureChunk = 32 << 10

// follow returns the dictionary offer the client of r may get, or nil, and
// the hook that follows the response: a dictResponse on a path that matches
// a pattern, allocated only there; on any other, s.linkHook (which adds the
// Link to standalone dictionaries), nil without standalone dictionaries. A
// delta needs all of: a dictionary
// coding named explicitly in Accept-Encoding ("*" does not count), a valid
// Available-Dictionary naming a held dictionary, a path matching that
// dictionary's pattern, and a request from the same origin, a direct one,
// or a same-site CORS request (RFC 9842 §9: see deltaSite); at the verdict,
// deltaAllowed may still refuse it for what the response's header says.
func (s *dictStore) follow(r *http.Request, ranged bool) (*offer, responseHook) {
	if s.shared != nil {
		// Every response may link a learned dictionary: the fleet's
		// newest is looked for now and then (shared_learned.go).
		for _, lr := range s.learned {
			lr.maybePoll(r.Context())
		}
	}
	path := r.URL.EscapedPath()
	o, pattern, varies := s.begin(r, path, ranged)
	var hook responseHook
	if varies {
		hook = &dictResponse{s: s, req: r, pattern: int32(pattern)}
	} else if s.linkHook != nil {
		hook = s.linkHook
	}
	if lr := s.learnedFor(path); lr != nil {
		if o != nil && lr.stopped.Load() && lr.holds(o.dict) {
			o = nil // the route's deltas fell below their floor (learned.go)
		}
		hook = lr.follow(hook, r, o)
	}
	return o, hook
}

// begin is follow for a request to path (escaped): it returns the
// dictionary offer the client may get, or nil, the index plus one of the
// WithDictionaryMatch pattern path matches (0 for none), and whether the
// response varies on Available-Dictionary. The file server calls it with
// the path the request arrived with, before any prefix was stripped.
func (s *dictStore) begin(r *http.Request, path string, ranged bool) (o *offer, pattern int, varies bool) {
	pattern = s.matchIndex(path) + 1
	varies = pattern > 0
	for _, p := range s.standaloneMatch {
		varies = varies || cdt.MatchPath(p, path)
	}
	lr := s.learnedFor(path)
	varies = varies || lr != nil
	avail := r.Header["Available-Dictionary"]
	if _, ok := deltaSite(r.Header); ranged || len(avail) == 0 || len(s.codings) == 0 || !ok {
		return nil, pattern, varies
	}
	coding := explicitCoding(r.Header["Accept-Encoding"], s.codings)
	if coding == "" {
		return nil, pattern, varies
	}
	hash, ok := cdt.ParseAvailableDictionary(avail)
	if !ok {
		return nil, pattern, varies
	}
	d := s.lookup(hash)
	if d == nil && pattern > 0 && s.shared != nil {
		d = s.fetch(r.Context(), hash)
	}
	if d == nil && lr != nil && s.shared != nil {
		d = lr.fetchForClient(r.Context(), hash)
	}
	if d == nil || !cdt.MatchPath(d.pattern, path) {
		return nil, pattern, varies
	}
	s.seen(d, byHash) // a client holds it: it has earned the fleet's store
	codings := s.codings
	if chosen := d.codings.Load(); chosen != nil {
		// A learned dictionary's round chose its codings and their order.
		codings = *chosen
		if coding = explicitCoding(r.Header["Accept-Encoding"], codings); coding == "" {
			return nil, pattern, varies
		}
	}
	if o = s.offerFor(d, coding); o == nil && len(codings) == 2 {
		// The other dictionary coding, if the client names it too: dcb
		// is refused for a dictionary whose tables do not fit the budget.
		other := codings[0]
		if other == coding {
			other = codings[1]
		}
		if explicitCoding(r.Header["Accept-Encoding"], []string{other}) != "" {
			o = s.offerFor(d, other)
		}
	}
	return o, pattern, varies
}

// deltaAllowed reports whether a response whose header is resp, to a
// request whose header is req, may go out as a delta against d: always
// against a dictionary of WithDictionary, whose bytes the operator chose;
// against one remembered from a response (a body whose content a client
// may have chosen, such as a page that reflects its query) only when the
// response is public (publicResponse). A delta's size tells how much of
// the response the dictionary holds: a client that had a guess of another
// user's private page remembered as a dictionary, and that can see the
// size of that user's response, would learn whether the guess was right.
// Refusing such deltas also makes the answer to a private request the same
// whether or not the dictionary it names is held: no private page confirms
// a guess by coming back as dcz rather than zstd.
//
// A request from another origin of the site (deltaSite) gets a delta only
// if the response is readable by that origin (corsReadable), which its
// header says only now: the handler sets Access-Control-Allow-Origin.
func deltaAllowed(req, resp http.Header, d *dictionary) bool {
	if origin, _ := deltaSite(req); origin != "" && !corsReadable(resp, origin) {
		return false
	}
	return d.static || publicResponse(req, resp)
}

// deltaSite reports whether the request's Sec-Fetch-Site allows a delta,
// and returns the Origin whose reading of the response it then depends
// on, "" for none. A delta's size tells how much of the response the
// dictionary holds, so it goes only where the page that asked may read
// both (RFC 9842 §9):
//   - no Sec-Fetch-Site (not a browser, or an old one), same-origin, or
//     none (the user's own navigation): yes;
//   - same-site, another origin of the site (a static or CDN subdomain,
//     another port): only for a CORS request (Sec-Fetch-Mode: cors) with
//     one Origin, and then only if the response turns out readable there
//     (corsReadable, in deltaAllowed); a browser names no dictionary in a
//     no-cors request anyway;
//   - cross-site, or anything else: never, whatever the response allows.
func deltaSite(h http.Header) (origin string, ok bool) {
	site := h["Sec-Fetch-Site"]
	if len(site) == 0 {
		return "", true
	}
	if len(site) > 1 {
		return "", false
	}
	switch v := trimOWS(site[0]); {
	case equalFold(v, "same-origin") || equalFold(v, "none"):
		return "", true
	case !equalFold(v, "same-site"):
		return "", false
	}
	mode, from := h["Sec-Fetch-Mode"], h["Origin"]
	if len(mode) != 1 || !equalFold(trimOWS(mode[0]), "cors") || len(from) != 1 {
		return "", false
	}
	origin = trimOWS(from[0])
	if origin == "" || origin == "null" {
		return "", false
	}
	return origin, true
}

// corsReadable reports whether a response with header h passes the CORS
// check of a request from origin: its one Access-Control-Allow-Origin is
// that origin, byte for byte, or "*". "*" counts because a response any
// page may read hides nothing a delta's size could tell: the page could
// read the response, and the dictionary (a response the browser kept only
// because that page could read it). A request with credentials does not
// pass the browser's check with "*", so its page reads neither the body
// nor, with it, the size.
func corsReadable(h http.Header, origin string) bool {
	v := h["Access-Control-Allow-Origin"]
	if len(v) != 1 {
		return false
	}
	allow := trimOWS(v[0])
	return allow == "*" || allow == origin
}

// explicitCoding returns the one of codings that Accept-Encoding names
// explicitly with the highest weight above zero, ties going to the earlier,
// or "" when it names none of them.
func explicitCoding(acceptEncoding []string, codings []string) string {
	var weights [2]int
	for i := range weights {
		weights[i] = qUnnamed
	}
	for token, q := range weightedTokens(acceptEncoding) {
		for i, c := range codings {
			if equalFold(token, c) {
				weights[i] = mergeWeight(weights[i], q)
			}
		}
	}
	best, bestQ := "", 0
	for i, c := range codings {
		if weights[i] > bestQ {
			best, bestQ = c, weights[i]
		}
	}
	return best
}

// htmlTypes is the pattern the Link to standalone dictionaries goes with.
var htmlTypes = compileTypes([]string{"text/html"})

// committed makes the header edits of dictionaries on a path that matches
// a pattern: Vary, Use-As-Dictionary on a body to remember (a GET or HEAD
// 200 of an eligible type, not encoded by the handler, not a range, without
// a Use-As-Dictionary of the handler's own, public (see publicResponse),
// and with caching headers that let a browser register it: see
// unregistrable), and the Link to standalone dictionaries on
// text/html.
// It asks for the body of a GET to remember.
func (d *dictResponse) committed(h http.Header, f facts) bool {
	s := d.s
	useAs := ""
	if p := d.pattern; p > 0 {
		method := d.req.Method
		if (method == http.MethodGet || method == http.MethodHead) && f.status == http.StatusOK &&
			f.eligible && !f.encoded && !f.ranged && !f.secret && len(h["Use-As-Dictionary"]) == 0 &&
			publicResponse(d.req.Header, h) && s.registrable(h, "", d.req, &s.routes[p-1]) {
			useAs = s.useAs[p-1]
			d.remember = method == http.MethodGet
			if d.remember && f.declared > 0 && f.declared <= s.maxBody {
				d.validators = s.expect.validators(h)
				e, checked := s.expected(d.req.URL.EscapedPath(), f.declared, d.validators)
				switch {
				case checked && s.shared == nil:
					// Its path's body was found equal lately under
					// the same validators: it is not collected
					// (expected_bodies.go). A fleet counts every
					// response (dictStore.seen).
					d.remember = false
				case !s.reserve(f.declared):
					// Without room in the budget, the body is not
					// remembered.
					d.remember = false
				case e != nil:
					d.expect = e
				default:
					d.body = make([]byte, 0, f.declared)
				}
			}
		}
	}
	dictionaryHeaders(h, true, useAs, "", s.pageLinks(f.typed, f.contentType))
	return d.remember
}

// plain collects the plain body of a response to remember, reserving of
// the store's budget the capacity it grows to, and giving up past the
// largest body the store takes or when the budget has no room. It reports
// whether it wants more.
func (d *dictResponse) plain(p []byte) bool {
	if e := d.expect; e != nil {
		if expectPlain(e, d.matched, p) {
			d.matched += len(p)
			return true
		}
		// The body parts from e: it is collected from here, in a
		// buffer of the capacity reserved.
		d.body = make([]byte, d.matched, len(e.data))
		copy(d.body, e.data)
		d.expect, d.matched = nil, 0
	}
	if need := len(d.body) + len(p); need > cap(d.body) && !d.grow(need) {
		d.stopCapture()
		return false
	}
	d.body = append(d.body, p...) // within the capacity reserved
	return true
}

// grow gives body room for need bytes, doubling its capacity (at least
// captureChunk, at most the largest body remembered) and reserving what
// the capacity grows by, or exactly need when the budget has no room for
// more. It reports false, changing nothing, when need bytes do not fit.
func (d *dictResponse) grow(need int) bool {
	s, old := d.s, cap(d.body)
	if int64(need) > s.maxBody {
		return false
	}
	c := int(min(int64(max(need, 2*old, captureChunk)), s.maxBody))
	if !s.reserve(int64(c - old)) {
		if c = need; !s.reserve(int64(c - old)) {
			return false
		}
	}
	body := make([]byte, len(d.body), c)
	copy(body, d.body)
	d.body = body
	return true
}

// stopCapture drops the body collected and gives its reservation back.
func (d *dictResponse) stopCapture() {
	d.s.release(d.reserved())
	d.remember, d.body, d.expect, d.matched = false, nil, nil, 0
}

// reserved returns what the body collected holds of the store's budget.
func (d *dictResponse) reserved() int64 {
	if d.expect != nil {
		return int64(len(d.expect.data))
	}
	return int64(cap(d.body))
}

func (d *dictResponse) flushed() {}

// ended stores the body of a completed response that carried
// Use-As-Dictionary, unless it did not match its declared length. A whole
// body encoded from the buffer is still there; any other was collected by
// plain, or matched the dictionary expected. The reservation of the body
// collected is given back, or handed to the dictionary remembered,
// whichever way the response ended; the path then expects that
// dictionary's body.
func (d *dictResponse) ended(end responseEnd) {
	if !end.completed || !d.remember || end.lengthMismatch || end.secret {
		d.stopCapture()
		return
	}
	s, pattern, path := d.s, d.s.patterns[d.pattern-1], d.req.URL.EscapedPath()
	if e := d.expect; e != nil && (!end.wentWhole || bytes.Equal(end.whole, e.data)) {
		// Every byte was e's: no copy was made.
		if !end.wentWhole && d.matched != len(e.data) { // shorter than declared
			d.stopCapture()
			return
		}
		s.expectAt(path, s.rememberExpected(e, pattern, d.reserved(), d.req), d.validators)
		d.remember, d.expect, d.matched = false, nil, 0
		return
	}
	body, owned := d.body, true
	if end.wentWhole {
		body, owned = end.whole, false
	}
	if end.declared >= 0 && int64(len(body)) != end.declared {
		d.stopCapture()
		return
	}
	s.expectAt(path, s.rememberServed(body, pattern, owned, d.reserved(), d.req), d.validators)
	d.remember, d.body, d.expect = false, nil, nil
}

// dictLinks is the hook of a response to a path that matches no pattern,
// when there are standalone or learned dictionaries: it adds the Link to
// them on text/html, wants no body and keeps nothing. One serves every such
// response (dictStore.linkHook).
type dictLinks struct {
	links []string
	s     *dictStore // for the links to learned dictionaries
}

func (l *dictLinks) committed(h http.Header, f facts) bool {
	dictionaryHeaders(h, false, "", "", l.s.pageLinks(f.typed, f.contentType))
	return false
}

func (l *dictLinks) plain([]byte) bool { return false }
func (l *dictLinks) flushed()          {}
func (l *dictLinks) ended(responseEnd) {}

// ServeHTTP answers a GET or HEAD for a WithDictionary path, through
// the middleware like any response, with the dictionary's strong ETag and
// Use-As-Dictionary, and "public, " dictionaryCacheControl unless the
// handler in front set a Cache-Control (dictionaryHeaders); one that keeps
// a browser from registering it drops Use-As-Dictionary, counted.
func (sd *standaloneDictionary) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{sd.contentType}
	// Bytes learned from responses, or chosen by the operator, are no
	// page: a browser must not sniff them into one (a learned dictionary
	// holds text of HTML responses).
	h["X-Content-Type-Options"] = []string{"nosniff"}
	h["Etag"] = []string{sd.etag}
	// The same bytes for every client, chosen by the operator or learned
	// from public responses only: a shared cache may keep them, and a
	// browser that sends a cookie still stores them.
	useAs := sd.useAs
	if !sd.s.registrable(h, "public, "+dictionaryCacheControl, r, sd.route) {
		// The handler in front set caching headers no browser keeps a
		// dictionary under: it goes out as bytes, counted.
		useAs = ""
	}
	dictionaryHeaders(h, false, useAs, "public, "+dictionaryCacheControl, nil)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(sd.d.data))
}

// standaloneFor returns the handler of the WithDictionary dictionary at the
// request's path, or nil. Only GET and HEAD are answered.
func (s *dictStore) standaloneFor(r *http.Request) http.Handler {
	if s == nil || len(s.standalone) == 0 && len(s.learned) == 0 || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nil
	}
	if sd := s.standalone[r.URL.Path]; sd != nil {
		return sd
	}
	return s.learnedServer(r.Context(), r.URL.Path)
}

// --- options ----------------------------------------------------------------

// standaloneConfig is one WithDictionary.
type standaloneConfig struct {
	path, match string
	data        []byte
}

// WithDictionaryMatch turns on Compression Dictionary Transport (RFC 9842)
// for the paths matching patterns. Each pattern is a path starting with "/"
// in which "*" matches any run of characters, "/" included, such as
// "/static/app.*.js" or "/api/*"; the other special characters of
// URLPattern ( "(){}:\?+#" ) are errors.
//
// A public GET 200 response to a matching path, of a type
// [WithContentTypes] allows, carries Use-As-Dictionary and is remembered
// (see [WithDictionaryStoreSize]); a private one (Cache-Control private or
// no-store, Set-Cookie, Vary: *, or credentials without Cache-Control:
// public) is neither remembered nor sent as a delta against a remembered
// dictionary. A later request naming that body in Available-Dictionary and
// [DCZ] or [DCB] in Accept-Encoding gets a delta, from the same origin or,
// in CORS mode, one the response's Access-Control-Allow-Origin allows;
// never from another site. Details: docs/reference.md ("Dictionaries").
//
// Calls add up: two calls match the patterns of both (a pattern an earlier
// call gave counts once); within one call a pattern listed twice is an
// error.
//
// Do not use it for responses that mix secrets with input an attacker can
// choose: like any compression of such responses, a delta's size can leak
// the secret.
func WithDictionaryMatch(patterns ...string) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithDictionaryMatch(%s)", quoteList(patterns))
		list, err := canonicalList(call, "pattern", patterns, func(p string) (string, error) {
			return parseMatchPattern(call, p)
		})
		if err != nil {
			return err
		}
		for _, p := range list {
			if !slices.Contains(c.dictMatch, p) {
				c.dictMatch = append(c.dictMatch, p)
			}
		}
		return nil
	}
}

// WithDictionaryStoreSize sets the byte budget of the dictionaries
// remembered from responses (see [WithDictionaryMatch]); the least recently
// used go first when it is exceeded, and a body larger than a quarter of it
// is not remembered. The default is 64 MiB; n must be
// positive. Dictionaries of [WithDictionary], and the state built for them,
// do not count.
//
// The budget counts all the store holds for a remembered dictionary, the
// dcb tables built for it included (charged before they are built; when
// they do not fit, the client gets dcz or no delta); docs/internals.md
// ("The dictionary store") says what else is held beyond it.
func WithDictionaryStoreSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("squeeze: WithDictionaryStoreSize(%d): size must be positive", n)
		}
		c.dictStoreSize = n
		return nil
	}
}

// WithDictionary registers a standalone dictionary, such as one trained on
// API responses with klauspost/compress's dictionary builder. squeeze
// answers GET and HEAD for path itself, with data, a strong ETag, a
// Cache-Control keeping it a day and Use-As-Dictionary: match="<match>";
// every text/html response squeeze handles carries
// Link: <path>; rel="compression-dictionary", so that a browser fetches it
// when idle. Responses to paths matching match are then sent as deltas
// against data to clients holding it, as with [WithDictionaryMatch].
//
// path must start with "/" and hold no character a URL path cannot hold
// unescaped; match is a pattern as in WithDictionaryMatch. Empty data and a
// path registered twice are errors. data is copied.
func WithDictionary(path, match string, data []byte) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithDictionary(%q, %q, %d bytes)", path, match, len(data))
		if len(data) == 0 {
			return fmt.Errorf("squeeze: %s: the dictionary is empty", call)
		}
		if err := checkDictionaryPath(path); err != nil {
			return fmt.Errorf("squeeze: %s: path %w", call, err)
		}
		if _, err := parseMatchPattern(call, match); err != nil {
			return err
		}
		for _, sd := range c.standalone {
			if sd.path == path {
				return fmt.Errorf("squeeze: %s: path %q has a dictionary already", call, path)
			}
		}
		c.standalone = append(c.standalone, standaloneConfig{path: path, match: match, data: bytes.Clone(data)})
		return nil
	}
}

// checkDictionaryPath checks a WithDictionary path: an absolute path with
// no character that would need escaping in a URL or a Link field.
func checkDictionaryPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must start with /")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`<>"\?#`, c) >= 0 {
			return fmt.Errorf("has %q, which a URL path cannot hold unescaped", c)
		}
	}
	return nil
}
