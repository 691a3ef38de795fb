package squeeze

import (
	"testing"
	"time"
)

// A kind is logged again once a minute has passed since it last was, and
// not before.
func TestSharedErrorLogOncePerKindAndMinute(t *testing.T) {
	l := newSharedErrorLog()
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		kind sharedErrorKind
		at   time.Duration
		want bool
	}{
		{sharedErrorTimeout, 0, true},
		{sharedErrorTimeout, time.Second, false},
		{sharedErrorRefused, time.Second, true},
		{sharedErrorTimeout, sharedErrorLogEvery - time.Nanosecond, false},
		{sharedErrorTimeout, sharedErrorLogEvery, true},
		{sharedErrorRefused, sharedErrorLogEvery, false},
		{sharedErrorTimeout, sharedErrorLogEvery + time.Second, false},
		{sharedErrorRefused, sharedErrorLogEvery + time.Second, true},
	} {
		if got := l.due(tc.kind, t0.Add(tc.at)); got != tc.want {
			t.Errorf("%v at %v: due %v, want %v", tc.kind, tc.at, got, tc.want)
		}
	}
}
