package squeeze

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"slices"
	"time"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds the dictionaries a fleet shares through its SharedStore
// (see WithSharedStore and shared.go). The dictionary store calls in at two
// points: seen shares a dictionary it holds once it has earned its place
// (shared_admission.go), and begin fetches a dictionary a client names but
// the store lacks.
//
// A dictionary is stored under "dict:" and the unpadded base64url of its
// SHA-256, as sharedDictMagic, the length of its pattern (two bytes, big
// endian), the pattern and the bytes. Nothing read is trusted: the bytes
// must hash to the key's SHA-256, the framing must hold, and the pattern
// must be one of this Middleware's own WithDictionaryMatch patterns. Only
// a wrong framing or hash is the value's fault: a sound value on another
// pattern may be a learned route's, which shares the key, and is only not
// for this store (storeguard.NotHere). Whether the pattern matches
// the request's path is begin's check, as for any dictionary, after the
// fetch: a request on another pattern's path gets no delta, but neither
// marks the value bad nor keeps it from the requests it does match.

// sharedDictMagic starts every dictionary value: a value of another kind,
// or of a later framing, is refused.
const sharedDictMagic = "sqzd1"

// sharedDictHeader is the framing before the pattern.
const sharedDictHeader = len(sharedDictMagic) + 2

// sharedDictKey is the key of the dictionary with this hash.
func sharedDictKey(hash [32]byte) string {
	return "dict:" + base64.RawURLEncoding.EncodeToString(hash[:])
}

// sharedDictValue frames d for the store.
func sharedDictValue(d *dictionary) []byte {
	v := make([]byte, 0, sharedDictHeader+len(d.pattern)+len(d.data))
	v = append(v, sharedDictMagic...)
	v = binary.BigEndian.AppendUint16(v, uint16(len(d.pattern)))
	v = append(v, d.pattern...)
	return append(v, d.data...)
}

// parseSharedDict splits a dictionary value into its pattern and bytes. It
// reads the framing only, in constant time.
func parseSharedDict(v []byte) (pattern string, data []byte, ok bool) {
	if len(v) < sharedDictHeader || string(v[:len(sharedDictMagic)]) != sharedDictMagic {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(v[len(sharedDictMagic):]))
	rest := v[sharedDictHeader:]
	if n > len(rest) {
		return "", nil, false
	}
	return string(rest[:n]), rest[n:], true
}

// liveURLMax is the longest URL remembered as a dictionary's (its
// servedAt) and as live: the URL is held within the 1 KiB dictEntryBytes
// charges for an entry's records. liveURLBytes and liveURLFor bound the
// memory of live URLs: some thousands, each for an hour after a client
// last named one of its dictionaries.
const (
	liveURLMax   = 256
	liveURLBytes = 512 << 10
	liveURLFor   = time.Hour
)

// responseServed records that d, a dictionary held, went out in a public
// response to r with Use-As-Dictionary, and writes it to the fleet's store
// once it has earned it (seen). Beside the sends it counts, a response
// earns its body a place at once in two cases, both of a resource whose
// dictionaries clients use, which a client choosing URLs cannot make up:
//
//   - r named these very bytes in Available-Dictionary: the client holds
//     them, sent by another replica that had not written them (a body
//     asked for by hash, as dictStore.begin earns one it holds);
//   - r's URL is live: a client named a dictionary this replica sent at
//     that URL (seen, byHash). A resource that changes goes out as a new
//     body to a client that will name it next, at whichever replica the
//     balancer picks: written at its first send, it is in the store
//     before that request, where counting sends would write it only once
//     a replica had sent it twice, after the clients had moved on.
//
// A URL becomes live only by a client naming a body this replica sent at
// it, so a flood of URLs no client names (query strings that each make a
// body of their own) stays unwritten, whatever dictionary its requests
// name.
func (s *dictStore) responseServed(d *dictionary, r *http.Request) {
	if d.static || d.learned {
		return
	}
	url := r.URL.RequestURI()
	if len(url) > liveURLMax {
		url = ""
	}
	if url != "" && d.servedAt.Load() == nil {
		d.servedAt.CompareAndSwap(nil, &url)
	}
	from := fromResponse
	if named, ok := cdt.ParseAvailableDictionary(r.Header["Available-Dictionary"]); ok && named == d.hash {
		from = fromEarnedResponse
		if url != "" {
			s.live.Note(url)
		}
	} else if url != "" && s.live.Has(url) {
		from = fromEarnedResponse
	}
	s.seen(d, from)
}

// share writes d to the shared store if it is due (public, earned, not
// written yet: see storeguard.Candidate). A write the store's wrapper did not
// start (the budget, the breaker or the values in flight had no room), or
// that the store did not take, is given back, to be made when d earns
// again.
func (s *dictStore) share(d *dictionary) {
	if !d.fleet.Start() {
		return
	}
	if !s.publish(d) {
		d.fleet.Abort()
		return
	}
	d.refreshed.Store(time.Now().UnixNano())
}

// keepFresh keeps d's key fresh in the fleet's store while this replica
// uses d (seen: sent, named, sent as a delta against), at most once per
// refresh period (storeguard.DefaultRefreshEvery) for d, once the store holds
// it (written or read from there): an LRU store (Redis's allkeys-lru)
// evicts what was touched least recently, and a replica that serves d from
// its own copy never reads the key, so without this a flood of writes
// would evict the dictionary every client uses while the replicas that
// hold it serve it, and a replica started later would find it gone. A key
// found gone (evicted, expired: a SharedStoreSizer tells) is written
// again if this replica earned it (share), within the write budget.
func (s *dictStore) keepFresh(d *dictionary) {
	if !d.fleet.InStore() {
		return
	}
	now := time.Now().UnixNano()
	last := d.refreshed.Load()
	if now-last < int64(s.shared.RefreshEvery()) || !d.refreshed.CompareAndSwap(last, now) {
		return
	}
	s.shared.Refresh(sharedDictKey(d.hash), func() {
		d.fleet.Abort() // gone: due again, if earned and public
		s.share(d)
	})
}

// publish writes d to the shared store in the background, unless its value
// would be over the size limit (then it is never shared, and publish
// reports true: there is nothing to retry). Its pattern is always one of
// s.patterns, whose lengths parseMatchPattern does not bound: one that
// does not fit the framing is not shared. It reports false when the write
// was not started for now.
func (s *dictStore) publish(d *dictionary) bool {
	if len(d.pattern) > 0xffff || sharedDictHeader+len(d.pattern)+len(d.data) > s.shared.MaxValue() {
		return true
	}
	if s.shared.Blocked() {
		return false
	}
	return s.shared.SetAsync(sharedDictKey(d.hash), sharedDictValue(d), 0, d.fleet.Abort)
}

// fetch returns the dictionary with this hash from the shared store, kept
// in this store (counted against its budget) once verified, or nil. The
// caller checks that its pattern matches the request's path.
func (s *dictStore) fetch(ctx context.Context, hash [32]byte) *dictionary {
	limit := int(min(s.maxBody+int64(sharedDictHeader+s.longestPattern()), int64(s.shared.MaxValue())))
	v, ok := s.shared.Lookup(ctx, sharedDictKey(hash), "dict", limit, true, func(value []byte) (any, storeguard.Verdict) {
		d, verdict := verifySharedDict(hash, value, s.patterns, s.maxBody)
		if d == nil {
			return nil, verdict
		}
		d.fleet.Taken() // the store holds it: not written back
		d.refreshed.Store(time.Now().UnixNano())
		return s.insert(d, int64(cap(value))+dictEntryBytes, 0), storeguard.Taken
	})
	if !ok {
		return nil
	}
	return v.(*dictionary)
}

// verifySharedDict is the one check of a dictionary value read from the
// store under hash, for every reader: it returns the dictionary value
// holds and storeguard.Taken if its framing holds, its pattern is one of
// patterns (the reader's own: a dictStore's WithDictionaryMatch
// patterns, a learned route's one), its bytes are not empty, at most
// maxLen long and hash to hash. It checks the value, never the request
// that asked for it. A value whose framing or hash is wrong is
// storeguard.Bad, refused whoever asks; a sound one on a pattern not in
// patterns or longer than maxLen is storeguard.NotHere, since it may be
// another reader's (a learned route's and a WithDictionaryMatch pattern's
// dictionaries share the key). The dictionary's pattern is the reader's
// own string, its data value's bytes, which its caller charges the whole
// value's capacity. The checks that cost little come first: a hostile
// value costs a hash of its bytes only when its framing and pattern would
// be used.
func verifySharedDict(hash [32]byte, value []byte, patterns []string, maxLen int64) (*dictionary, storeguard.Verdict) {
	pattern, data, ok := parseSharedDict(value)
	if !ok || len(data) == 0 {
		return nil, storeguard.Bad
	}
	i := slices.Index(patterns, pattern)
	if i < 0 || int64(len(data)) > maxLen {
		return nil, storeguard.NotHere
	}
	if sha256.Sum256(data) != hash {
		return nil, storeguard.Bad
	}
	return &dictionary{hash: hash, data: data, pattern: patterns[i]}, storeguard.Taken
}

// longestPattern returns the length of the longest WithDictionaryMatch
// pattern.
func (s *dictStore) longestPattern() int {
	n := 0
	for _, p := range s.patterns {
		n = max(n, len(p))
	}
	return n
}
