package storeguard

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds what a Guard says of a store's failures: each error is
// given a kind (ErrorKind), reported with it (Info's Kind and Err), and
// logged with its cause once per kind and minute (errorLog), so that an
// operator reads why the fleet stopped sharing without a line per
// request.

// ErrorKind is the kind of failure of a call to the store. Deadlines and
// refused connections are told from the standard library's errors
// (context.DeadlineExceeded, a net.Error whose Timeout is true,
// syscall.ECONNREFUSED); a store tells the kinds a Guard cannot see by an
// error in its chain with a method SharedErrorKind() string that returns
// "too_large" (the store refused a value or a reply for its size: Redis
// full with noeviction, a reply over redisstore.LimitReplies' limit) or
// "bad_value" (it answered with something that is not a value: a
// malformed reply, a key of another type), as redisstore's errors do.
type ErrorKind uint8

// The kinds of ErrorKind, named by String.
const (
	ErrorNone ErrorKind = iota
	ErrorTimeout
	ErrorRefused
	ErrorTooLarge
	ErrorBadValue
	ErrorOther
	ErrorKindCount
)

var errorKindNames = [ErrorKindCount]string{"", "timeout", "refused", "too_large", "bad_value", "other"}

// String returns the kind's name in snake case ("timeout", ...), "" for
// ErrorNone.
func (k ErrorKind) String() string { return errorKindNames[k] }

// KindNamed returns the kind named name, ErrorOther for a name of none.
func KindNamed(name string) ErrorKind {
	for k := ErrorTimeout; k < ErrorKindCount; k++ {
		if errorKindNames[k] == name {
			return k
		}
	}
	return ErrorOther
}

// KindOf returns the kind of err, a store's error.
func KindOf(err error) ErrorKind {
	var ne net.Error
	var told interface{ SharedErrorKind() string }
	switch {
	case err == nil:
		return ErrorNone
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return ErrorTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrorRefused
	case errors.As(err, &told):
		switch told.SharedErrorKind() {
		case "too_large":
			return ErrorTooLarge
		case "bad_value":
			return ErrorBadValue
		}
	}
	return ErrorOther
}

// errorLogEvery is how often, at most, a failure of each kind is logged.
const errorLogEvery = time.Minute

// errorLog logs a store's failures, once per kind and errorLogEvery: the
// first of each kind in a minute is logged with its call and cause, the
// others are only counted (by the observer).
type errorLog struct {
	logf func(format string, args ...any)
	// last is when each kind was last logged, in nanoseconds since the
	// epoch; 0 for never.
	last [ErrorKindCount]atomic.Int64
}

// due reports whether a failure of kind at now is to be logged, and if so
// takes the kind's turn: of calls failing at once, one logs.
func (l *errorLog) due(kind ErrorKind, now time.Time) bool {
	last := &l.last[kind]
	prev := last.Load()
	if prev != 0 && now.UnixNano()-prev < int64(errorLogEvery) {
		return false
	}
	return last.CompareAndSwap(prev, now.UnixNano())
}

// failed logs err, the failure of op (get, set, claim) on key, if its kind
// is due.
func (l *errorLog) failed(kind ErrorKind, op, key string, err error) {
	if l.due(kind, time.Now()) {
		l.logf("squeeze: shared store: %s %q failed (%s): %v; more %s failures in the next minute are counted, not logged",
			op, key, kind, err, kind)
	}
}

// fail accounts for a call (op on key) that failed with err after
// elapsed: the breaker counts it, the observer receives it with its kind,
// and the log says it once per kind and minute.
func (g *Guard) fail(op, key string, err error, elapsed time.Duration) {
	g.breaker.failure()
	kind := KindOf(err)
	g.errLog.failed(kind, op, key, err)
	if g.observe != nil {
		g.observe(Info{Result: Error, Kind: kind, Err: err, Elapsed: elapsed})
	}
}
