package squeeze

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errNoRoom is encodeBest's answer when the Cache's budget has room for no
// upgrade encoder of a delta.
var errNoRoom = errors.New("no room in the cache's budget for the encoder")

// encodeBest encodes plain, version k.plain of a file, at the best level
// of k.coding: from the file server's pool of best-level encoders for a
// plain coding, or for a delta (dcz, dcb) against d with the encoder a
// Cache's upgrade uses (cache_upgrade_delta.go), built for the one
// encode. With a Cache as the store, the delta encoder's memory is
// claimed against the cache's budget first, at the best level or the
// first fallback level there is room for, as the cache's own upgrades do.
// It returns nil when the encoding is no smaller than plain.
func (s *fileServer) encodeBest(k repKey, plain []byte, d *dictionary) ([]byte, error) {
	if d == nil {
		encoders, err := s.bestEncoders(k.coding)
		if err != nil {
			s.logf("squeeze: FileServer: %s at level %d: %v", k.coding, BestLevel(k.coding), err)
			return nil, err
		}
		return encodeWith(encoders, plain)
	}
	c, _ := s.reps.(fileReps)
	level, held := upgradeLevel(k.coding), int64(0)
	if c.c != nil {
		level = -1
		for _, l := range upgradeLevels(k.coding, upgradeLevel(k.coding)) {
			if w := upgradeEncoderMemory(k.coding, l, d) + 2*int64(len(plain)); c.c.claim(w) {
				level, held = l, w
				break
			}
		}
		if level < 0 {
			c.c.upgradesDropped.Add(1)
			return nil, errNoRoom
		}
		defer c.c.bytes.Add(-held)
	}
	enc, err := newUpgradeEncoder(k.coding, level, d)
	if err != nil {
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
// once verified against k.plain, or else made here (encodeBest) and
// written to the store. wait reports that another replica holds the claim
// on the work: nothing is to be stored now, and this representation is
// not looked up in the store again for fleetRetry. old is the representation stored
// now: only a smaller one is fetched. With a Cache as the store, what the
// fetch and its verification hold is claimed against its budget.
func (s *fileServer) bestEncoding(k repKey, plain, old []byte, d *dictionary) (data []byte, wait bool, err error) {
	sh := s.m.shared
	if sh == nil {
		data, err = s.encodeBest(k, plain, d)
		return data, false, err
	}
	if s.fleet.waiting(k) {
		return nil, true, nil
	}
	level := upgradeLevel(k.coding)
	if d == nil {
		level = BestLevel(k.coding)
	}
	v := newSharedVariant(sh, k.plain, len(plain), k.coding, level, d)
	limit := len(plain) - 1
	if old != nil {
		limit = len(old) - 1
	}
	rejected := false
	if c, _ := s.reps.(fileReps); limit > 0 && (c.c == nil || c.c.claim(int64(limit)+v.verifyMemory())) {
		var value []byte
		value, rejected = v.take(context.Background(), limit)
		if c.c != nil {
			c.c.bytes.Add(-int64(limit) - v.verifyMemory())
		}
		if value != nil {
			return value, false, nil
		}
	}
	if !rejected && v.claim(context.Background()) == claimLost {
		s.fleet.wait(k)
		return nil, true, nil
	}
	if data, err = s.encodeBest(k, plain, d); err == nil && data != nil {
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
