package squeeze

import (
	"container/list"
	"sync"
)

// This file holds where the file server keeps the representations it
// encodes: repStore, an interface, and lruStore, its own bounded store. A
// Middleware's shared cache plugs in by implementing repStore; the file
// server asks for one through its storeFor seam (fileserver.go) and nothing
// else.

// DefaultFileStoreSize is the byte budget of the representations a
// [Middleware.FileServer] encodes on first use and keeps: 64 MiB. A file
// larger than a quarter of it is served from its siblings or unencoded.
const DefaultFileStoreSize = 64 << 20

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
	// store keeps r under k and reports whether it did.
	store(k repKey, r rep) bool
	// maxEntry is the most data one entry may hold.
	maxEntry() int64
}

// repOverhead is what an entry is counted as beyond its bytes.
const repOverhead = 128

// lruStore is a repStore with a byte budget: the least recently used
// entries go first once it is exceeded.
type lruStore struct {
	budget int64

	mu   sync.Mutex
	used int64
	byK  map[repKey]*list.Element
	lru  list.List // of *lruEntry, most recently used first
}

type lruEntry struct {
	key repKey
	rep rep
}

func newLRUStore(budget int64) *lruStore {
	return &lruStore{budget: budget, byK: map[repKey]*list.Element{}}
}

func (s *lruStore) load(k repKey) (rep, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byK[k]
	if e == nil {
		return rep{}, false
	}
	s.lru.MoveToFront(e)
	return e.Value.(*lruEntry).rep, true
}

func (s *lruStore) maxEntry() int64 { return s.budget - repOverhead }

func (s *lruStore) store(k repKey, r rep) bool {
	size := int64(len(r.data)) + repOverhead
	if size > s.budget {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byK[k]; e != nil {
		old := e.Value.(*lruEntry)
		s.used += size - int64(len(old.rep.data)) - repOverhead
		old.rep = r
		s.lru.MoveToFront(e)
	} else {
		s.byK[k] = s.lru.PushFront(&lruEntry{key: k, rep: r})
		s.used += size
	}
	for s.used > s.budget {
		old := s.lru.Remove(s.lru.Back()).(*lruEntry)
		delete(s.byK, old.key)
		s.used -= int64(len(old.rep.data)) + repOverhead
	}
	return s.byK[k] != nil
}
