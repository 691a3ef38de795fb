package squeeze_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/squeezehttp/squeeze"
)

// Fake SharedStores for the fleet tests: one in memory that can be made to
// fail, hang, or rewrite what it returns, as a broken or hostile store
// would.

// errStoreDown is what a memStore that is down returns.
var errStoreDown = errors.New("fake store: down")

// memStore is a SharedStore in memory. The zero value is not usable: use
// newMemStore.
type memStore struct {
	mu     sync.Mutex
	values map[string][]byte

	gets, sets, claims atomic.Int64
	// down makes every call fail at once.
	down atomic.Bool
	// hang makes every call wait until its context ends (a slow store);
	// stuck makes Get wait for release whatever its context (a store that
	// breaks its contract).
	hang, stuck atomic.Bool
	release     chan struct{}
	// rewrite, if set (setRewrite, under mu: background refreshes read
	// it while a test sets it), replaces the value a Get returns, limit
	// or not (a corrupting or hostile store).
	rewrite func(key string, v []byte) []byte
	// entered, if set, receives a token as each Get starts; gate, if set,
	// holds each Get until it is closed. Set them and latency (below)
	// under mu once the store is in use.
	entered, gate chan struct{}
	// latency, if set, is how long each Get takes (within its context);
	// reading counts the Gets in flight, peak the most at once.
	latency       time.Duration
	reading, peak atomic.Int64
	// failSets is how many of the next Sets fail (a store that refuses
	// writes for a while).
	failSets atomic.Int64
}

var _ squeeze.SharedStoreSizer = (*memStore)(nil)

// setRewrite makes every later Get return rewrite(key, value) in place
// of the value held.
func (s *memStore) setRewrite(rewrite func(key string, v []byte) []byte) {
	s.mu.Lock()
	s.rewrite = rewrite
	s.mu.Unlock()
}

// setGate makes every later Get send on entered as it starts and wait
// for gate to close (either may be nil).
func (s *memStore) setGate(entered, gate chan struct{}) {
	s.mu.Lock()
	s.entered, s.gate = entered, gate
	s.mu.Unlock()
}

// setLatency makes every later Get take d (within its context).
func (s *memStore) setLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

func newMemStore() *memStore {
	return &memStore{values: map[string][]byte{}, release: make(chan struct{})}
}

// wait applies down, hang and stuck to a call with ctx.
func (s *memStore) wait(ctx context.Context, get bool) error {
	if s.down.Load() {
		return errStoreDown
	}
	if get && s.stuck.Load() {
		<-s.release
		return errStoreDown
	}
	if s.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *memStore) Get(ctx context.Context, key string, limit int) ([]byte, bool, error) {
	v, size, ok, err := s.GetOrSize(ctx, key, limit)
	return v, ok && (v != nil || size <= limit), err
}

// GetOrSize is Get, telling a value's length when it is over limit. It is
// what Get calls, so a Get and a GetOrSize count the same.
func (s *memStore) GetOrSize(ctx context.Context, key string, limit int) ([]byte, int, bool, error) {
	s.gets.Add(1)
	s.mu.Lock()
	entered, gate, latency := s.entered, s.gate, s.latency
	s.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	if latency > 0 {
		n := s.reading.Add(1)
		defer s.reading.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return nil, 0, false, ctx.Err()
		}
	}
	if err := s.wait(ctx, true); err != nil {
		return nil, 0, false, err
	}
	s.mu.Lock()
	v, ok := s.values[key]
	rewrite := s.rewrite
	s.mu.Unlock()
	if rewrite != nil && ok {
		v = rewrite(key, append([]byte(nil), v...))
		return v, len(v), true, nil
	}
	if !ok {
		return nil, 0, false, nil
	}
	if len(v) > limit {
		return nil, len(v), true, nil
	}
	return append(make([]byte, 0, len(v)), v...), len(v), true, nil
}

func (s *memStore) Set(ctx context.Context, key string, value []byte, _ time.Duration) error {
	s.sets.Add(1)
	if err := s.wait(ctx, false); err != nil {
		return err
	}
	if s.failSets.Add(-1) >= 0 {
		return errStoreDown
	}
	s.failSets.Store(max(s.failSets.Load(), 0))
	s.mu.Lock()
	s.values[key] = append([]byte(nil), value...)
	s.mu.Unlock()
	return nil
}

func (s *memStore) Claim(ctx context.Context, key string, value []byte, _ time.Duration) (bool, error) {
	s.claims.Add(1)
	if err := s.wait(ctx, false); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[key]; ok {
		return false, nil
	}
	s.values[key] = append([]byte(nil), value...)
	return true, nil
}

// keys returns the keys the store holds.
func (s *memStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.values {
		keys = append(keys, k)
	}
	return keys
}

// value returns the value under key.
func (s *memStore) value(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key]
}
