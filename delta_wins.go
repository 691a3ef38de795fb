package squeeze

import (
	"hash/maphash"
	"sync/atomic"
)

// deltaWins remembers, for one dictionary, the last few bodies within the
// buffer whose delta came out smaller than the coding it replaces, so that
// sending such a body again costs the delta alone. A delta never goes out
// larger than that coding (sendWhole), which only encoding both shows;
// but the same body, dictionary, codings and levels give the same lengths
// every time, so once the delta has won it wins again, and encoding the
// body a second time, only to drop it, is waste: on a 1.7 KB script in
// Caddy, a fifth of what a delta cost (BENCHMARKS.md, Caddy).
//
// Each slot holds a seeded maphash of what decides the contest (deltaKey);
// a collision, one in 2^64, sends a delta that may be a few bytes larger
// than the other coding, never a wrong byte. The slots are fixed: a route
// with many bodies against one dictionary (a learned one) costs a hash of
// each body, and keeps what it had.
type deltaWins struct {
	slots [8]atomic.Uint64 // by a key's top three bits
}

// deltaKey returns the key of the contest between body as delta, a
// dictionary's offer, and as fb, the client's coding without it.
func deltaKey(seed maphash.Seed, body []byte, delta, fb *offer) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	_, _ = h.Write(body)
	_, _ = h.WriteString(delta.coding)
	_ = h.WriteByte(byte(delta.encoders.Level()))
	_, _ = h.WriteString(fb.coding)
	_ = h.WriteByte(byte(fb.encoders.Level()))
	return h.Sum64() | 1 // never the empty slot's 0
}

// won reports whether the delta won the contest of key k before.
func (w *deltaWins) won(k uint64) bool { return w.slots[k>>61].Load() == k }

// note records that the delta won the contest of key k.
func (w *deltaWins) note(k uint64) { w.slots[k>>61].Store(k) }
