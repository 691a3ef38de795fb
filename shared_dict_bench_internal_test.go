package squeeze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkSharedDictionaryFetch is what a shared hit costs a replica
// besides the store's round trip: the flight, the framing, the SHA-256 of
// the bytes and the insertion into a fresh local store.
func BenchmarkSharedDictionaryFetch(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			data := bytes.Repeat([]byte("squeeze fleet dictionary "), size/25+1)[:size]
			hash := sha256.Sum256(data)
			store := &heldStore{values: map[string][]byte{}}
			c := &config{dictMatch: []string{"/js/*"}, dictCodings: []string{DCZ}, dictStoreSize: defaultDictionaryStoreSize,
				shared: store, sharedTimeout: time.Second}
			shared := newShared(c, nil)
			store.values[sharedDictKey(hash)] = sharedDictValue(&dictionary{pattern: "/js/*", data: data})
			b.SetBytes(int64(size))
			for b.Loop() {
				s, err := newDictStore(c, 3, 5)
				if err != nil {
					b.Fatal(err)
				}
				s.shared = shared
				if s.fetch(context.Background(), hash) == nil {
					b.Fatal("no dictionary")
				}
			}
		})
	}
}

// heldStore is a SharedStore of one map that hands out the values it
// holds, not copies: the benchmark times squeeze, not the store.
type heldStore struct {
	mu     sync.Mutex
	values map[string][]byte
}

func (s *heldStore) Get(_ context.Context, key string, limit int) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok && len(v) <= limit, nil
}

func (s *heldStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = value
	return nil
}

func (s *heldStore) Claim(_ context.Context, key string, value []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[key]; ok {
		return false, nil
	}
	s.values[key] = value
	return true, nil
}
