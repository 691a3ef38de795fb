package storeguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// A kind is logged again once a minute has passed since it last was, and
// not before.
func TestErrorLogOncePerKindAndMinute(t *testing.T) {
	l := &errorLog{}
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		kind ErrorKind
		at   time.Duration
		want bool
	}{
		{ErrorTimeout, 0, true},
		{ErrorTimeout, time.Second, false},
		{ErrorRefused, time.Second, true},
		{ErrorTimeout, errorLogEvery - time.Nanosecond, false},
		{ErrorTimeout, errorLogEvery, true},
		{ErrorRefused, errorLogEvery, false},
		{ErrorTimeout, errorLogEvery + time.Second, false},
		{ErrorRefused, errorLogEvery + time.Second, true},
	} {
		if got := l.due(tc.kind, t0.Add(tc.at)); got != tc.want {
			t.Errorf("%v at %v: due %v, want %v", tc.kind, tc.at, got, tc.want)
		}
	}
}

// kindErr is a store's error that tells its kind.
type kindErr struct{ kind string }

func (e kindErr) Error() string           { return "store: " + e.kind }
func (e kindErr) SharedErrorKind() string { return e.kind }

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// Each error has the kind its chain says, and each kind's name names it
// back.
func TestKindOfAnError(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want ErrorKind
	}{
		{nil, ErrorNone},
		{context.DeadlineExceeded, ErrorTimeout},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ErrorTimeout},
		{timeoutErr{}, ErrorTimeout},
		{refused, ErrorRefused},
		{fmt.Errorf("set: %w", kindErr{"too_large"}), ErrorTooLarge},
		{kindErr{"bad_value"}, ErrorBadValue},
		{kindErr{"something else"}, ErrorOther},
		{errors.New("down"), ErrorOther},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if tc.want != ErrorNone && KindNamed(tc.want.String()) != tc.want {
			t.Errorf("KindNamed(%q) = %v", tc.want.String(), KindNamed(tc.want.String()))
		}
	}
	if got := KindNamed("unheard of"); got != ErrorOther {
		t.Errorf("KindNamed of an unknown name = %v, want other", got)
	}
}
