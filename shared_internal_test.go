package squeeze

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// Each outcome of the store guard reaches the observer as the
// SharedResult of the same meaning, with its bytes, its error and its
// error's kind: the two enumerations are kept in one order, and this
// table fails when they part.
func TestSharedGuardOutcomesReachTheObserverAsTheirSharedResult(t *testing.T) {
	for _, tc := range []struct {
		guard storeguard.Result
		want  SharedResult
	}{
		{storeguard.None, sharedNone},
		{storeguard.Hit, SharedHit},
		{storeguard.Miss, SharedMiss},
		{storeguard.Error, SharedError},
		{storeguard.Rejected, SharedRejected},
		{storeguard.Skipped, SharedSkipped},
		{storeguard.Written, SharedWritten},
		{storeguard.ClaimLost, SharedClaimLost},
		{storeguard.BreakerOpened, SharedBreakerOpened},
		{storeguard.BreakerClosed, SharedBreakerClosed},
		{storeguard.Refused, SharedRefused},
		{storeguard.Refreshed, sharedRefreshed},
		{storeguard.ResultCount, sharedResultCount},
	} {
		if SharedResult(tc.guard) != tc.want {
			t.Errorf("storeguard result %d reaches the observer as %v, want %v", tc.guard, SharedResult(tc.guard), tc.want)
		}
	}

	// Through newShared: a failed write and a write that succeeded.
	var got []SharedStoreInfo
	store := &mapStore{m: map[string][]byte{}}
	g := newShared(&config{shared: store}, func(i SharedStoreInfo) { got = append(got, i) })
	if !g.Set(context.Background(), "k", []byte("value"), 0) {
		t.Fatal("the write failed")
	}
	failing := &failStore{err: context.DeadlineExceeded}
	g = newShared(&config{shared: failing}, func(i SharedStoreInfo) { got = append(got, i) })
	if g.Set(context.Background(), "k", []byte("value"), 0) {
		t.Fatal("a write to a failing store succeeded")
	}
	if len(got) != 2 {
		t.Fatalf("observer got %d infos, want 2: %+v", len(got), got)
	}
	if w := got[0]; w.Result != SharedWritten || w.Written != 5 || w.ErrorKind != "" || w.Err != nil {
		t.Errorf("a write reached the observer as %+v", w)
	}
	if e := got[1]; e.Result != SharedError || e.ErrorKind != "timeout" || !errors.Is(e.Err, context.DeadlineExceeded) {
		t.Errorf("a timeout reached the observer as %+v", e)
	}
}

// failStore is a SharedStore whose every call fails with err.
type failStore struct{ err error }

func (s *failStore) Get(context.Context, string, int) ([]byte, bool, error) { return nil, false, s.err }
func (s *failStore) Set(context.Context, string, []byte, time.Duration) error {
	return s.err
}
func (s *failStore) Claim(context.Context, string, []byte, time.Duration) (bool, error) {
	return false, s.err
}
