package squeeze

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds the best-level encodings a fleet shares through its
// SharedStore (WithSharedStore): an encoding that one replica upgraded to
// the best level of its coding, plain or a delta, is written to the store,
// and the other replicas take it from there instead of encoding it again.
// Before it upgrades, a replica looks in the store; on a miss it claims the
// work, so that each variant is encoded once per fleet: a replica that
// finds the claim taken leaves the entry as it is and looks again later,
// and a claim whose owner never writes the encoding expires after
// sharedClaimLifetime, after which another replica takes the work over.
//
// A value read from the store is never trusted: it is decoded once (with
// the dictionary for a delta), within a bound on the bytes it may yield
// and on the decoder's memory, and kept only when the SHA-256 of what it
// yields equals the plain body's. One that fails costs a fallback (the
// replica encodes for itself) and a SharedRejected event, never a wrong
// byte.

// sharedClaimLifetime is how long a claim to upgrade one variant holds the
// other replicas off: longer than the slowest best-level encoding of an
// entry the cache keeps (seconds), so that a live owner finishes within
// it, and short enough that a variant whose owner died is upgraded soon
// after.
const sharedClaimLifetime = time.Minute

// sharedEncodingKey is the key of the encoding of a body with SHA-256 sum
// in coding at level, against the dictionary with SHA-256 dict for dcz and
// dcb ("" for the other codings).
func sharedEncodingKey(sum [32]byte, coding string, level int, dict string) string {
	k := "enc:" + base64.RawURLEncoding.EncodeToString(sum[:]) + ":" + coding + ":" + strconv.Itoa(level)
	if dict != "" {
		k += ":" + base64.RawURLEncoding.EncodeToString([]byte(dict))
	}
	return k
}

// sharedClaimKey is the key of the claim to make the encoding under key.
func sharedClaimKey(key string) string { return "claim:" + key }

// sharedVariant is one best-level encoding that a fleet shares: of a
// plain body of size bytes with SHA-256 sum, in coding, against dict for a
// delta.
type sharedVariant struct {
	s      *storeguard.Guard
	key    string
	sum    [32]byte
	size   int
	coding string
	dict   *dictionary
}

// newSharedVariant returns the variant of the plain body with SHA-256 sum
// and size bytes in coding at level, against d for a delta.
func newSharedVariant(s *storeguard.Guard, sum [32]byte, size int, coding string, level int, d *dictionary) *sharedVariant {
	var dict string
	if d != nil {
		dict = string(d.hash[:])
	}
	return &sharedVariant{s: s, key: sharedEncodingKey(sum, coding, level, dict), sum: sum, size: size, coding: coding, dict: d}
}

// verifyMemory is what taking a value of at most limit bytes holds beyond
// the value itself: the decoder that checks it and its buffer.
func (v *sharedVariant) verifyMemory() int64 {
	return upgradeDecoderMemory(v.coding, v.dict, int64(v.size)) + upgradeChunk
}

// take fetches the variant's encoding, of at most limit bytes, and returns
// it once it has been verified, or nil, and whether the store held a value
// that failed verification. The caller holds limit bytes and verifyMemory
// of its budget for it.
func (v *sharedVariant) take(ctx context.Context, limit int) (value []byte, rejected bool) {
	// The fetch may outlive get's wait: the flag is set from its goroutine.
	var bad atomic.Bool
	got, ok := v.s.Get(ctx, v.key, limit, func(value []byte) (any, storeguard.Verdict) {
		if !v.verify(value) {
			bad.Store(true)
			return nil, storeguard.Bad
		}
		return value, storeguard.Taken
	})
	if !ok {
		return nil, bad.Load()
	}
	return got.([]byte), false
}

// verify decodes value once and reports whether it yields exactly the
// plain body: size bytes whose SHA-256 is sum, and then the end of a
// well-formed stream in the canonical form of its coding, with nothing
// beside the encoding (shared_canonical.go). It reads at most size+1 bytes
// from the decoder, so a value that decodes to more costs no more than one
// that decodes right.
func (v *sharedVariant) verify(value []byte) bool {
	if !canonicalFraming(v.coding, value) {
		return false
	}
	var dec io.Reader
	done, err := func() {}, error(nil)
	if v.coding == Gzip {
		dec, err = newOneMember(value)
	} else {
		dec, done, err = newUpgradeDecoder(v.coding, value, v.dict)
	}
	if err != nil {
		return false
	}
	defer done()
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(dec, int64(v.size)+1), make([]byte, upgradeChunk))
	if err != nil || n != int64(v.size) {
		return false
	}
	var sum [32]byte
	return [32]byte(h.Sum(sum[:0])) == v.sum
}

// claim claims the work of making the variant's encoding for
// sharedClaimLifetime.
func (v *sharedVariant) claim(ctx context.Context) storeguard.ClaimOutcome {
	return v.s.Claim(ctx, sharedClaimKey(v.key), []byte{1}, sharedClaimLifetime)
}

// publish writes the variant's encoding, made by this replica, in the
// background.
func (v *sharedVariant) publish(encoded []byte) {
	_ = v.s.SetAsync(v.key, encoded, 0, nil)
}

// upgradeFromFleet is the fleet's side of the cache's upgrade of j's entry
// (cache.go), for an entry found by content when its Middleware has a
// store: it takes the best-level encoding from the store if another
// replica made it, verified, and stores it in place of the entry; else it
// claims the work. It returns done when nothing is left to do now: the
// entry was replaced, or another replica holds the claim (then the entry's
// hits start again, so that it is looked up again after as many hits as
// queued this job). Otherwise the caller encodes, and publishes through
// the variant returned, if any, what it made at level j.best: so does a
// replica that found a value failing verification, without a claim, which
// replaces the bad value. The value and its verification are claimed
// against the budget before the fetch. An entry that never went out in a
// public response (publicResponse) only reads the store: it is neither
// claimed nor written. Its hits earned the write (shared_admission.go):
// an entry is upgraded only after it was served upgradeAfter times.
func (c *cacheCore) upgradeFromFleet(j *upgradeJob, d *dictionary) (v *sharedVariant, done bool) {
	if j.shared == nil || j.entry.plain == nil || (d == nil && j.key.dictionary != "") {
		return nil, false
	}
	plain := j.entry.plain
	v = newSharedVariant(j.shared, sha256.Sum256(plain), len(plain), j.key.coding, j.best, d)
	limit := len(j.entry.body) - 1 // an encoding no smaller is of no use
	held := int64(limit) + v.verifyMemory()
	if limit <= 0 || !c.claim(held) {
		return v, false
	}
	value, rejected := v.take(context.Background(), limit)
	if value == nil {
		c.bytes.Add(-held)
		if !j.entry.public.Load() {
			return nil, false // not public: no claim, no write
		}
		if !rejected && v.claim(context.Background()) == storeguard.Lost {
			j.entry.hits.Store(0)
			return v, true
		}
		return v, false
	}
	e := newEntry(&j.key, value, plain, j.best)
	e.public.Store(j.entry.public.Load())
	take := min(e.weight, held)
	c.bytes.Add(take - held)
	if e.weight > take && !c.claim(e.weight-take) {
		c.bytes.Add(-take)
		c.upgradesDropped.Add(1)
		return nil, true
	}
	if !c.replace(j, e) {
		return nil, true
	}
	c.upgrades.Add(1)
	c.upgradesShared.Add(1)
	return nil, true
}
