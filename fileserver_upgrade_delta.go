package squeeze

import (
	"context"
	"sync"
	"time"
)

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
	if d == nil {
		best = BestLevel(k.coding)
	}
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
	if public && !rejected && v.claim(context.Background()) == claimLost {
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
