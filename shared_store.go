package squeeze

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SharedStore is a key-value store that the replicas of a fleet share, such
// as Redis or Valkey through the module
// github.com/squeezehttp/squeeze/redisstore. Through it, a replica serves a
// delta against a dictionary another replica remembered, and takes a body's
// best-level encoding that another replica already made.
//
// squeeze never trusts what a SharedStore returns: a dictionary is checked
// against the SHA-256 that names it and an encoding against the hash of the
// plain body it claims to encode, so a lost, stale, corrupted or hostile
// store costs a fallback and a counter, never a wrong byte. Keys are short
// ASCII strings that squeeze builds; values are opaque bytes.
//
// Each call gets a context that ends at the per-call deadline; an
// implementation returns promptly when it ends, with the context's error or
// its own. Implementations must be safe for concurrent use.
type SharedStore interface {
	// Get returns the value stored under key and true, or false when key
	// holds none or its value is longer than limit bytes: a value over the
	// limit is not transferred at all. An error means the store could not
	// answer.
	Get(ctx context.Context, key string, limit int) (value []byte, ok bool, err error)

	// Set stores value under key for lifetime, replacing any value it held;
	// a lifetime of 0 means the store's own default.
	Set(ctx context.Context, key string, value []byte, lifetime time.Duration) error

	// Claim stores value under key for lifetime only if key holds no value,
	// and reports whether it did: one replica of the fleet wins a claim and
	// does the work the others then take from the store. A lifetime of 0
	// means the store's own default.
	Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) (bool, error)
}

// SharedStoreSizer is a [SharedStore] that can tell the length of a value
// too long for a call's limit without transferring it. squeeze reads from
// such a store in two steps: a first call with a small limit brings a short
// value whole, or tells a longer one's length; only then does squeeze set
// aside that many bytes of its in-flight budget and ask for the value. So a
// key that holds nothing, the usual answer to a request naming a hash the
// fleet never stored, holds little of the budget while it is asked, and
// reads of real values are not turned away behind it. A SharedStore without
// this method is read in one call that holds the whole size limit.
// github.com/squeezehttp/squeeze/redisstore implements it.
type SharedStoreSizer interface {
	SharedStore

	// GetOrSize returns the value stored under key, its length and true
	// when it is at most limit bytes long; a nil value, its length (more
	// than limit) and true when it is longer, without transferring it;
	// and false when key holds none. An error means the store could not
	// answer.
	GetOrSize(ctx context.Context, key string, limit int) (value []byte, size int, ok bool, err error)
}

// The defaults of SharedTimeout (25 ms) and SharedMaxValue (4 MiB), and
// the breaker's settings (5 failures in a row open it for 2 seconds), are
// storeguard's, which says why.

// maxSharedTimeout is the longest per-call timeout SharedTimeout
// takes: the wait is added to a request's latency.
const maxSharedTimeout = 10 * time.Second

// WithSharedStore shares what squeeze learns with the other replicas of a
// fleet through s, such as Redis through the module
// github.com/squeezehttp/squeeze/redisstore:
//
//   - A dictionary ([WithDictionaryMatch], or a [Middleware.FileServer]
//     file used as one) that has earned it (named by a client, or sent
//     [SharedAdmitAfter] times, in public responses) is written under its
//     SHA-256; a replica asked for a delta against one it lacks fetches and
//     verifies it (its hash, and a pattern of its own matching the path);
//     a replica using one keeps its key fresh (at most every 2 seconds).
//   - A best-level encoding a [Cache]'s or a FileServer's upgrade makes is
//     written once public (a Cache's after three hits); another replica
//     keeps it only after decoding it and checking the result's SHA-256,
//     and claims the work on a miss, so each encoding is made once per fleet.
//
// Nothing private is written. Each Middleware writes at most
// [SharedWriteBudget] a minute. Local stores stay in front: s is asked only
// on a local miss, once at a time per key, within [SharedTimeout]; writes
// never delay a response; a breaker stops asking after failures in a row,
// and values over [SharedMaxValue] are neither written nor read. A bad
// store costs a fallback to what squeeze does without it, never a wrong
// byte. The observer's SharedStore hook reports each call
// ([SharedStoreInfo]). The bounds are in docs/reference.md.
//
// opts tune the sharing. A nil s is an error.
func WithSharedStore(s SharedStore, opts ...SharedOption) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("squeeze: WithSharedStore(nil): the store is nil; leave the option out to share nothing, " +
				"or pass a store such as redisstore.MustNew(redis.NewClient(...))")
		}
		c.shared = s
		for i, opt := range opts {
			if opt == nil {
				return fmt.Errorf("squeeze: WithSharedStore: option %d of %d is nil", i+1, len(opts))
			}
			if err := opt(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// SharedOption tunes the sharing of [WithSharedStore].
type SharedOption func(*config) error

// SharedTimeout sets the deadline of each call to the store: what a
// request waits at most for the store when its own replica lacks a
// dictionary, and what a store that hangs costs one request before the
// breaker opens. The default is 25 ms; d must be positive and at most 10
// seconds.
func SharedTimeout(d time.Duration) SharedOption {
	return func(c *config) error {
		if d <= 0 || d > maxSharedTimeout {
			return fmt.Errorf("squeeze: SharedTimeout(%v): timeout must be positive and at most %v", d, maxSharedTimeout)
		}
		c.sharedTimeout = d
		return nil
	}
}

// SharedMaxValue sets the largest value, in bytes, written to or read from
// the store; a dictionary larger than this (less a few bytes of framing) is
// kept only locally. The default is 4 MiB; n must be at least 1 KiB and at
// most 512 MiB, Redis's own limit.
func SharedMaxValue(n int) SharedOption {
	return func(c *config) error {
		if n < 1<<10 || n > 512<<20 {
			return fmt.Errorf("squeeze: SharedMaxValue(%d): size must be %d to %d bytes (1 KiB to 512 MiB)", n, 1<<10, 512<<20)
		}
		c.sharedMaxValue = n
		return nil
	}
}
