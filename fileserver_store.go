package squeeze

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/internal/lru"
	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the file server's store: where it keeps the
// representations it encodes (repStore, an interface, and lruStore, its own
// bounded store; a Middleware's Cache plugs in by implementing repStore,
// through the storeFor seam in fileserver.go) and how a representation is
// encoded into it on first use (encodedRep), everything it holds counted in
// the store's budget as it is held (fileEncoding).

// defaultFileStoreSize is the byte budget of the representations a
// [Middleware.FileServer] encodes on first use and keeps: 64 MiB. A file
// larger than a quarter of it is served from its siblings or unencoded.
const defaultFileStoreSize = 64 << 20

// repKey names one stored representation: the SHA-256 of the plain bytes,
// the coding, and for the dictionary codings the SHA-256 of the dictionary.
type repKey struct {
	plain  [32]byte
	coding string
	dict   [32]byte
}

// rep is a stored representation. data nil means the coding did not make
// the file smaller, which is worth remembering too. best is set once data
// was made at the coding's best level, or when no better is to come.
type rep struct {
	data []byte
	best bool
}

// repStore keeps representations by key. Implementations must be safe for
// concurrent use and must not modify a stored data slice.
type repStore interface {
	load(k repKey) (rep, bool)
	// store keeps r under k and reports whether it did. held is what the
	// caller reserved for the work that made r: the entry's weight takes
	// it over, and what the entry does not need, or all of it when
	// nothing is kept, goes back.
	store(k repKey, r rep, held int64) bool
	// maxEntry is the most data one entry may hold.
	maxEntry() int64
	// reserve takes n bytes of the budget for work in flight (a file
	// read and encoded, an encoder), or reports that there is no room
	// for them; release gives back what reserve took.
	reserve(n int64) bool
	release(n int64)
}

// repOverhead is what an entry is counted as beyond its bytes, on 64-bit
// platforms: the record internal/lru allocates for it (its key, its rep, its
// weight and two links: a 144-byte size class) and its slot in the map (an
// 80-byte key, an 8-byte pointer and a control byte) in a table between
// 7/16 and 7/8 full, up to 204 bytes: 348, and room for the slots a
// table keeps for deleted entries under churn, so 512. An entry with no
// data (a coding that did not make the file smaller) costs that alone.
// TestFileStoreEntryOverheadCoversItsMemory checks the sum and measures the
// heap an entry takes.
const repOverhead = 512

// lruStore is a repStore with a byte budget: the least recently used
// entries go first once it is exceeded (internal/lru).
type lruStore struct {
	mu   sync.Mutex
	reps *lru.Cache[repKey, rep]
}

func newLRUStore(budget int64) *lruStore {
	return &lruStore{reps: lru.New[repKey, rep](budget, nil)}
}

func (s *lruStore) load(k repKey) (rep, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reps.Get(k)
}

func (s *lruStore) maxEntry() int64 { return s.reps.Budget() - repOverhead }

func (s *lruStore) store(k repKey, r rep, held int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reps.Release(held)
	return s.reps.Add(k, r, int64(len(r.data))+repOverhead)
}

func (s *lruStore) reserve(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reps.Reserve(n)
}

func (s *lruStore) release(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reps.Release(n)
}

// encodedRep returns the file f, of version fr.meta, encoded as o offers, from
// the store or encoded now, or nil when the coding does not make it
// smaller. Concurrent requests for one representation share one encoding.
// A representation kept not yet at its best level is encoded again at it
// in the background (encodeBest) when no such encoding runs; one the store
// did not keep is not.
func (fr *fileRequest) encodedRep(f fs.File, o *offer) ([]byte, error) {
	s := fr.s
	k := repKey{plain: fr.meta.hash, coding: o.coding}
	if o.dict != nil {
		k.dict = o.dict.hash
	}
	if r, ok := s.reps.load(k); ok {
		fr.ev.Cached = true
		if !r.best {
			s.startBest(fr.fsys, fr.name, fr.meta, k, r.data, o.dict, fr.public)
		}
		return r.data, nil
	}
	v, err, _ := s.encoding.Do(string(k.plain[:])+k.coding+"\x00"+string(k.dict[:]), func() (any, error) {
		// What the encoding holds is counted against the store's budget
		// first (fileEncoding).
		e := newFileEncoding(s.reps, fileEncoderMemory(o, s.m.dicts), fr.meta.size-1)
		if e == nil {
			return nil, errNoRoom
		}
		var t0 time.Time
		if s.m.observe != nil {
			t0 = time.Now()
		}
		enc, err := o.encoders.Get(io.Discard)
		if err != nil {
			e.release()
			return nil, err
		}
		data, err := e.encode(enc, f, fr.meta.hash)
		o.encoders.Put(enc)
		if !t0.IsZero() {
			fr.ev.Elapsed = time.Since(t0)
		}
		if err != nil {
			e.release()
			return nil, err
		}
		// A coding whose best level is the one it used stays; deltas and
		// the others are encoded at the best level.
		best := o.dict == nil && reachedBest(o.coding, o.encoders.Level())
		if e.store(k, rep{data: data, best: best || data == nil}) && !best && data != nil {
			s.startBest(fr.fsys, fr.name, fr.meta, k, data, o.dict, fr.public)
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// errNoRoom is encodedRep's answer when its store's budget has no room for
// the encoding's work.
var errNoRoom = errors.New("squeeze: FileServer: no room in the store's budget to encode")

// encodeChunk is the buffer a file goes through to its encoder.
const encodeChunk = 32 << 10

// fileEncoding is one encoding of a file by the file server, with what it
// holds of its store's budget: its encoder's memory and the buffer the
// file goes through, reserved before it starts, and its encoding, claimed
// a chunk at a time as it grows, as a [Cache]'s fill claims room as its
// copy grows. The chunks are never copied as they grow, so nothing is
// left behind for the collector that the budget does not count; the
// entry's exact copy is claimed too. When the budget has no room, the
// encoding stops and the file goes out as it is.
type fileEncoding struct {
	reps repStore
	// held is what the encoding holds of the budget.
	held int64
	// out is the encoding so far, in chunks of fillChunk bytes; n its
	// length.
	out [][]byte
	n   int64
	// limit is the longest encoding of use: one shorter than the file, or
	// than the representation it is to replace.
	limit  int64
	noRoom bool
}

// newFileEncoding reserves what an encoding with an encoder holding
// encoder bytes holds before it writes, or returns nil when the store has
// no room for it.
func newFileEncoding(reps repStore, encoder, limit int64) *fileEncoding {
	held := encoder + encodeChunk
	if !reps.reserve(held) {
		return nil
	}
	return &fileEncoding{reps: reps, held: held, limit: limit}
}

// Write appends p to the encoding, claiming a chunk of the budget at a
// time: errNoGain past the limit, errNoRoom when the budget has no room.
func (e *fileEncoding) Write(p []byte) (int, error) {
	if e.n+int64(len(p)) > e.limit {
		return 0, errNoGain
	}
	written := len(p)
	for len(p) > 0 {
		last := len(e.out) - 1
		if last < 0 || len(e.out[last]) == cap(e.out[last]) {
			if !e.reps.reserve(fillChunk) {
				e.noRoom = true
				return written - len(p), errNoRoom
			}
			e.held += fillChunk
			e.out = append(e.out, make([]byte, 0, fillChunk))
			last++
		}
		c := e.out[last]
		k := min(len(p), cap(c)-len(c))
		e.out[last] = append(c, p[:k]...)
		p = p[k:]
		e.n += int64(k)
	}
	return written, nil
}

// encode encodes what f yields with enc, streaming it through a buffer of
// encodeChunk bytes, and returns the encoding, or nil when it would not be
// shorter than the limit. The file must hash to hash: one that changed
// while it was read is an error. errNoRoom: the budget had no room for the
// encoding as it grew.
func (e *fileEncoding) encode(enc writers.Encoder, f io.Reader, hash [32]byte) ([]byte, error) {
	enc.Reset(e)
	defer enc.Reset(io.Discard)
	h := sha256.New()
	buf := make([]byte, encodeChunk)
	gain := true
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if gain {
				if _, werr := enc.Write(buf[:n]); werr != nil {
					gain = false // past the limit, or out of budget
				}
			}
		}
		if e.noRoom {
			return nil, errNoRoom
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if [32]byte(h.Sum(nil)) != hash {
		return nil, errors.New("file changed while read")
	}
	if gain && enc.Close() != nil {
		gain = false
	}
	switch {
	case e.noRoom:
		return nil, errNoRoom
	case !gain:
		e.out = nil
		return nil, nil
	}
	// The entry keeps an exact copy, claimed too.
	if !e.reps.reserve(e.n) {
		return nil, errNoRoom
	}
	e.held += e.n
	data := make([]byte, 0, e.n)
	for _, c := range e.out {
		data = append(data, c...)
	}
	e.out = nil
	return data, nil
}

// store keeps r under k in the store, the entry's weight taking over what
// the encoding held, and reports whether it did.
func (e *fileEncoding) store(k repKey, r rep) bool {
	held := e.held
	e.held = 0
	return e.reps.store(k, r, held)
}

// release gives back what the encoding held, keeping nothing.
func (e *fileEncoding) release() {
	e.reps.release(e.held)
	e.held, e.out = 0, nil
}

// fileReps is a Cache as the store of a file server's representations
// (a repStore): a Middleware with a Cache keeps what its FileServer
// encodes there, under the same budget and eviction as its responses. An
// entry is keyed by the SHA-256 of the plain bytes in the key's file field,
// which no response's key sets, so it never meets a response's; its level
// is the coding's best, so the cache's own upgrades leave it to the file
// server's.
type fileReps struct{ c *cacheCore }

func (f fileReps) key(k repKey) cacheKey {
	ck := cacheKey{coding: k.coding, file: string(k.plain[:])}
	if k.dict != ([32]byte{}) {
		ck.dictionary = string(k.dict[:])
	}
	return ck
}

func (f fileReps) load(k repKey) (rep, bool) {
	e, ok := f.c.store.GetIfPresent(f.key(k))
	if !ok {
		f.c.misses.Add(1)
		return rep{}, false
	}
	f.c.hits.Add(1)
	return rep{data: e.body, best: e.final}, true
}

// maxEntry is the most data an entry may hold within the cache's limit on
// one entry, beyond the weight of its key and bookkeeping.
func (f fileReps) maxEntry() int64 {
	ck := f.key(repKey{coding: Zstd, dict: [32]byte{1}})
	return f.c.entryMax - newEntry(&ck, nil, nil, 0).weight
}

// store keeps r, its weight taking over the held bytes that the work
// claimed as add does for a response's entry: it claims the difference or
// gives back the excess, and gives all back if r is not kept.
func (f fileReps) store(k repKey, r rep, held int64) bool {
	ck := f.key(k)
	e := newEntry(&ck, r.data, nil, upgradeLevel(k.coding))
	e.final = r.best
	if e.weight > f.c.entryMax {
		f.c.storesSkipped.Add(1)
		f.c.bytes.Add(-held)
		return false
	}
	if more := e.weight - held; more > 0 {
		if !f.c.reserve(more) {
			f.c.bytes.Add(-held)
			return false
		}
	} else {
		f.c.bytes.Add(more) // the excess goes back
	}
	if _, added := f.c.store.Set(ck, e); added {
		f.c.entries.Add(1)
		f.c.stores.Add(1) // Stores counts entries added, not replaced
	}
	return true
}

// reserve claims n bytes of the cache's budget for a file server's work in
// flight, as a fill or an upgrade does: it fails, evicting nothing, when
// the cache has no room.
func (f fileReps) reserve(n int64) bool { return f.c.claim(n) }

func (f fileReps) release(n int64) { f.c.bytes.Add(-n) }
