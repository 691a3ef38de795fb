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
		kind SharedErrorKind
		at   time.Duration
		want bool
	}{
		{SharedErrorTimeout, 0, true},
		{SharedErrorTimeout, time.Second, false},
		{SharedErrorRefused, time.Second, true},
		{SharedErrorTimeout, sharedErrorLogEvery - time.Nanosecond, false},
		{SharedErrorTimeout, sharedErrorLogEvery, true},
		{SharedErrorRefused, sharedErrorLogEvery, false},
		{SharedErrorTimeout, sharedErrorLogEvery + time.Second, false},
		{SharedErrorRefused, sharedErrorLogEvery + time.Second, true},
	} {
		if got := l.due(tc.kind, t0.Add(tc.at)); got != tc.want {
			t.Errorf("%v at %v: due %v, want %v", tc.kind, tc.at, got, tc.want)
		}
	}
}
