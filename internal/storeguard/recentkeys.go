package storeguard

import (
	"sync"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/lru"
)

// RecentKeys remembers keys for a while (the keys the store missed
// lately, those asked for while the reads in flight were full, and
// squeeze's URLs whose dictionaries clients name), within a byte budget:
// when it is full, the key noted least recently leaves first, so a flood
// of new keys costs the budget and no more. Its mutex guards a map and a
// list, never a call to the store. Its methods are safe for concurrent
// use.
type RecentKeys struct {
	lifetime time.Duration

	mu   sync.Mutex
	keys *lru.Cache[string, time.Time] // key → when it is forgotten
}

// recentKeyBytes is what each key costs beside its bytes: its record, its
// map slot and its string header.
var recentKeyBytes = int64(lru.EntrySize[string, time.Time]() + 2*unsafe.Sizeof(""))

// NewRecentKeys returns an empty memory of keys that holds each for
// lifetime within budget bytes.
func NewRecentKeys(budget int64, lifetime time.Duration) *RecentKeys {
	return &RecentKeys{lifetime: lifetime, keys: lru.New[string, time.Time](budget, nil)}
}

// Note remembers key for the memory's lifetime from now.
func (r *RecentKeys) Note(key string) {
	until := time.Now().Add(r.lifetime)
	r.mu.Lock()
	r.keys.Add(key, until, int64(len(key))+recentKeyBytes)
	r.mu.Unlock()
}

// Has reports whether key was noted less than the lifetime ago.
func (r *RecentKeys) Has(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.keys.Peek(key)
	if ok && !time.Now().Before(until) {
		r.keys.Remove(key)
		return false
	}
	return ok
}

// Forget drops key and reports whether it was remembered.
func (r *RecentKeys) Forget(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.keys.Remove(key)
	return ok && time.Now().Before(until)
}
