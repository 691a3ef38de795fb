package squeeze

import (
	"context"
	"errors"
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
	s := newShared(&config{shared: store, sharedMaxValue: 1 << 10}, func(e Event) { events = append(events, e.Shared) })
	ctx := context.Background()
	if !s.claim(ctx, "k", []byte("a"), time.Minute) {
		t.Fatal("the first claim lost")
	}
	if s.claim(ctx, "k", []byte("b"), time.Minute) {
		t.Fatal("the second claim won")
	}
	if s.claim(ctx, "big", make([]byte, 2<<10), time.Minute) {
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
	// A store that fails: a claim is lost, never waited on, and the
	// breaker opens after sharedBreakerFailures.
	store.err = errors.New("down")
	for range sharedBreakerFailures {
		if s.claim(ctx, "x", []byte("a"), 0) {
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
