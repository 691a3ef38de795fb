package squeeze

import (
	"bytes"
	"errors"
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
	var out bytes.Buffer
	enc.Reset(&out)
	if _, err := enc.Write(plain); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	if out.Len() >= len(plain) {
		return nil, nil
	}
	return bytes.Clone(out.Bytes()), nil
}
