package squeeze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// claimStore is a SharedStore of one map, for the wrapper's own tests.
type claimStore struct {
	mu     sync.Mutex
	values map[string][]byte
	err    error
}

func (s *claimStore) Get(_ context.Context, key string, limit int) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok && len(v) <= limit, s.err
}

func (s *claimStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = value
	return s.err
}

func (s *claimStore) Claim(_ context.Context, key string, value []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[key]; ok || s.err != nil {
		return false, s.err
	}
	s.values[key] = value
	return true, nil
}

func TestSharedClaimIsWonOnceAndNeverPastTheLimit(t *testing.T) {
	store := &claimStore{values: map[string][]byte{}}
	var events []SharedResult
	s := newShared(&config{shared: store, sharedMaxValue: 1 << 10}, func(e SharedStoreInfo) { events = append(events, e.Result) })
	ctx := context.Background()
	if s.claim(ctx, "k", []byte("a"), time.Minute) != claimWon {
		t.Fatal("the first claim lost")
	}
	if s.claim(ctx, "k", []byte("b"), time.Minute) != claimLost {
		t.Fatal("the second claim won")
	}
	if s.claim(ctx, "big", make([]byte, 2<<10), time.Minute) != claimUnknown {
		t.Fatal("a claim over the value limit won")
	}
	if !s.set(ctx, "k", []byte("c"), 0) || string(store.values["k"]) != "c" {
		t.Fatal("set did not write")
	}
	want := []SharedResult{SharedWritten, SharedClaimLost, SharedWritten}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
	// A store that fails: a claim is unknown, never waited on, and the
	// breaker opens after sharedBreakerFailures.
	store.err = errors.New("down")
	for range sharedBreakerFailures {
		if s.claim(ctx, "x", []byte("a"), 0) != claimUnknown {
			t.Fatal("a claim won on a failing store")
		}
	}
	if s.breaker.allow() {
		t.Fatal("the breaker lets calls through after failures in a row")
	}
}

// One probe at a time goes through an open breaker once its cooldown has
// passed.
func TestSharedBreakerLetsOneProbeThrough(t *testing.T) {
	b := breaker{report: func(SharedResult, int64, int64, time.Duration) {}, cooldown: time.Millisecond}
	for range sharedBreakerFailures {
		b.failure()
	}
	if b.allow() {
		t.Fatal("open breaker allowed a call before its cooldown")
	}
	time.Sleep(2 * time.Millisecond)
	if !b.allow() {
		t.Fatal("no probe after the cooldown")
	}
	if b.allow() {
		t.Fatal("a second call while the probe is in flight")
	}
	b.failure()
	if b.allow() {
		t.Fatal("a failed probe did not reopen the breaker")
	}
	time.Sleep(2 * time.Millisecond)
	if !b.allow() {
		t.Fatal("no probe after the second cooldown")
	}
	b.success()
	for range 2 {
		if !b.allow() {
			t.Fatal("a successful probe did not close the breaker")
		}
	}
}

// A key whose value failed verification is not asked for again until this
// replica writes it, which puts a good value there.
func TestSharedRejectedKeyIsAskedAgainAfterAWrite(t *testing.T) {
	store := &claimStore{values: map[string][]byte{"k": []byte("bad")}}
	var events []SharedResult
	s := newShared(&config{shared: store}, func(e SharedStoreInfo) { events = append(events, e.Result) })
	good := func(v []byte) (any, sharedVerdict) {
		if string(v) != "good" {
			return nil, sharedBad
		}
		return string(v), sharedTaken
	}
	ctx := context.Background()
	for range 2 {
		if _, ok := s.get(ctx, "k", 100, good); ok {
			t.Fatal("a bad value was accepted")
		}
	}
	if !s.set(ctx, "k", []byte("good"), 0) {
		t.Fatal("set failed")
	}
	if v, ok := s.get(ctx, "k", 100, good); !ok || v != "good" {
		t.Fatalf("after the write: %v, %v", v, ok)
	}
	want := []SharedResult{SharedRejected, SharedSkipped, SharedWritten, SharedHit}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
}

// BenchmarkSharedDictionaryFetch is what a shared hit costs a replica
// besides the store's round trip: the flight, the framing, the SHA-256 of
// the bytes and the insertion into a fresh local store.
func BenchmarkSharedDictionaryFetch(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			data := bytes.Repeat([]byte("squeeze fleet dictionary "), size/25+1)[:size]
			hash := sha256.Sum256(data)
			store := &claimStore{values: map[string][]byte{}}
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

// gatedStore holds every Get until gate is closed.
type gatedStore struct {
	claimStore
	gate  chan struct{}
	calls chan struct{}
}

func (s *gatedStore) Get(ctx context.Context, key string, limit int) ([]byte, bool, error) {
	s.calls <- struct{}{}
	<-s.gate
	return s.claimStore.Get(ctx, key, limit)
}

// Reads in flight are bounded twice: keys asked for the first time take
// sharedFirstLookups places at most, and the values being read hold at
// most sharedInflightValues times the value limit. Fetches beyond either
// bound are not made while the others are in flight, whatever their
// number; a key asked for again may take a place beyond the first ones,
// within the budget.
func TestSharedFetchesInFlightAreBounded(t *testing.T) {
	store := &gatedStore{claimStore: claimStore{values: map[string][]byte{}}, gate: make(chan struct{}), calls: make(chan struct{}, 100)}
	var mu sync.Mutex
	counts := map[SharedResult]int{}
	s := newShared(&config{shared: store, sharedMaxValue: 1 << 10, sharedTimeout: 5 * time.Second}, func(e SharedStoreInfo) {
		mu.Lock()
		counts[e.Result]++
		mu.Unlock()
	})
	accept := func(v []byte) (any, sharedVerdict) { return v, sharedTaken }
	var wg sync.WaitGroup
	const n = 3 * sharedInflightValues
	// skipped waits until want gets have been skipped.
	skipped := func(want int) {
		t.Helper()
		for give := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			got := counts[SharedSkipped]
			mu.Unlock()
			if got == want {
				return
			}
			if time.Now().After(give) {
				close(store.gate)
				t.Fatalf("%d of %d fetches skipped, %d calls made: the fetches in flight are not bounded", got, want, len(store.calls))
			}
		}
	}
	// The first asks: sharedFirstLookups calls; the others find no place
	// and give up at once.
	for i := range n {
		wg.Go(func() { s.lookup(context.Background(), fmt.Sprint("k", i), "", 1<<10, true, accept) })
	}
	for range sharedFirstLookups {
		<-store.calls
	}
	skipped(n - sharedFirstLookups)
	// Asked again, the keys skipped take places up to the budget.
	for i := range n {
		wg.Go(func() { s.lookup(context.Background(), fmt.Sprint("k", i), "", 1<<10, true, accept) })
	}
	for range sharedInflightValues - sharedFirstLookups {
		<-store.calls
	}
	skipped(2*n - sharedFirstLookups - sharedInflightValues) // those in flight are joined
	close(store.gate)
	wg.Wait()
	if got := len(store.calls); got != 0 {
		t.Errorf("%d calls beyond the %d in flight", got, sharedInflightValues)
	}
	if counts[SharedMiss] != sharedInflightValues {
		t.Errorf("results %v, want %d misses", counts, sharedInflightValues)
	}
}

// sizedStore is a gatedStore that tells a value's length (a
// SharedStoreSizer), and records the limits it is asked with.
type sizedStore struct {
	gatedStore
	mu     sync.Mutex
	limits []int
}

func (s *sizedStore) GetOrSize(ctx context.Context, key string, limit int) ([]byte, int, bool, error) {
	s.mu.Lock()
	s.limits = append(s.limits, limit)
	s.mu.Unlock()
	s.calls <- struct{}{}
	<-s.gate
	s.claimStore.mu.Lock()
	v, ok := s.claimStore.values[key]
	s.claimStore.mu.Unlock()
	if ok && len(v) > limit {
		return nil, len(v), true, nil
	}
	return v, len(v), ok, nil
}

// A read of a key the store lacks holds the in-flight budget for what the
// store may send before it tells the value's length, not for the whole
// limit; a long value is read in a second call holding its length; and a
// key missed is not asked again for a while.
func TestSharedReadHoldsWhatTheValueIs(t *testing.T) {
	long := bytes.Repeat([]byte("v"), 3*sharedProbe)
	store := &sizedStore{gatedStore: gatedStore{claimStore: claimStore{values: map[string][]byte{"long": long}}, gate: make(chan struct{}), calls: make(chan struct{}, 100)}}
	s := newShared(&config{shared: store, sharedTimeout: 5 * time.Second}, nil)
	accept := func(v []byte) (any, sharedVerdict) { return v, sharedTaken }
	budget := int64(s.maxValue) * sharedInflightValues

	var wg sync.WaitGroup
	for i := range sharedFirstLookups {
		wg.Go(func() { s.lookup(context.Background(), fmt.Sprint("unknown", i), "", s.maxValue, true, accept) })
	}
	for range sharedFirstLookups {
		<-store.calls
	}
	// Four reads in flight of keys the store lacks leave the budget all
	// but four probes.
	if free := budget - sharedFirstLookups*sharedProbe; !s.inflight.TryAcquire(free) {
		t.Errorf("%d reads in flight leave less than %d of the %d-byte budget: each holds more than %d bytes", sharedFirstLookups, free, budget, sharedProbe)
	} else {
		s.inflight.Release(free)
	}
	close(store.gate)
	wg.Wait()

	store.limits = nil
	if v, ok := s.lookup(context.Background(), "long", "", s.maxValue, true, accept); !ok || !bytes.Equal(v.([]byte), long) {
		t.Fatalf("the long value: %v", ok)
	}
	if want := []int{sharedProbe, len(long)}; fmt.Sprint(store.limits) != fmt.Sprint(want) {
		t.Errorf("the long value was asked with limits %v, want %v", store.limits, want)
	}
	store.limits = nil
	if _, ok := s.lookup(context.Background(), "unknown0", "", s.maxValue, true, accept); ok || len(store.limits) != 0 {
		t.Errorf("a key missed a moment ago was asked again (limits %v)", store.limits)
	}
}
