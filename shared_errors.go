package squeeze

import (
	"context"
	"errors"
	"log"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds what squeeze says of a SharedStore's failures: each
// error is given a kind (sharedErrorKind), counted with it (the observer's
// SharedStoreInfo carries the kind and the error), and logged with its
// cause once per kind and minute (sharedErrorLog), so that an operator
// reads why the fleet stopped sharing without a line per request.

// sharedErrorKind is the kind of failure of a call to the store of
// WithSharedStore: the observer's SharedStoreInfo names it
// (SharedStoreInfo.ErrorKind), Counters counts each (errors_by_kind). Deadlines
// and refused connections are told from the standard library's errors
// (context.DeadlineExceeded, a net.Error whose Timeout is true,
// syscall.ECONNREFUSED); a store tells the kinds squeeze cannot see by an
// error in its chain with a method SharedErrorKind() string that returns
// "too_large" (the store refused a value or a reply for its size: Redis
// full with noeviction, a reply over redisstore.LimitReplies' limit) or
// "bad_value" (it answered with something that is not a value: a
// malformed reply, a key of another type), as redisstore's errors do.
type sharedErrorKind uint8

const (
	sharedErrorNone sharedErrorKind = iota
	sharedErrorTimeout
	sharedErrorRefused
	sharedErrorTooLarge
	sharedErrorBadValue
	sharedErrorOther
	sharedErrorKindCount
)

var sharedErrorKindNames = [sharedErrorKindCount]string{"", "timeout", "refused", "too_large", "bad_value", "other"}

func (k sharedErrorKind) String() string { return sharedErrorKindNames[k] }

// kindNamed returns the kind named name, other for a name of none.
func kindNamed(name string) sharedErrorKind {
	for k := sharedErrorTimeout; k < sharedErrorKindCount; k++ {
		if sharedErrorKindNames[k] == name {
			return k
		}
	}
	return sharedErrorOther
}

// kindOf returns the kind of err, a store's error.
func kindOf(err error) sharedErrorKind {
	var ne net.Error
	var told interface{ SharedErrorKind() string }
	switch {
	case err == nil:
		return sharedErrorNone
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return sharedErrorTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return sharedErrorRefused
	case errors.As(err, &told):
		switch told.SharedErrorKind() {
		case "too_large":
			return sharedErrorTooLarge
		case "bad_value":
			return sharedErrorBadValue
		}
	}
	return sharedErrorOther
}

// sharedErrorLogEvery is how often, at most, a failure of each kind is
// logged.
const sharedErrorLogEvery = time.Minute

// sharedErrorLog logs a store's failures, once per kind and
// sharedErrorLogEvery: the first of each kind in a minute is logged with
// its call and cause, the others are only counted (by the observer).
type sharedErrorLog struct {
	logf func(format string, args ...any)
	// last is when each kind was last logged, in nanoseconds since the
	// epoch; 0 for never.
	last [sharedErrorKindCount]atomic.Int64
}

func newSharedErrorLog() *sharedErrorLog {
	return &sharedErrorLog{logf: log.Printf}
}

// due reports whether a failure of kind at now is to be logged, and if so
// takes the kind's turn: of calls failing at once, one logs.
func (l *sharedErrorLog) due(kind sharedErrorKind, now time.Time) bool {
	last := &l.last[kind]
	prev := last.Load()
	if prev != 0 && now.UnixNano()-prev < int64(sharedErrorLogEvery) {
		return false
	}
	return last.CompareAndSwap(prev, now.UnixNano())
}

// failed logs err, the failure of op (get, set, claim) on key, if its kind
// is due.
func (l *sharedErrorLog) failed(kind sharedErrorKind, op, key string, err error) {
	if l.due(kind, time.Now()) {
		l.logf("squeeze: shared store: %s %q failed (%s): %v; more %s failures in the next minute are counted, not logged",
			op, key, kind, err, kind)
	}
}

// fail accounts for a call (op on key) that failed with err after
// elapsed: the breaker counts it, the observer receives it with its kind,
// and the log says it once per kind and minute.
func (s *shared) fail(op, key string, err error, elapsed time.Duration) {
	if s.life.context().Err() != nil {
		s.breaker.cancel() // cut short by Close: no fault of the store's
		return
	}
	s.breaker.failure()
	kind := kindOf(err)
	s.errLog.failed(kind, op, key, err)
	if s.observe != nil {
		s.observe(SharedStoreInfo{Result: SharedError, ErrorKind: kind.String(), Err: err, Elapsed: elapsed})
	}
}
