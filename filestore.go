package squeeze

import (
	"sync"

	"github.com/squeezehttp/squeeze/internal/lru"
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
