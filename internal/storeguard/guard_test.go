package storeguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// claimStore is a Store of one map.
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

func TestClaimIsWonOnceAndNeverPastTheLimit(t *testing.T) {
	store := &claimStore{values: map[string][]byte{}}
	var events []Result
	s := New(store, Config{MaxValue: 1 << 10, Observe: func(e Info) { events = append(events, e.Result) }})
	ctx := context.Background()
	if s.Claim(ctx, "k", []byte("a"), time.Minute) != Won {
		t.Fatal("the first claim lost")
	}
	if s.Claim(ctx, "k", []byte("b"), time.Minute) != Lost {
		t.Fatal("the second claim won")
	}
	if s.Claim(ctx, "big", make([]byte, 2<<10), time.Minute) != Unknown {
		t.Fatal("a claim over the value limit won")
	}
	if !s.Set(ctx, "k", []byte("c"), 0) || string(store.values["k"]) != "c" {
		t.Fatal("set did not write")
	}
	want := []Result{Written, ClaimLost, Written}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
	// A store that fails: a claim is unknown, never waited on, and the
	// breaker opens after breakerFailures.
	store.err = errors.New("down")
	for range breakerFailures {
		if s.Claim(ctx, "x", []byte("a"), 0) != Unknown {
			t.Fatal("a claim won on a failing store")
		}
	}
	if s.breaker.allow() {
		t.Fatal("the breaker lets calls through after failures in a row")
	}
}

// A key whose value failed verification is not asked for again until this
// replica writes it, which puts a good value there.
func TestRejectedKeyIsAskedAgainAfterAWrite(t *testing.T) {
	store := &claimStore{values: map[string][]byte{"k": []byte("bad")}}
	var events []Result
	s := New(store, Config{Observe: func(e Info) { events = append(events, e.Result) }})
	good := func(v []byte) (any, Verdict) {
		if string(v) != "good" {
			return nil, Bad
		}
		return string(v), Taken
	}
	ctx := context.Background()
	for range 2 {
		if _, ok := s.Get(ctx, "k", 100, good); ok {
			t.Fatal("a bad value was accepted")
		}
	}
	if !s.Set(ctx, "k", []byte("good"), 0) {
		t.Fatal("set failed")
	}
	if v, ok := s.Get(ctx, "k", 100, good); !ok || v != "good" {
		t.Fatalf("after the write: %v, %v", v, ok)
	}
	want := []Result{Rejected, Skipped, Written, Hit}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
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
// firstLookups places at most, and the values being read hold at
// most inflightValues times the value limit. Fetches beyond either
// bound are not made while the others are in flight, whatever their
// number; a key asked for again may take a place beyond the first ones,
// within the budget.
func TestFetchesInFlightAreBounded(t *testing.T) {
	store := &gatedStore{claimStore: claimStore{values: map[string][]byte{}}, gate: make(chan struct{}), calls: make(chan struct{}, 100)}
	var mu sync.Mutex
	counts := map[Result]int{}
	s := New(store, Config{MaxValue: 1 << 10, Timeout: 5 * time.Second, Observe: func(e Info) {
		mu.Lock()
		counts[e.Result]++
		mu.Unlock()
	}})
	accept := func(v []byte) (any, Verdict) { return v, Taken }
	var wg sync.WaitGroup
	const n = 3 * inflightValues
	// skipped waits until want gets have been skipped.
	skipped := func(want int) {
		t.Helper()
		for give := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			got := counts[Skipped]
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
	// The first asks: firstLookups calls; the others find no place
	// and give up at once.
	for i := range n {
		wg.Go(func() { s.Lookup(context.Background(), fmt.Sprint("k", i), "", 1<<10, true, accept) })
	}
	for range firstLookups {
		<-store.calls
	}
	skipped(n - firstLookups)
	// Asked again, the keys skipped take places up to the budget.
	for i := range n {
		wg.Go(func() { s.Lookup(context.Background(), fmt.Sprint("k", i), "", 1<<10, true, accept) })
	}
	for range inflightValues - firstLookups {
		<-store.calls
	}
	skipped(2*n - firstLookups - inflightValues) // those in flight are joined
	close(store.gate)
	wg.Wait()
	if got := len(store.calls); got != 0 {
		t.Errorf("%d calls beyond the %d in flight", got, inflightValues)
	}
	if counts[Miss] != inflightValues {
		t.Errorf("results %v, want %d misses", counts, inflightValues)
	}
}

// sizedStore is a gatedStore that tells a value's length (a
// Sizer), and records the limits it is asked with.
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
func TestReadHoldsWhatTheValueIs(t *testing.T) {
	long := bytes.Repeat([]byte("v"), 3*probe)
	store := &sizedStore{gatedStore: gatedStore{claimStore: claimStore{values: map[string][]byte{"long": long}}, gate: make(chan struct{}), calls: make(chan struct{}, 100)}}
	s := New(store, Config{Timeout: 5 * time.Second})
	accept := func(v []byte) (any, Verdict) { return v, Taken }
	budget := int64(s.maxValue) * inflightValues

	var wg sync.WaitGroup
	for i := range firstLookups {
		wg.Go(func() { s.Lookup(context.Background(), fmt.Sprint("unknown", i), "", s.maxValue, true, accept) })
	}
	for range firstLookups {
		<-store.calls
	}
	// Four reads in flight of keys the store lacks leave the budget all
	// but four probes.
	if free := budget - firstLookups*probe; !s.inflight.TryAcquire(free) {
		t.Errorf("%d reads in flight leave less than %d of the %d-byte budget: each holds more than %d bytes", firstLookups, free, budget, probe)
	} else {
		s.inflight.Release(free)
	}
	close(store.gate)
	wg.Wait()

	store.limits = nil
	if v, ok := s.Lookup(context.Background(), "long", "", s.maxValue, true, accept); !ok || !bytes.Equal(v.([]byte), long) {
		t.Fatalf("the long value: %v", ok)
	}
	if want := []int{probe, len(long)}; fmt.Sprint(store.limits) != fmt.Sprint(want) {
		t.Errorf("the long value was asked with limits %v, want %v", store.limits, want)
	}
	store.limits = nil
	if _, ok := s.Lookup(context.Background(), "unknown0", "", s.maxValue, true, accept); ok || len(store.limits) != 0 {
		t.Errorf("a key missed a moment ago was asked again (limits %v)", store.limits)
	}
}
