package squeeze

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds the file server's best-level upgrades: one goroutine at a
// time re-encodes a stored representation at its coding's best level (or a
// fallback the budget has room for), against its dictionary for a delta,
// taking the fleet's encoding instead when another replica made it.

// startBest encodes version meta of the file name at the best level of
// k.coding (against d for a delta) on a goroutine of its own, unless one
// is running already: then it does nothing, and a later request tries
// again. The goroutine ends with the encoding. old is the representation
// stored now, which the new encoding replaces only if it is smaller: passed
// in rather than looked up again, so a store that counts its look-ups (a
// Cache) counts only the requests'. public says the request that started
// it got a public response: only then is the encoding written to the
// fleet's store (bestEncoding).
func (s *fileServer) startBest(fsys fs.FS, name string, meta *fileMeta, k repKey, old []byte, d *dictionary, public bool) {
	select {
	case s.bestToken <- struct{}{}:
	default:
		return
	}
	s.bestRuns.Add(1)
	go func() {
		defer func() {
			<-s.bestToken
			s.bestRuns.Done()
		}()
		// The encoder is made for this encoding and dropped with it, not
		// kept for later, and what the work holds is counted against the
		// store's budget, as for encodedRep: a best-level encoder holds
		// tens of megabytes (with a delta's dictionary tables), the file is
		// read whole (a fleet's store is keyed and checked by its hash), and
		// the encoding is at most limit bytes.
		level := upgradeLevel(k.coding)
		limit := meta.size - 1
		if old != nil {
			limit = int64(len(old)) - 1 // an encoding no smaller is of no use
		}
		// The best level, or the first fallback level (as the Cache's
		// upgrades have) that the budget has room for.
		var e *fileEncoding
		for _, l := range upgradeLevels(k.coding, level) {
			if e = newFileEncoding(s.reps, upgradeEncoderMemory(k.coding, l, d)+meta.size+max(limit, 0), limit); e != nil {
				level = l
				break
			}
		}
		if e == nil {
			return // a later request tries again
		}
		plain, err := fs.ReadFile(fsys, name)
		if err != nil || sha256.Sum256(plain) != meta.hash {
			e.release()
			return // changed or gone: the next request sees the new version
		}
		data, wait, err := s.bestEncoding(k, plain, old, d, level, public)
		if err != nil || wait {
			e.release()
			return
		}
		if old != nil && (data == nil || len(data) >= len(old)) {
			data = old // the faster level did better: keep it
		}
		e.store(k, rep{data: data, best: true})
	}()
}

// encodeBest encodes plain, version k.plain of a file, at level (the best
// of k.coding, or a fallback), against d for a delta (dcz, dcb), with an
// encoder built for this one encoding (see newUpgradeEncoder): its caller,
// startBest, has reserved what it holds in the store's budget. It returns
// nil when the encoding is no smaller than plain.
func (s *fileServer) encodeBest(k repKey, plain []byte, d *dictionary, level int) ([]byte, error) {
	enc, err := newUpgradeEncoder(k.coding, level, d)
	if err != nil {
		s.logf("squeeze: FileServer: %s at level %d: %v", k.coding, level, err)
		return nil, err
	}
	out, err := encodeOnce(enc, plain)
	if err != nil || len(out) >= len(plain) {
		return nil, err
	}
	return out, nil
}

// bestEncoding returns the best-level encoding of plain, version k.plain
// of a file, in k.coding (against d for a delta): with a fleet's store
// ([WithSharedStore]), the one another replica made, taken from the store
// once verified against k.plain, or else made here at level (encodeBest:
// the best level, or a fallback the budget had room for) and, at the best
// level only, written to the store. wait reports that another replica
// holds the claim on the work: nothing is to be stored now, and this
// representation is not looked up in the store again for fleetRetry. old
// is the representation stored now: only a smaller one is fetched. What
// the fetch and its verification hold is reserved in the store's budget.
// Unless public (the request that started it got a public response), it
// only reads the store: no claim, no write. A file is the operator's own,
// so its encodings have earned their place in the store; the write budget
// still applies (shared_admission.go).
func (s *fileServer) bestEncoding(k repKey, plain, old []byte, d *dictionary, level int, public bool) (data []byte, wait bool, err error) {
	sh := s.m.shared
	if sh == nil {
		data, err = s.encodeBest(k, plain, d, level)
		return data, false, err
	}
	if s.fleet.waiting(k) {
		return nil, true, nil
	}
	best := upgradeLevel(k.coding)
	v := newSharedVariant(sh, k.plain, len(plain), k.coding, best, d)
	limit := len(plain) - 1
	if old != nil {
		limit = len(old) - 1
	}
	rejected := false
	if held := int64(limit) + v.verifyMemory(); limit > 0 && s.reps.reserve(held) {
		var value []byte
		value, rejected = v.take(context.Background(), limit)
		s.reps.release(held)
		if value != nil {
			return value, false, nil
		}
	}
	if public && !rejected && v.claim(context.Background()) == storeguard.Lost {
		s.fleet.wait(k)
		return nil, true, nil
	}
	if data, err = s.encodeBest(k, plain, d, level); err == nil && data != nil && level == best && public {
		v.publish(data)
	}
	return data, false, err
}

// fleetRetry is how long a file server leaves a representation whose
// upgrade another replica claimed before it looks in the store again.
const fleetRetry = 5 * time.Second

// fleetBackoffMax bounds the representations a file server holds off at
// once; past it, all are forgotten, which costs each only an early look.
const fleetBackoffMax = 1024

// fleetBackoff holds the representations whose upgrade another replica
// claimed, with when to look again.
type fleetBackoff struct {
	mu    sync.Mutex
	until map[repKey]time.Time
}

// waiting reports whether k is held off now.
func (b *fleetBackoff) waiting(k repKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[k]
	if ok && !time.Now().Before(t) {
		delete(b.until, k)
		ok = false
	}
	return ok
}

// wait holds k off for fleetRetry.
func (b *fleetBackoff) wait(k repKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil || len(b.until) >= fleetBackoffMax {
		b.until = map[repKey]time.Time{}
	}
	b.until[k] = time.Now().Add(fleetRetry)
}
