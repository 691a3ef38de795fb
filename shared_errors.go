package squeeze

import (
	"context"
	"errors"
	"log"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds what squeeze says of a SharedStore's failures: each
// error is given a kind (sharedErrorKind), counted with it (the observer's
// SharedStoreEvent carries the kind and the error), and logged with its
// cause once per kind and minute (sharedErrorLog), so that an operator
// reads why the fleet stopped sharing without a line per request.

// Errors a [SharedStore] wraps so that squeeze tells their kind: a store's
// own errors (a protocol's, a client's) are otherwise of kind
// [SharedErrorOther]. Deadlines and refused connections are told from the
// standard library's errors ([context.DeadlineExceeded], a [net.Error]
// whose Timeout is true, [syscall.ECONNREFUSED]).
// github.com/squeezehttp/squeeze/redisstore wraps them.
var (
	// ErrSharedTooLarge is wrapped by an error of a store that refused a
	// value or a reply for its size: the server is full and evicts
	// nothing (Redis's OOM), or a reply declared more than the client
	// takes.
	ErrSharedTooLarge = errors.New("squeeze: shared store: too large")
	// ErrSharedBadValue is wrapped by an error of a store that answered
	// with something that is not a value: a malformed reply, or a key
	// holding another type.
	ErrSharedBadValue = errors.New("squeeze: shared store: not a value")
)

// SharedErrorKind is the kind of failure of a call to the store of
// [WithSharedStore], as a [SharedStoreEvent] whose Shared is
// [SharedError] reports it.
type SharedErrorKind uint8

const (
	// SharedErrorNone is the kind of an Event that reports no error.
	SharedErrorNone SharedErrorKind = iota
	// SharedErrorTimeout: the call reached its deadline
	// ([WithSharedStoreTimeout]): the store is slow, overloaded or
	// unreachable.
	SharedErrorTimeout
	// SharedErrorRefused: the store refused the connection: it is down,
	// or the address is wrong.
	SharedErrorRefused
	// SharedErrorTooLarge: the store refused a value or a reply for its
	// size ([ErrSharedTooLarge]).
	SharedErrorTooLarge
	// SharedErrorBadValue: the store answered with something that is not
	// a value ([ErrSharedBadValue]).
	SharedErrorBadValue
	// SharedErrorOther: any other failure; the Event's Err says which.
	SharedErrorOther
	sharedErrorKindCount
)

var sharedErrorKindNames = [sharedErrorKindCount]string{"none", "timeout", "refused", "too_large", "bad_value", "other"}

// String returns the kind's name in snake case: "timeout", "refused",
// "too_large", "bad_value", "other" or "none".
func (k SharedErrorKind) String() string {
	if k >= sharedErrorKindCount {
		return "SharedErrorKind(" + strconv.Itoa(int(k)) + ")"
	}
	return sharedErrorKindNames[k]
}

// sharedErrorKind returns the kind of err, a store's error.
func sharedErrorKind(err error) SharedErrorKind {
	var ne net.Error
	switch {
	case err == nil:
		return SharedErrorNone
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return SharedErrorTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return SharedErrorRefused
	case errors.Is(err, ErrSharedTooLarge):
		return SharedErrorTooLarge
	case errors.Is(err, ErrSharedBadValue):
		return SharedErrorBadValue
	}
	return SharedErrorOther
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
func (l *sharedErrorLog) due(kind SharedErrorKind, now time.Time) bool {
	last := &l.last[kind]
	prev := last.Load()
	if prev != 0 && now.UnixNano()-prev < int64(sharedErrorLogEvery) {
		return false
	}
	return last.CompareAndSwap(prev, now.UnixNano())
}

// failed logs err, the failure of op (get, set, claim) on key, if its kind
// is due.
func (l *sharedErrorLog) failed(kind SharedErrorKind, op, key string, err error) {
	if l.due(kind, time.Now()) {
		l.logf("squeeze: shared store: %s %q failed (%s): %v; more %s failures in the next minute are counted, not logged",
			op, key, kind, err, kind)
	}
}

// fail accounts for a call (op on key) that failed with err after
// elapsed: the breaker counts it, the observer receives it with its kind,
// and the log says it once per kind and minute.
func (s *shared) fail(op, key string, err error, elapsed time.Duration) {
	s.breaker.failure()
	kind := sharedErrorKind(err)
	s.errLog.failed(kind, op, key, err)
	if s.observe != nil {
		s.observe(Event{Kind: SharedStoreEvent, Shared: SharedError, SharedError: kind, Err: err, Elapsed: elapsed})
	}
}
